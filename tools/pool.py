"""The tools' one way to run work on other processes: a pool of spawned workers, results as
they finish, and workers of their own with a pipe (the trainer's memory replicas).

Processes are spawned, never forked: a forked child would inherit numba's compiler state and
the parent's threads half-way, and a spawned one imports the engine afresh and loads its
kernels from the cache.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

T = TypeVar("T")

CONTEXT = multiprocessing.get_context("spawn")


def pool(
    workers: int,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ProcessPoolExecutor:
    """`workers` spawned processes, each running `initializer(*initargs)` first."""
    return ProcessPoolExecutor(
        workers, mp_context=CONTEXT, initializer=initializer, initargs=initargs
    )


def as_done(
    executor: ProcessPoolExecutor,
    fn: Callable[..., T],
    jobs: Iterable[tuple[Any, ...]],
    timeout: float | None = None,
) -> Iterator[T]:
    """Submit `fn(*job)` for every job and yield the results as they finish. An error, a
    `timeout` (seconds for the whole run: TimeoutError) or a consumer that stops early
    cancels the jobs not started."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pending: set[Future[T]] = {executor.submit(fn, *job) for job in jobs}
    try:
        while pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, pending = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
            if not done:
                raise TimeoutError(f"unfinished after {timeout} s")
            for future in done:
                yield future.result()
    finally:
        for future in pending:
            future.cancel()


def stop(executor: ProcessPoolExecutor) -> None:
    """Stop a pool now: jobs not started are dropped and running ones killed (a solve may have
    minutes to go)."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()


def worker(target: Callable[..., object], *args: Any) -> tuple[Connection, BaseProcess]:
    """A spawned process of its own running `target(conn, *args)`, and the parent's end of
    the pipe; it dies with the parent (daemon) and ignores SIGINT (the parent decides when it
    stops: a trainer finishes its round first)."""
    parent, child = CONTEXT.Pipe()
    proc = CONTEXT.Process(target=_worker_main, args=(target, child, *args), daemon=True)
    proc.start()
    child.close()
    return parent, proc


def _worker_main(target: Callable[..., object], conn: Connection, *args: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    target(conn, *args)
