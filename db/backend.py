"""What the store needs from a database, so one store runs on SQLite or PostgreSQL.

The store's SQL is written once, with ``?`` placeholders; a backend runs it (PostgreSQL rewrites
the placeholders) and supplies the few fragments the two dialects spell differently
(:class:`Dialect`). A backend owns the transactions: :meth:`Backend.transaction` is BEGIN ...
COMMIT with ROLLBACK on any error, and every database error leaves it as a ``BackendError`` of
``db.errors``, the same class on both for the same failure (``RefusedError`` for a constraint,
``TransientError`` for busy, locked or a lost connection, ``FullError`` for a full disk): the
lobby tells those apart without knowing the driver. The store's own errors (``db.errors``) are
raised by the store, the same on both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias
from urllib.parse import unquote, urlsplit

Params: TypeAlias = Sequence[Any]

#: The URL schemes that select the PostgreSQL backend (anything else is a SQLite path).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


#: The URL parameters that hold a secret (libpq's: the password, the SSL key's passphrase).
SECRET_PARAMS = frozenset({"password", "sslpassword"})
MASK = "***"


def redact(url: str) -> str:
    """The URL with every secret as ``***`` (for messages and logs): the password of
    ``user:secret@host`` and the ``password`` and ``sslpassword`` parameters; every other
    character is kept as it was (no parse and rebuild, which would rewrite ``scheme:///db``)."""
    spans = [*_authority_secrets(url), *_parameter_secrets(url)]
    if not spans:
        return url
    out, last = [], 0
    for start, end in sorted(spans):  # overlapping spans are masked as one
        if start > last:
            out.append(url[last:start])
            out.append(MASK)
        elif not out:
            out.append(MASK)
        last = max(last, end)
    out.append(url[last:])
    return "".join(out)


def _authority_secrets(url: str) -> list[tuple[int, int]]:
    """Where the password of ``scheme://user:secret@host`` is, as the two readings have it
    (a driver may follow either): libpq's (up to the first '@' before any '/'), and RFC
    3986's (up to the last '@' before any '/', '?' or '#', as `urllib` and asyncpg read it)."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return []
    begin = scheme_end + 3
    slash = _first(url, "/", begin)
    libpq_at = url.find("@", begin, slash)
    rfc_at = url.rfind("@", begin, _first(url, "/?#", begin))
    spans = []
    for at in (libpq_at, rfc_at):
        colon = url.find(":", begin, at) if at >= 0 else -1
        if colon >= 0 and at > colon + 1:  # an empty password hides nothing
            spans.append((colon + 1, at))
    return spans


def _parameter_secrets(url: str) -> list[tuple[int, int]]:
    """Where the values of the secret parameters are: each runs to the next '&' (libpq's
    reading: a '#' in a password is part of it)."""
    query = url.find("?", url.find("://") + 1)
    if query < 0:
        return []
    spans, pos = [], query + 1
    while pos <= len(url):
        end = _first(url, "&", pos)
        key, eq, _ = url[pos:end].partition("=")
        if eq and unquote(key).lower() in SECRET_PARAMS and end > pos + len(key) + 1:
            spans.append((pos + len(key) + 1, end))
        pos = end + 1
    return spans


def _first(text: str, chars: str, start: int) -> int:
    """The index of the first of `chars` in `text` from `start`, else len(text)."""
    found = [i for c in chars if (i := text.find(c, start)) >= 0]
    return min(found, default=len(text))


def check_url(url: str) -> str | None:
    """Why ``url`` is not a usable PostgreSQL URL, or None."""
    if not url.startswith(POSTGRES_SCHEMES):
        return "expected a URL starting with postgresql://"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return "the port is not a number from 0 to 65535"
    return None


class Record(Protocol):
    """A fetched row: by position or by column name (``sqlite3.Row``, ``asyncpg.Record``)."""

    def __getitem__(self, key: int | str, /) -> Any: ...


class Tx(Protocol):
    """A connection inside a transaction (or a read): the only way the store runs SQL."""

    @property
    def dialect(self) -> Dialect: ...

    async def fetch(self, sql: str, params: Params = ()) -> list[Record]:
        """Run one statement and return its rows."""
        ...

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        """Run one statement once per parameter row."""
        ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """The SQL fragments the two databases spell differently (each takes its parameters in the
    order given in its comment)."""

    name: str
    #: A subquery of the ids in a JSON array (param: the array as JSON text).
    ids_from_json: str
    #: Appended to a SELECT that reads a row the transaction will change: a row lock where
    #: several processes write (PostgreSQL); SQLite's BEGIN IMMEDIATE already locks the file.
    lock: str
    #: The larger of two values.
    greatest: str
    #: ``col`` as JSON text with the number at key ``k`` increased by ``n`` (absent: 0), as a
    #: format string over ``col`` (params: k, k, n).
    json_add: str
    #: Whether the JSON value at a path of ``col`` equals a value given as JSON text, as a
    #: format string over ``col`` and ``path`` (param: the value as JSON text).
    json_path_equals: str
    #: How a path of keys is written in ``json_path_equals``: (before, between, after).
    json_path: tuple[str, str, str]

    def json_equals(self, col: str, keys: Sequence[str]) -> str:
        before, between, after = self.json_path
        path = before + between.join(keys) + after
        return self.json_path_equals.format(col=col, path=path)


class Backend(ABC):
    """One open database. Subclasses: ``db.sqlite.SqliteBackend``,
    ``db.postgres.PostgresBackend``."""

    dialect: Dialect
    #: Names the database in messages (a path, or a URL without its password).
    name: str

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[Tx]:
        """BEGIN ... COMMIT (ROLLBACK and re-raise on any error, cancellation included)."""

    @abstractmethod
    def reading(self) -> AbstractAsyncContextManager[Tx]:
        """Several reads that see one consistent state and no uncommitted writes."""

    @abstractmethod
    async def close(self) -> None:
        """Wait for the operations in flight, then close. Idempotent."""

    @property
    @abstractmethod
    def closed(self) -> bool: ...

    @abstractmethod
    async def schema_version(self) -> int:
        """The number of the last migration applied."""
