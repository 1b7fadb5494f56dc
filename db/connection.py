"""The store's one connection: the database (a SQLite path, or a PostgreSQL URL) that every
repository of the store shares, and the one way to read or write through it. Each repository
(`db.players`, `db.matches`, ...) holds this object, so all of them go through the same
backend, its lock and its transactions.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import faults

from .backend import Backend, Dialect, Params, Record, Tx, is_postgres_url
from .errors import FullError, TransientError
from .shards import Shards

log = logging.getLogger(__name__)

__all__ = ["Connection", "Params", "Record", "Repository", "Tx", "open_backend", "query"]


async def query(conn: Tx, sql: str, params: Params = ()) -> list[Record]:
    return await conn.fetch(sql, params)


async def open_backend(target: str | os.PathLike[str]) -> Backend:
    """The backend for a SQLite path (the default) or a ``postgresql://`` URL, opened and
    migrated."""
    spath = os.fspath(target)
    if is_postgres_url(spath):
        from .postgres import PostgresBackend  # asyncpg loads only for PostgreSQL

        return await PostgresBackend.open(spath)
    from .sqlite import SqliteBackend

    return await SqliteBackend.open(spath)


class Connection:
    """Each public method of a repository runs one :meth:`write` (one transaction), at most
    after a plain read; the helpers that work inside a transaction take its ``conn`` and never
    open another (on SQLite the backend's lock is not reentrant: taking it again would hang).

    The transactions are the backend's (``db.sqlite``, ``db.postgres``: why each looks as it
    does is at its top); SQL that reads a row it will change ends with ``dialect.lock``.

    Timestamps are ``time.time()`` floats (UTC epoch seconds) everywhere, from :meth:`now`.
    The store never imports the engine: moves are opaque text, blobs opaque bytes.

    ``shards``: the guilds this process owns when the bot runs as several shard processes on
    one database (`db/shards.py`); the queries that find work for the clock and for a restart
    (live matches, agent turns, expired turns and challenges, unshown ends) see only those.
    Set it right after opening; everything by default.
    """

    def __init__(self, backend: Backend, clock: Callable[[], float]) -> None:
        self._backend = backend
        self._clock = clock
        self.dialect: Dialect = backend.dialect
        self.shards = Shards()

    @property
    def backend(self) -> Backend:
        return self._backend

    def now(self) -> float:
        """The store's clock (injected by tests)."""
        return self._clock()

    async def close(self) -> None:
        """Wait for in-flight operations, then close.  Idempotent."""
        await self._backend.close()

    @asynccontextmanager
    async def write(self, op: str) -> AsyncIterator[Tx]:
        """The one way to write: one transaction, rolled back on any error.

        ``op`` names the operation for fault injection (``faults.py``: the points ``write``
        and ``write:<op>``).
        """
        async with self._backend.transaction() as conn:
            fault = _injected(op)  # counted in the order the writes run
            if fault == "locked":
                raise TransientError(_FAULTS[fault])  # the wait for the lock ran out
            if fault == "slow":  # a slow disk or server: the write lock is held meanwhile
                await asyncio.sleep(SLOW_WRITE_SECONDS)
            yield conn
            if fault == "full":  # shows when pages are written
                raise FullError(_FAULTS[fault])
            if fault == "error":
                raise TransientError(_FAULTS[fault])
        if fault == "lost":  # committed, but the answer never came back
            raise TransientError(_FAULTS[fault])
        faults.after("write")
        faults.after(f"write:{op}")

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Tx]:
        """Several reads that see one consistent state."""
        async with self._backend.reading() as conn:
            yield conn

    async def fetchall(self, sql: str, params: Params = ()) -> list[Record]:
        """One read statement's rows."""
        async with self.read() as conn:
            return await conn.fetch(sql, params)


class Repository:
    """One concern of the store (players, matches, ...): it holds the shared
    :class:`Connection` and owns the SQL of its tables."""

    def __init__(self, db: Connection) -> None:
        self._db = db


#: What an injected store fault looks like: the errors a backend raises for the same failure
#: (``db.errors``), with SQLite's words.
_FAULTS = {
    "locked": "database is locked",
    "full": "database or disk is full",
    "error": "disk I/O error",
    # The transaction committed, then the connection failed before its answer came back (a
    # server restart, a cut network; SQLite: an I/O error after the commit).
    "lost": "connection lost after the commit",
    "slow": "",  # not an error: the write takes SLOW_WRITE_SECONDS, then commits
}
#: How long a write with the `slow` fault takes (longer than Discord's 3 s to answer).
SLOW_WRITE_SECONDS = 3.5


def _injected(op: str) -> str | None:
    """The kind of failure a `BOARDBOT_FAULT` rule asks this write for, if any (one of
    `_FAULTS`: an unknown kind is an I/O error)."""
    kinds = [faults.fire("write"), faults.fire(f"write:{op}")]  # count both, always
    kind = next((k for k in kinds if k is not None), None)
    return None if kind is None else kind if kind in _FAULTS else "error"
