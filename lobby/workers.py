"""Jobs and worker processes as the engine pool sees them: a job, the queue of jobs waiting for
a worker, and one worker process with its pipes and the two blocking halves of its protocol (a
sender thread writes a job, a reader thread reads each reply and then the exit). The pool
(`lobby.pool`) decides what runs where and when; the process itself is `lobby.worker`.

Blocking pipe I/O and (un)pickling stay off the event loop: a reader thread per worker and a
small sender pool hand results back with `call_soon_threadsafe`."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lobby.worker import recv, send

if TYPE_CHECKING:  # (the bot starts a worker before it imports the engine: `start_early`)
    from engine import warm as warming

_ROOT = Path(__file__).resolve().parent.parent  # the source checkout: workers import from it


@dataclass(eq=False)
class Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    cap: float
    label: str
    future: asyncio.Future[Any]
    fault: str | None = None
    urgent: bool = False  # a person waits for it: it jumps the queue of the others
    plain: bool = False  # for the plain Python worker
    step: str | None = None  # the warm-up step of the agent it runs (decisions)
    warm: warming.WarmStep | None = None  # a warm-up step itself (not counted as a job)
    for_people: bool = False  # a load on the worker kept for people: not a background job
    queued: float = field(default_factory=time.monotonic)
    asked: float | None = None  # when the person it is for began to wait (before `queued`)
    taken: float | None = None  # given a worker that first loads its agent's kernels
    waited: bool = False  # its wait was taken from its time budget (`after_wait`): only once
    started: float | None = None


@dataclass(frozen=True, slots=True)
class JobTiming:
    """How long one finished job waited in the queue for a worker, then for that worker to
    load its agent's kernels (compiled by another worker), and then ran."""

    label: str
    urgent: bool
    wait: float
    load: float
    run: float

    @classmethod
    def of(cls, job: Job) -> JobTiming:
        """A job that ended now."""
        now = time.monotonic()
        started = job.started if job.started is not None else now
        taken = job.taken if job.taken is not None else started
        return cls(job.label, job.urgent, taken - job.queued, started - taken, now - started)


#: Timings kept (the newest), for reports.
MAX_TIMINGS = 10_000


def fail(job: Job, exc: BaseException) -> None:
    """A job fails with `exc` (unless its caller gave up already)."""
    if not job.future.done():
        job.future.set_exception(exc)


class JobQueue:
    """The jobs waiting for a worker: urgent ones (a person waits for them) in front of the
    rest, each in order; answers asked of the plain Python worker in a line of their own."""

    def __init__(self) -> None:
        self._jobs: deque[Job] = deque()
        self._plain: deque[Job] = deque()

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs)

    def put(self, job: Job) -> None:
        if job.plain:
            self._plain.append(job)
        elif job.urgent:  # after the other urgent jobs, before the rest
            at = sum(1 for queued in self._jobs if queued.urgent)
            self._jobs.insert(at, job)
        else:
            self._jobs.append(job)

    def put_back(self, job: Job) -> None:
        """A job taken but not started goes back to the front."""
        self._jobs.appendleft(job)

    def take(self, background: int, workers: int) -> Job | None:
        """The next job to start: an urgent one first; another only while it leaves a worker
        for people (with `workers` >= 2, of which `background` run jobs nobody waits for)."""
        if self._jobs[0].urgent:
            return self._jobs.popleft()
        if workers >= 2 and background >= workers - 1:
            return None
        return self._jobs.popleft()

    def take_plain(self) -> Job | None:
        """The next answer for the plain Python worker whose caller still waits."""
        while self._plain:
            job = self._plain.popleft()
            if not job.future.done():
                return job
        return None

    def fail_jobs(self, error: Callable[[], BaseException]) -> None:
        """Every job waiting for a worker fails, each with a fresh `error()`."""
        _fail_all(self._jobs, error)

    def fail_plain(self, error: Callable[[], BaseException]) -> None:
        """Every answer waiting for the plain Python worker fails likewise."""
        _fail_all(self._plain, error)


def _fail_all(line: deque[Job], error: Callable[[], BaseException]) -> None:
    while line:
        fail(line.popleft(), error())


class _Pickler(pickle.Pickler):
    """A pickler that calls into Python for every object, so a thread pickling a big job (a
    training batch's memory snapshot) lets the GIL go to the event loop every few ms; the C
    pickler alone would hold it throughout (~20 ms for 5 MB)."""

    def persistent_id(self, obj: Any) -> None:
        return None


