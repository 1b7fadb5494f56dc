"""The PostgreSQL backend (``BOARDBOT_DATABASE_URL=postgresql://...``): a small asyncpg pool.

Concurrency model (why it differs from SQLite's):

* Several processes may write to one database, so no process-local lock guards it. Each
  operation takes a pooled connection and runs in its own transaction (READ COMMITTED); a
  transaction that reads a row to change it reads it with ``FOR NO KEY UPDATE``
  (``Dialect.lock``), so "read, check, write" is atomic across processes: of two clicks on one
  position the second waits for the first, then sees the new ply (``StaleMoveError``). Rating
  updates lock the players' rows in id order first, so two finishes never deadlock.
* Reads of several statements run in one read-only REPEATABLE READ transaction: one snapshot,
  as under SQLite's lock.
* A lock waited for longer than 5 s fails (``lock_timeout``), as SQLite's busy timeout does.
* Every error from the server, the driver or the network is re-raised as the store's own, as
  SQLite's are (``db.errors``, see :func:`translate`): a constraint or a value a column cannot
  take is a ``RefusedError``; a full disk a ``FullError``; busy, a lock timeout, a lost
  connection, a deadlock or a server shutting down a ``TransientError`` (the lobby retries
  those); a damaged page a ``CorruptDatabaseError``. The message is the server's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

import asyncpg

from .backend import Backend, Dialect, Params, Record, check_url, redact
from .errors import (
    BackendError,
    CorruptDatabaseError,
    FullError,
    RefusedError,
    StoreClosedError,
    TransientError,
)
from .pg_migrations import apply_pg_migrations, schema_version

DIALECT = Dialect(
    name="postgresql",
    ids_from_json="SELECT jsonb_array_elements_text(?::jsonb)::bigint",
    lock=" FOR NO KEY UPDATE",
    greatest="GREATEST",
    json_add=(
        "jsonb_set({col}::jsonb, ARRAY[?::text],"
        " to_jsonb(coalesce(({col}::jsonb -> ?::text)::numeric, 0) + ?::bigint))::text"
    ),
    json_path_equals="({col}::jsonb #> '{path}') = ?::jsonb",
    json_path=("{", ",", "}"),
)

#: Connections per process: enough for a few operations at once (each is one short
#: transaction); the server's default limit is 100.
POOL_SIZE = 4
CONNECT_SECONDS = 10.0
SERVER_SETTINGS = {"lock_timeout": "5s", "application_name": "boardbot"}


@functools.lru_cache(maxsize=512)
def placeholders(sql: str) -> str:
    """``?`` placeholders as PostgreSQL's ``$1, $2, ...`` (not inside quotes)."""
    out: list[str] = []
    n = 0
    for i, part in enumerate(re.split(r"('(?:[^']|'')*')", sql)):
        if i % 2:  # a quoted literal: as is
            out.append(part)
            continue
        pieces = part.split("?")
        for piece in pieces[:-1]:
            n += 1
            out.append(f"{piece}${n}")
        out.append(pieces[-1])
    return "".join(out)


#: SQLSTATEs of a full disk or quota: the disk (53100), a limit on temporary files (53400,
#: ``temp_file_limit``).
_FULL = ("53100", "53400")
#: SQLSTATEs of damaged data: a data page (XX001) or an index (XX002).
_CORRUPT = ("XX001", "XX002")


