"""What the store needs from a database, so one store runs on SQLite or PostgreSQL.

The store's SQL is written once, with ``?`` placeholders; a backend runs it (PostgreSQL rewrites
the placeholders) and supplies the few fragments the two dialects spell differently
(:class:`Dialect`). A backend owns the transactions: :meth:`Backend.transaction` is BEGIN ...
COMMIT with ROLLBACK on any error, and every database error leaves it as one of the DB-API
exceptions of the ``sqlite3`` module (``IntegrityError`` for a constraint, ``OperationalError``
for busy, locked, full or a lost connection), because those are what the lobby already tells
apart. The store's own errors (``db.errors``) are raised by the store, the same on both.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias
from urllib.parse import urlsplit, urlunsplit

Params: TypeAlias = Sequence[Any]

#: The URL schemes that select the PostgreSQL backend (anything else is a SQLite path).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


def redact(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("@")[-1]
    netloc, query = parts.netloc, parts.query
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2***", query)  # libpq's other place for it
    return urlunsplit(parts._replace(netloc=netloc, query=query))


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
