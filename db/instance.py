"""One bot process per database: a second one would run the same clocks, resumes and bot
matches twice.

For a SQLite file the guard is an exclusive `flock` on `<database>.lock`, held for the life of
the process. The kernel releases it when the process ends in any way (kill -9 included), so a
crash never leaves a stale lock behind to clear by hand. The file also records the holder's pid
for the message.

For PostgreSQL (`PgInstanceLock`) it is a session advisory lock held by a connection of its
own: the server releases it when that connection ends in any way, for the same reason. The
connection's application name records the holder's pid and host for the message. (The store
itself is safe with several writers: its row locks, see `db.postgres`; this guard is about the
lobby's clocks and bot turns.)
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from .backend import is_postgres_url, redact
from .errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no guard (documented in the README)
    fcntl = None  # type: ignore[assignment]


class AlreadyRunning(StoreError):
    """Another process holds the database."""


class Guard(Protocol):
    """What the bot holds for its life: `await claim()`, then `release()`."""

    async def claim(self) -> None: ...

    def release(self) -> None: ...


def guard_for(target: str) -> Guard:
    """The guard of a database: a PostgreSQL URL's or a SQLite file's."""
    return PgInstanceLock(target) if is_postgres_url(target) else InstanceLock(target)


class InstanceLock:
    """`with InstanceLock(db_path):` or `acquire()`/`release()`; AlreadyRunning if taken."""

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        self.db_path = os.fspath(db_path)
        self.path = Path(self.db_path + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        if self.db_path == ":memory:" or fcntl is None or self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise AlreadyRunning(
                f"another bot process (pid {holder}) is already using {self.db_path}; "
                "stop it first, or set BOARDBOT_DB to another database"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        self._fd = fd

    async def claim(self) -> None:
        self.acquire()

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None

    def __enter__(self) -> InstanceLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


#: The advisory lock's two keys (any constants: the bot's own, in its database).
_KEYS = (0x626F6172, 0x64626F74)


class PgInstanceLock:
    """The guard of a PostgreSQL database: `await claim()`, then `release()`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: Any | None = None

    async def claim(self) -> None:
        """Take the lock (AlreadyRunning if another bot holds it); a database that cannot be
        reached raises sqlite3.OperationalError, as the store does."""
        if self._conn is not None:
            return
        from .postgres import connect

        me = f"boardbot pid {os.getpid()} on {socket.gethostname()}"[:63]
        conn = await connect(self.url, me)
        try:
            if await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", *_KEYS):
                self._conn = conn
                return
            holder = await conn.fetchval(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                " WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.objid = $2"
                " AND l.objsubid = 2 AND l.granted AND l.database = (SELECT oid FROM"
                " pg_database WHERE datname = current_database())",
                *_KEYS,
            )
        except BaseException:
            conn.terminate()
            raise
        conn.terminate()
        raise AlreadyRunning(
            f"another bot process ({holder or 'unknown'}) is already using "
            f"{redact(self.url)}; stop it first, or set BOARDBOT_DATABASE_URL to another "
            "database"
        )

    def release(self) -> None:
        if self._conn is not None:
            self._conn.terminate()  # the session ends: the server drops its locks
            self._conn = None