def no_signals() -> None:
    """Keep Ctrl-C and SIGTERM off this helper thread. The kernel hands a process's signal to
    any thread that does not block it; one that lands here would not wake the event loop of
    a program that relies on Python's own SIGINT handling (asyncio.run), which then sleeps on."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


#: Workers started before the engine pool was made (`Worker.start_early`), for it to take.
_early: list[Worker] = []


class Worker:
    """One worker process and what the pool knows of it (touched on the loop's thread only,
    except the pipes, which belong to the reader and sender threads). `command` starts it
    (`python -m lobby.worker`); `mode` is the worker's (see `lobby.worker`)."""

    def __init__(self, mode: str, command: Sequence[str]) -> None:
        job_r, job_w = os.pipe()  # os.pipe is close-on-exec: no other worker inherits them
        reply_r, reply_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
        argv = [*command, str(job_r), str(reply_w), str(os.getpid()), mode]
        try:
            self.proc = subprocess.Popen(
                argv,
                pass_fds=(job_r, reply_w),
                stdin=subprocess.DEVNULL,  # the console reads stdin: a worker must not
                stdout=sys.__stderr__ or subprocess.DEVNULL,  # a stray print never hits it
                env=env,
                process_group=0,  # Ctrl-C in a terminal signals the bot's group only
            )
        except BaseException:
            os.close(job_w)
            os.close(reply_r)
            raise
        finally:
            os.close(job_r)
            os.close(reply_w)
        self.pid = self.proc.pid
        self.to_child: IO[bytes] = os.fdopen(job_w, "wb")
        self.from_child: IO[bytes] = os.fdopen(reply_r, "rb")
        self.state = "starting"  # starting, idle, busy, killed, retiring
        self.mode = mode
        self.plain = mode == "plain"
        self.job: Job | None = None
        self.then: Job | None = None  # the decision to send once its warm-up (`job`) is done
        self.ready = False  # it said so once
        self.warmed: set[str] = set()  # the warm-up steps done in this process
        self.timer: asyncio.TimerHandle | None = None
        self.born = time.monotonic()
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    @classmethod
    def start_early(cls, command: Sequence[str]) -> None:
        """Start an engine worker (`jit`) at once, before the engine is imported in this
        process (a second of CPU, which the worker's start spends meanwhile on another core):
        the pool takes it as its first (`take_early`). From the loop's thread, as the pool's."""
        _early.append(cls("jit", command))

    @staticmethod
    def take_early(mode: str) -> Worker | None:
        """A worker of `mode` started early, if one is left."""
        return _early.pop() if _early and _early[-1].mode == mode else None

    @property
    def urgent(self) -> bool:
        """It runs a job a person waits for, or loads an agent for people (either way the
        other workers may take background jobs meanwhile)."""
        return self.job is not None and (self.job.urgent or self.job.for_people)

    def kill(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self.proc.kill()

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def idle(self) -> None:
        """Its job is over: it waits for the next."""
        self.stop_timer()
        self.state, self.job = "idle", None

    def listen(
        self, message: Callable[[tuple[str, Any]], None], exited: Callable[[int], None]
    ) -> None:
        """Start its reader thread (`read`)."""
        name = f"engine-{self.pid}"
        threading.Thread(target=self.read, args=(message, exited), name=name, daemon=True).start()

    def retire(self) -> None:
        """Ask an idle worker to exit: end of file on its job pipe."""
        self.state = "retiring"
        with contextlib.suppress(OSError):
            self.to_child.close()

    # --- the threads (blocking I/O) ---

    def send(self, job: Job, unsent: Callable[[Exception], None]) -> None:
        """Write a job to the worker (a sender thread); `unsent` if it cannot be pickled."""
        buffer = io.BytesIO()
        try:
            _Pickler(buffer, pickle.HIGHEST_PROTOCOL).dump((job.fault, job.cap, job.fn, job.args))
        except Exception as exc:
            unsent(exc)
            return
        with contextlib.suppress(OSError, ValueError):  # a dead worker: its reader reports it
            send(self.to_child, buffer.getbuffer())

    def read(
        self, message: Callable[[tuple[str, Any]], None], exited: Callable[[int], None]
    ) -> None:
        """The worker's reader thread: each message from it, then its exit, once reaped."""
        no_signals()
        try:
            while True:
                data = recv(self.from_child)
                try:
                    msg = pickle.loads(data)
                except Exception as exc:
                    msg = ("err", RuntimeError(f"cannot read the worker's reply: {exc!r}"))
                message(msg)
        except (EOFError, OSError, ValueError):
            pass
        self.from_child.close()
        try:
            status = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # it closed its pipe but lives on: no such worker
            self.kill()
            status = self.proc.wait()
        exited(status)
