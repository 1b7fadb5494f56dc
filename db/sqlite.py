"""The SQLite backend (the default): one aiosqlite connection to a file.

Concurrency model (why it looks like this):

* ONE aiosqlite connection in autocommit mode (``isolation_level=None``). Python's implicit
  transactions are off, so we decide exactly where every transaction starts and ends.
* Every operation takes ``self._lock``. Two coroutines sharing a connection share its
  transaction: without the lock, coroutine B's statements would run inside A's half-done
  transaction and be committed (or rolled back) by A. Reads take the lock too, so they never
  observe another coroutine's uncommitted writes.
* Every write runs in ``BEGIN IMMEDIATE ... COMMIT`` (ROLLBACK and re-raise on any error).
  Under WAL a deferred transaction that reads and then writes fails immediately with "database
  is locked" if another process wrote in between, ignoring the busy timeout; IMMEDIATE takes
  the write lock up front and waits properly. It also makes "read, check, write" atomic, which
  is what makes ``commit_step`` apply a contested click exactly once.
* ``synchronous=FULL``: a move acknowledged to a player must survive a power cut. The cost
  (~one fsync per transaction) is why batches (agent memory) are written in a single
  transaction.
* Every ``sqlite3`` error leaves this module as the store's own (``db.errors``, see
  :func:`translate`): opening, each transaction, each read and closing are its boundary.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import cast

import aiosqlite

from .backend import Backend, Dialect, Params, Record
from .errors import (
    BackendError,
    CorruptDatabaseError,
    FullError,
    RefusedError,
    StoreClosedError,
    TransientError,
)
from .migrations import apply_migrations, rollback_quietly, user_version

log = logging.getLogger(__name__)

DIALECT = Dialect(
    name="sqlite",
    ids_from_json="SELECT value FROM json_each(?)",
    lock="",
    greatest="max",
    json_add="json_set({col}, '$.' || ?, coalesce(json_extract({col}, '$.' || ?), 0) + ?)",
    json_path_equals="json_extract({col}, '{path}') = json_extract(?, '$')",
    json_path=("$.", ".", ""),
)

#: SQLite's primary result codes this module tells apart (an extended code's low byte).
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 11, 13, 26
#: Their messages (an error made by hand, as the store's fault injection does, has no code).
_CORRUPT_TEXTS = ("database disk image is malformed", "file is not a database")


def translate(exc: sqlite3.Error) -> BackendError:
    """The store's error for an error of SQLite (its message kept)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    text = str(exc)
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.DataError):
        return RefusedError(text)
    if primary == SQLITE_FULL or "database or disk is full" in text:
        return FullError(text)
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB) or text in _CORRUPT_TEXTS:
        return CorruptDatabaseError(text)
    if isinstance(exc, sqlite3.OperationalError):  # busy, locked, I/O, cannot open, ...
        return TransientError(text)
    return BackendError(text)  # a misuse of the driver: a bug


@contextmanager
def translated() -> Iterator[None]:
    """Inside: every ``sqlite3`` error leaves as the store's own (the cause kept)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc) from exc


class _SqliteTx:
    dialect = DIALECT

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def fetch(self, sql: str, params: Params = ()) -> list[Record]:
        return cast(list[Record], list(await self.conn.execute_fetchall(sql, params)))

    async def execute(self, sql: str, params: Params = ()) -> int:
        cursor = await self.conn.execute(sql, params)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        await self.conn.executemany(sql, rows)


class SqliteBackend(Backend):
    """A SQLite file (or ``:memory:``), opened with the pragmas above and migrated."""

    dialect = DIALECT

    def __init__(self, conn: aiosqlite.Connection, path: str) -> None:
        """Private: use :meth:`open`, which configures the connection and migrates."""
        self._conn: aiosqlite.Connection | None = conn
        self.name = path
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str) -> SqliteBackend:
        memory = path == ":memory:" or path.startswith("file::memory:")
        if not memory:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        with translated():
            return cls(await _connect(path, memory), path)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The aiosqlite connection itself (for tests that check pragmas)."""
        return self._require_open()

    def _require_open(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreClosedError(f"store {self.name!r} is closed")
        return self._conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_SqliteTx]:
        with translated():
            async with self._transaction() as tx:
                yield tx

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[_SqliteTx]:
        async with self._lock:
            conn = self._require_open()
            try:
                # BEGIN is inside the try: a task cancelled while BEGIN waits for another
                # process's lock would otherwise leave the transaction open once BEGIN
                # completes on the connection's thread, and every later write would fail.
                # ROLLBACK is queued on that thread after BEGIN, before the lock is released.
                await conn.execute("BEGIN IMMEDIATE")
                yield _SqliteTx(conn)
                await conn.execute("COMMIT")
            except BaseException:
                await rollback_quietly(conn)
                raise

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[_SqliteTx]:
        with translated():
            async with self._lock:
                yield _SqliteTx(self._require_open())

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                await conn.execute("PRAGMA optimize")
            except sqlite3.Error:  # pragma: no cover - best effort only
                log.debug("PRAGMA optimize failed", exc_info=True)
            finally:
                with translated():
                    await conn.close()

    @property
    def closed(self) -> bool:
        return self._conn is None

    async def schema_version(self) -> int:
        with translated():
            async with self._lock:
                return await user_version(self._require_open())


async def _connect(path: str, memory: bool) -> aiosqlite.Connection:
    """A connection with the pragmas above, the file migrated."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        # Pragmas first, outside any transaction (journal_mode and
        # foreign_keys are silently ignored inside one).
        await conn.execute("PRAGMA busy_timeout = 5000")
        rows = list(await conn.execute_fetchall("PRAGMA journal_mode = WAL"))
        mode = str(rows[0][0]).lower()
        if mode != "wal" and not memory:
            log.warning("SQLite refused WAL for %s (journal_mode=%s)", path, mode)
        await conn.execute("PRAGMA synchronous = FULL")
        await conn.execute("PRAGMA foreign_keys = ON")
        rows = list(await conn.execute_fetchall("PRAGMA foreign_keys"))
        if int(rows[0][0]) != 1:
            raise RuntimeError("this SQLite build cannot enforce foreign keys")
        await apply_migrations(conn, path)
    except BaseException:
        await conn.close()
        raise
    return conn