def translate(exc: BaseException) -> BackendError | None:
    """The store's error for an error of the server, the driver or the network (None: not a
    database error, let it through)."""
    if isinstance(exc, asyncpg.PostgresError):
        state = str(getattr(exc, "sqlstate", "") or "")
        text = f"{type(exc).__name__}: {exc}"
        if state.startswith("23"):  # integrity constraint violation
            return RefusedError(str(exc))
        if state.startswith("22"):  # data exception: a value the column cannot take
            return RefusedError(str(exc))
        if state in _FULL:
            return FullError(text)
        if state in _CORRUPT:
            return CorruptDatabaseError(text)
        # Lost connection (08), deadlock or serialisation (40), lock timeout (55P03), out of
        # memory or connections (53), shut down or cancelled (57), I/O error (58), ...
        return TransientError(text)
    # The driver's own errors (a closed connection, one caught in the middle of its loss),
    # the network's, and a timeout.
    if isinstance(
        exc, asyncpg.InterfaceError | asyncpg.InternalClientError | OSError | TimeoutError
    ):
        return TransientError(f"{type(exc).__name__}: {exc}")
    return None


@contextmanager
def translated() -> Iterator[None]:
    """Inside: every error of the server, the driver or the network leaves as the store's
    own (the cause kept)."""
    try:
        yield
    except Exception as exc:
        mapped = translate(exc)
        if mapped is None:
            raise
        raise mapped from exc


async def connect(url: str, application_name: str) -> Any:
    """One connection outside the pool (the instance guard's); errors as the store's."""
    with translated():
        try:
            return await asyncpg.connect(
                url,
                timeout=CONNECT_SECONDS,
                server_settings={**SERVER_SETTINGS, "application_name": application_name},
            )
        except ValueError as exc:  # a parameter of the URL asyncpg cannot use
            raise BackendError(f"{redact(url)}: {exc}") from None


class _PgTx:
    dialect = DIALECT

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def fetch(self, sql: str, params: Params = ()) -> list[Record]:
        return cast(list[Record], await self.conn.fetch(placeholders(sql), *params))

    async def execute(self, sql: str, params: Params = ()) -> int:
        status = await self.conn.execute(placeholders(sql), *params)
        tail = str(status).rsplit(" ", 1)[-1]  # "UPDATE 3", "INSERT 0 1", "DELETE 0"
        return int(tail) if tail.isdigit() else 0

    async def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        if rows:
            await self.conn.executemany(placeholders(sql), rows)


class PostgresBackend(Backend):
    """A PostgreSQL database (16 or later), given by URL, opened and migrated."""

    dialect = DIALECT

    def __init__(self, pool: Any, name: str) -> None:
        """Private: use :meth:`open`."""
        self._pool: Any | None = pool
        self.name = name

    @classmethod
    async def open(cls, url: str) -> PostgresBackend:
        """Connect and migrate; a server that cannot be reached, refuses the login or has no
        such database raises a ``BackendError`` with one line saying so (``TransientError``
        for a server that may come back)."""
        name = redact(url)
        problem = check_url(url)
        if problem is not None:
            raise BackendError(f"{name}: {problem}")
        with translated():
            try:
                pool = await asyncpg.create_pool(
                    url,
                    min_size=1,
                    max_size=POOL_SIZE,
                    timeout=CONNECT_SECONDS,
                    server_settings=SERVER_SETTINGS,
                )
            except ValueError as exc:  # a parameter of the URL asyncpg cannot use
                raise BackendError(f"{name}: {exc}") from None
        try:
            async with pool.acquire() as conn:
                with translated():
                    await apply_pg_migrations(conn, name)
        except BaseException:
            await pool.close()
            raise
        return cls(pool, name)

    def _require_open(self) -> Any:
        if self._pool is None:
            raise StoreClosedError(f"store {self.name!r} is closed")
        return self._pool

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_PgTx]:
        pool = self._require_open()
        with translated():
            async with pool.acquire() as conn, conn.transaction():
                yield _PgTx(conn)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[_PgTx]:
        pool = self._require_open()
        with translated():
            async with (
                pool.acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                yield _PgTx(conn)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with translated():
                await pool.close()  # waits for the connections in use to be released

    @property
    def closed(self) -> bool:
        return self._pool is None

    async def schema_version(self) -> int:
        with translated():
            async with self._require_open().acquire() as conn:
                return await schema_version(conn)
