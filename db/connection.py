"""The store's one SQLite connection: opening it (pragmas, migrations), closing it, and the one
way to read or write through it. The rooms of the store (`Store`, `Challenges`, `AgentMemory`)
inherit it, so they all share one lock and one connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, Self, TypeAlias, TypeVar

import aiosqlite

import faults

from .errors import StoreClosedError
from .migrations import apply_migrations, rollback_quietly
from .shards import Shards

log = logging.getLogger(__name__)

Params: TypeAlias = Sequence[Any] | Mapping[str, Any]
C = TypeVar("C", bound="Connection")


async def query(conn: aiosqlite.Connection, sql: str, params: Params = ()) -> list[sqlite3.Row]:
    return list(await conn.execute_fetchall(sql, params))


class Opener(Generic[C]):
    """What :meth:`Connection.open` returns: await it, or use it with ``async with``."""

    def __init__(
        self, cls: type[C], path: str | os.PathLike[str], clock: Callable[[], float]
    ) -> None:
        self._cls = cls
        self._path = path
        self._clock = clock
        self._opened: C | None = None

    def __await__(self) -> Generator[Any, None, C]:
        return self._cls._open(self._path, self._clock).__await__()

    async def __aenter__(self) -> C:
        self._opened = await self._cls._open(self._path, self._clock)
        return self._opened

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._opened is not None:
            await self._opened.close()


class Connection:
    """Concurrency model (why it looks like this):

    * ONE aiosqlite connection in autocommit mode (``isolation_level=None``).
      Python's implicit transactions are off, so we decide exactly where every
      transaction starts and ends.
    * Every operation takes ``self._lock``.  Two coroutines sharing a connection
      share its transaction: without the lock, coroutine B's statements would run
      inside A's half-done transaction and be committed (or rolled back) by A.
      Reads take the lock too, so they never observe another coroutine's
      uncommitted writes.
    * Every write runs in ``BEGIN IMMEDIATE ... COMMIT`` (ROLLBACK and re-raise on
      any error).  Under WAL a deferred transaction that reads and then writes
      fails immediately with "database is locked" if another process wrote in
      between, ignoring the busy timeout; IMMEDIATE takes the write lock up front
      and waits properly.  It also makes "read, check, write" atomic, which is
      what makes ``commit_step`` apply a contested click exactly once.
    * ``synchronous=FULL``: a move acknowledged to a player must survive a power
      cut.  The cost (~one fsync per transaction) is why batches (agent memory)
      are written in a single transaction.

    So each public method of the store runs one :meth:`_write` (one transaction), at most
    after a plain read; the helpers that work inside a transaction take its ``conn`` and never
    the lock (``asyncio.Lock`` is not reentrant: taking it again would hang).

    Timestamps are ``time.time()`` floats (UTC epoch seconds) everywhere.
    The store never imports the engine: moves are opaque text, blobs opaque bytes.

    ``shards``: the guilds this process owns when the bot runs as several shard processes on
    one database (`db/shards.py`); the queries that find work for the clock and for a restart
    (live matches, agent turns, expired turns and challenges, unshown ends) see only those.
    Set it right after opening; everything by default.
    """

    shards: Shards = Shards()

    def __init__(self, conn: aiosqlite.Connection, path: str, clock: Callable[[], float]) -> None:
        """Private: use :meth:`open`, which configures the connection and migrates."""
        self._conn: aiosqlite.Connection | None = conn
        self._path = path
        self._clock = clock
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(
        cls: type[C], path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> Opener[C]:
        """Open (creating parent directories and the file if needed) and migrate.

        ``clock`` supplies timestamps; tests may inject a fake one.
        """
        return Opener(cls, path, clock)

    @classmethod
    async def _open(cls: type[C], path: str | os.PathLike[str], clock: Callable[[], float]) -> C:
        spath = os.fspath(path)
        memory = spath == ":memory:" or spath.startswith("file::memory:")
        if not memory:
            Path(spath).parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(spath, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            # Pragmas first, outside any transaction (journal_mode and
            # foreign_keys are silently ignored inside one).
            await conn.execute("PRAGMA busy_timeout = 5000")
            rows = list(await conn.execute_fetchall("PRAGMA journal_mode = WAL"))
            mode = str(rows[0][0]).lower()
            if mode != "wal" and not memory:
                log.warning("SQLite refused WAL for %s (journal_mode=%s)", spath, mode)
            await conn.execute("PRAGMA synchronous = FULL")
            await conn.execute("PRAGMA foreign_keys = ON")
            rows = list(await conn.execute_fetchall("PRAGMA foreign_keys"))
            if int(rows[0][0]) != 1:
                raise RuntimeError("this SQLite build cannot enforce foreign keys")
            await apply_migrations(conn, spath)
        except BaseException:
            await conn.close()
            raise
        return cls(conn, spath, clock)

    async def close(self) -> None:
        """Wait for in-flight operations, then close.  Idempotent."""
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                await conn.execute("PRAGMA optimize")
            except sqlite3.Error:  # pragma: no cover - best effort only
                log.debug("PRAGMA optimize failed", exc_info=True)
            finally:
                await conn.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return self._conn is None

    # ------------------------------------------------------------------ reading and writing

    def _require_open(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreClosedError(f"store {self._path!r} is closed")
        return self._conn

    @asynccontextmanager
    async def _write(self, op: str) -> AsyncIterator[aiosqlite.Connection]:
        """The one way to write: lock + BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error.

        ``op`` names the operation for fault injection (``faults.py``: the points ``write``
        and ``write:<op>``).
        """
        async with self._lock:
            conn = self._require_open()
            fault = _injected(op)
            try:
                # BEGIN is inside the try: a task cancelled while BEGIN waits for another
                # process's lock would otherwise leave the transaction open once BEGIN
                # completes on the connection's thread, and every later write would fail.
                # ROLLBACK is queued on that thread after BEGIN, before the lock is released.
                if fault == _FAULTS["locked"]:
                    raise sqlite3.OperationalError(fault)  # SQLite's busy timeout ran out
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
                if fault is not None:  # a full disk or an I/O error shows when pages are written
                    raise sqlite3.OperationalError(fault)
                await conn.execute("COMMIT")
            except BaseException:
                await rollback_quietly(conn)
                raise
        faults.after("write")
        faults.after(f"write:{op}")

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            yield self._require_open()

    async def _fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        async with self._read() as conn:
            return await query(conn, sql, params)


#: What an injected store fault looks like: the errors SQLite itself raises.
_FAULTS = {
    "locked": "database is locked",
    "full": "database or disk is full",
    "error": "disk I/O error",
}


def _injected(op: str) -> str | None:
    """The SQLite error text a `BOARDBOT_FAULT` rule asks this write to fail with, if any."""
    kinds = [faults.fire("write"), faults.fire(f"write:{op}")]  # count both, always
    kind = next((k for k in kinds if k is not None), None)
    return None if kind is None else _FAULTS.get(kind, _FAULTS["error"])
