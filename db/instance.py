"""One bot process per database, or per shard set: a second process owning the same guilds
would run the same clocks, resumes and bot matches twice.

For a SQLite file the guard is `flock`s on files next to it, held for the life of the process.
The kernel releases them when the process ends in any way (kill -9 included), so a crash never
leaves a stale lock behind to clear by hand. The files also record the holder's pid for the
message.

* One process for everything: an exclusive lock on `<database>.lock`.
* Shard processes (`db/shards.py`): a shared lock on `<database>.lock` (so a process for
  everything cannot start beside them, nor they beside it), an exclusive lock on
  `<database>.shard-K.lock` for each shard K they run, and a shared lock on
  `<database>.count-N.lock`; a process that finds another shard count's file held refuses
  (two layouts would give one guild two owners).

For PostgreSQL (`PgInstanceLock`) the same locks are session advisory locks held by a
connection of its own: the server releases them when that connection ends in any way, for the
same reason. The connection's application name records the holder's pid and host for the
message. Those locks also end with a server restart or a cut connection, while the bot runs on:
`watch` takes them again, or stops the bot if another process got them first. (The store
itself is safe with several writers: its row locks, see `db.postgres`; this guard is about the
lobby's clocks and bot turns.)
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from .backend import is_postgres_url, redact
from .errors import StoreError
from .shards import Shards

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no guard (documented in the README)
    fcntl = None  # type: ignore[assignment]


log = logging.getLogger(__name__)

#: How often a PostgreSQL guard looks at its connection (its locks die with it).
WATCH_SECONDS = 5.0


class AlreadyRunning(StoreError):
    """Another process holds the database."""


class Guard(Protocol):
    """What the bot holds for its life: `await claim()`, then `release()`; `watch` keeps it
    held (for as long as the bot runs) and calls `lost` with one line if it cannot."""

    async def claim(self) -> None: ...

    async def watch(self, lost: Callable[[str], None], interval: float = WATCH_SECONDS) -> None: ...

    def release(self) -> None: ...


def guard_for(target: str, shards: Shards | None = None) -> Guard:
    """The guard of a database (a PostgreSQL URL's or a SQLite file's) for `shards`."""
    if is_postgres_url(target):
        return PgInstanceLock(target, shards)
    return InstanceLock(target, shards)


class InstanceLock:
    """`with InstanceLock(db_path, shards):` or `acquire()`/`release()`; AlreadyRunning if
    another process holds any part of what this one would run."""

    def __init__(self, db_path: str | os.PathLike[str], shards: Shards | None = None) -> None:
        self.db_path = os.fspath(db_path)
        self.shards = shards or Shards()
        self.path = Path(self.db_path + ".lock")
        self._fds: list[int] = []

    def acquire(self) -> None:
        if self.db_path == ":memory:" or fcntl is None or self._fds:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if self.shards.count == 1:
                self._take(self.path, fcntl.LOCK_EX, "is already using")
                return
            self._take(self.path, fcntl.LOCK_SH, "runs every guild on")
            for shard in sorted(self.shards.owned):
                self._take(self._file(f"shard-{shard}"), fcntl.LOCK_EX, f"runs shard {shard} on")
            self._take(self._file(f"count-{self.shards.count}"), fcntl.LOCK_SH, "")
            self._refuse_other_counts()
        except BaseException:
            self.release()
            raise

    def _file(self, what: str) -> Path:
        return Path(f"{self.db_path}.{what}.lock")

    def _take(self, path: Path, how: int, doing: str) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise AlreadyRunning(
                f"another bot process (pid {holder}) {doing} {self.db_path}; "
                "stop it first, or set BOARDBOT_DB to another database"
            ) from None
        if how == fcntl.LOCK_EX:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        self._fds.append(fd)

    def _refuse_other_counts(self) -> None:
        for path in self.path.parent.glob(Path(self.db_path).name + ".count-*.lock"):
            if path == self._file(f"count-{self.shards.count}"):
                continue
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                count = path.name.rsplit(".count-", 1)[1].removesuffix(".lock")
                raise AlreadyRunning(
                    f"other bot processes run {self.db_path} as {count} shards, this one as "
                    f"{self.shards.count}: give every process the same BOARDBOT_SHARD_COUNT"
                ) from None
            finally:
                os.close(fd)  # not held: a leftover file of an earlier layout

    async def claim(self) -> None:
        self.acquire()

    async def watch(self, lost: Callable[[str], None], interval: float = WATCH_SECONDS) -> None:
        """Nothing to watch: the kernel holds a file lock until the process ends."""

    def release(self) -> None:
        while self._fds:
            os.close(self._fds.pop())  # closing the descriptor drops the lock

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


#: The advisory locks' keys (any constants: the bot's own, in its database): the whole bot,
#: then (key, shard) per shard and (key, count) for the shard count.
_KEYS = (0x626F6172, 0x64626F74)
_SHARD_KEY = 0x626F7401
_COUNT_KEY = 0x626F7402


class PgInstanceLock:
    """The guard of a PostgreSQL database: `await claim()`, then `release()`. The locks are
    the SQLite guard's, as advisory locks: the whole bot's key exclusive (shard processes:
    shared), one key per shard exclusive, the shard count's key shared."""

    def __init__(self, url: str, shards: Shards | None = None) -> None:
        self.url = url
        self.shards = shards or Shards()
        self._conn: Any | None = None
        self._held = False  # claimed and not released: `watch` keeps it so

    async def claim(self) -> None:
        """Take the locks (AlreadyRunning if another bot holds one); a database that cannot
        be reached raises TransientError, as the store does."""
        if self._conn is not None:
            return
        from .postgres import connect

        me = f"boardbot pid {os.getpid()} on {socket.gethostname()}"[:63]
        conn = await connect(self.url, me)
        try:
            await self._take_all(conn)
        except BaseException:
            conn.terminate()  # the session ends: whatever it took is dropped
            raise
        self._conn = conn
        self._held = True

    async def _take_all(self, conn: Any) -> None:
        whole = self.shards.count == 1
        how = "pg_try_advisory_lock" if whole else "pg_try_advisory_lock_shared"
        if not await conn.fetchval(f"SELECT {how}($1, $2)", *_KEYS):
            doing = "is already using" if whole else "runs every guild on"
            raise AlreadyRunning(await self._message(conn, _KEYS, doing))
        if whole:
            return
        for shard in sorted(self.shards.owned):
            key = (_SHARD_KEY, shard)
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", *key):
                raise AlreadyRunning(await self._message(conn, key, f"runs shard {shard} on"))
        count = self.shards.count
        await conn.fetchval("SELECT pg_advisory_lock_shared($1, $2)", _COUNT_KEY, count)
        others = await conn.fetch(
            "SELECT DISTINCT objid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1"
            " AND objid <> $2 AND granted AND database = (SELECT oid FROM pg_database"
            " WHERE datname = current_database())",
            _COUNT_KEY,
            count,
        )
        if others:
            raise AlreadyRunning(
                f"other bot processes run {redact(self.url)} as {others[0][0]} shards, this one"
                f" as {count}: give every process the same BOARDBOT_SHARD_COUNT"
            )

    async def _message(self, conn: Any, key: tuple[int, int], doing: str) -> str:
        holder = await conn.fetchval(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.objid = $2"
            " AND l.objsubid = 2 AND l.granted AND l.database = (SELECT oid FROM"
            " pg_database WHERE datname = current_database()) LIMIT 1",
            *key,
        )
        return (
            f"another bot process ({holder or 'unknown'}) {doing} {redact(self.url)}; stop it"
            " first, or set BOARDBOT_DATABASE_URL to another database"
        )

    async def watch(self, lost: Callable[[str], None], interval: float = WATCH_SECONDS) -> None:
        """Keep the locks while the bot runs. They die with the guard's session (a server
        restart, a cut connection): then they are taken again at once, before another bot
        can start its clocks on the same guilds; if another process got them first, `lost`
        is called with one line and the watch ends (the bot must stop)."""
        while self._held:
            await asyncio.sleep(interval)
            if not self._held:
                return
            if self._conn is not None:
                try:
                    await self._conn.fetchval("SELECT 1")
                    continue
                except Exception as exc:  # the session is gone, and its locks with it
                    log.warning("the database guard's connection ended (%s): taking it again", exc)
                    self._conn.terminate()
                    self._conn = None
            try:
                await self.claim()
            except AlreadyRunning as exc:
                self._held = False
                lost(f"the database guard was lost and another process holds it now: {exc}")
                return
            except Exception as exc:  # the server is not back yet: try at the next look
                log.warning("cannot take the database guard again yet: %s", exc)
                continue
            log.warning("the database guard is held again")

    def release(self) -> None:
        self._held = False
        if self._conn is not None:
            self._conn.terminate()  # the session ends: the server drops its locks
            self._conn = None
