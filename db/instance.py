"""One bot process per database: a second one would run the same clocks, resumes and bot
matches twice.

The guard is an exclusive `flock` on `<database>.lock`, held for the life of the process. The
kernel releases it when the process ends in any way (kill -9 included), so a crash never leaves
a stale lock behind to clear by hand. The file also records the holder's pid for the message.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from .errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no guard (documented in the README)
    fcntl = None  # type: ignore[assignment]


class AlreadyRunning(StoreError):
    """Another process holds the database."""


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
