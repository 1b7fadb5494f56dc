"""One engine worker process: `python -m lobby.worker <job_fd> <reply_fd> <parent_pid> <mode>`.

`lobby.pool.EnginePool` starts it with `subprocess` (fork+exec, never a bare fork of the bot)
and speaks to it over two dedicated pipes, so anything the engine prints cannot corrupt the
protocol. Each message is a frame: an 8-byte big-endian length, then a pickle.

  parent -> worker  (fault, cap, fn, args), one job at a time; end of file means "exit"
  worker -> parent  ("ready", pid) once the engine is imported, then per job one ("ok", value)
                    or ("err", exc), after ("compiling", None) and ("compiled", seconds) around
                    each chain of kernels numba compiles during the job, and ("kernel", (name,
                    compiled)) for each of the engine's kernels compiled or loaded from
                    numba's cache

The mode is `jit` (numba compiles each kernel on its first call, or loads it from its cache;
the parent stops a job's cap while it compiles), `plain` (numba's JIT off: every kernel runs
as plain Python, slower but with nothing to compile) or `bare` (as `jit`, without importing
the engine before "ready": a pool without a warm-up). A function marked `repeatable` (an agent's
decision) is run again after a compile: the compile ate its time budget, so its answer would be
weaker than the agent's own.

The worker dies with its parent, kill -9 included, and ignores SIGINT: the parent alone decides
when it stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import struct
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from typing import IO, Any, TypeVar

_HEADER = struct.Struct(">Q")
_F = TypeVar("_F", bound=Callable[..., Any])
#: The attribute `repeatable` sets.
REPEATABLE = "repeat_after_compile"
#: Runs of a repeatable job at most (each after a compile in the one before).
_RUNS = 4
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
CRASH_STATUS = 70  # the exit status of a worker crashed on purpose (fault injection)


def send(stream: IO[bytes], data: bytes | memoryview) -> None:
    """Write one frame (blocking)."""
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def recv(stream: IO[bytes]) -> bytes:
    """Read one frame (blocking); EOFError when the other side is gone."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return data


def _die_with_parent(parent: int) -> None:
    """Exit when the parent dies, even in the middle of a long job.

    On Linux the kernel sends SIGKILL (PR_SET_PDEATHSIG; it fires when the parent *thread*
    that started us exits, which is why the pool starts workers from the event loop's thread).
    Elsewhere, or if prctl is missing, a daemon thread notices that we were reparented.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    if os.getppid() != parent:  # the parent died before prctl: nobody would signal us
        os._exit(0)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _error(exc: BaseException) -> bytes:
    """An ("err", exc) reply; an exception that cannot make the round trip becomes a
    RuntimeError with its text."""
    if not isinstance(exc, StopIteration):  # a future cannot hold a StopIteration
        exc.add_note("in the engine worker:\n" + "".join(traceback.format_exception(exc)))
        try:
            data = pickle.dumps(("err", exc), pickle.HIGHEST_PROTOCOL)
            pickle.loads(data)  # an exception with a custom __init__ may pickle, then not load
            return data
        except Exception:
            pass
    return pickle.dumps(("err", RuntimeError(f"{type(exc).__name__}: {exc}")))


def repeatable(fn: _F) -> _F:
    """Mark a job function to be run again when numba compiled during it (see above)."""
    setattr(fn, REPEATABLE, True)
    return fn


class _Compiles:
    """How many chains of kernels this process compiled (None: numba's JIT is off)."""

    count: Callable[[], int] | None = None


def _run(job: bytes) -> bytes:
    """One job's reply frame."""
    try:
        fault, cap, fn, args = pickle.loads(job)
        if fault == "crash":
            os._exit(CRASH_STATUS)
        if fault == "hang":
            time.sleep(10 * cap)
        again = getattr(fn, REPEATABLE, False) and _Compiles.count is not None
        for _ in range(_RUNS if again else 1):
            before = _Compiles.count() if _Compiles.count is not None else 0
            value: Any = fn(*args)
            if _Compiles.count is None or _Compiles.count() == before:
                break
        return pickle.dumps(("ok", value), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # the function's own failure (or its result's): the worker lives
        return _error(exc)


def _watch_compiles(replies: IO[bytes]) -> None:
    """Tell the parent when numba starts and ends compiling (only this thread runs jobs, so
    the frames never interleave with a reply)."""
    from engine.warm import CompileWatch

    def started() -> None:
        send(replies, pickle.dumps(("compiling", None)))

    def ended(seconds: float | None) -> None:  # None: kernels loaded from numba's cache
        send(replies, pickle.dumps(("compiled", seconds)))

    def kernel(name: str, compiled: bool) -> None:  # the warm-up's progress, kernel by kernel
        send(replies, pickle.dumps(("kernel", (name, compiled))))

    watch = CompileWatch(started, ended, kernel).install()
    _Compiles.count = lambda: watch.count


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job_fd, reply_fd, parent, mode = int(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    if mode == "plain":  # before numba is imported: it reads the switch once
        os.environ["NUMBA_DISABLE_JIT"] = "1"
        # uint64 arithmetic wraps around on purpose (compiled, it wraps silently)
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
    _die_with_parent(parent)
    # The parent closed our pipe or is gone: closing `replies` flushes what it could not send,
    # which fails again, so the whole block is guarded (a traceback would reach its terminal).
    with (
        contextlib.suppress(EOFError, BrokenPipeError),  # outermost: it guards the closes too
        os.fdopen(job_fd, "rb") as jobs,
        os.fdopen(reply_fd, "wb") as replies,
    ):
        if mode != "bare":  # every agent's module (and numba), before "ready"
            import engine.warm  # noqa: F401

        if mode != "plain":
            _watch_compiles(replies)
        send(replies, pickle.dumps(("ready", os.getpid())))
        while True:
            send(replies, _run(recv(jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
