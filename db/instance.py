"""One bot process per database, or per shard set: a second process owning the same guilds
would run the same clocks, resumes and bot matches twice.

The guard is `flock`s on files next to the database, held for the life of the process. The
kernel releases them when the process ends in any way (kill -9 included), so a crash never
leaves a stale lock behind to clear by hand. The files also record the holder's pid for the
message.

* One process for everything: an exclusive lock on `<database>.lock`.
* Shard processes (`db/shards.py`): a shared lock on `<database>.lock` (so a process for
  everything cannot start beside them, nor they beside it), an exclusive lock on
  `<database>.shard-K.lock` for each shard K they run, and a shared lock on
  `<database>.count-N.lock`; a process that finds another shard count's file held refuses
  (two layouts would give one guild two owners).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from .errors import StoreError
from .shards import Shards

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no guard (documented in the README)
    fcntl = None  # type: ignore[assignment]


class AlreadyRunning(StoreError):
    """Another process holds the database."""


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
