"""The engine pool: agents think in worker processes the pool supervises, one job per worker.

Why this shape (docs/architecture.md, "The engine pool"):

- A worker is a `python -m lobby.worker` process started with `subprocess` (fork+exec: never a
  bare fork of the bot, which runs threads), speaking length-prefixed pickles over two pipes of
  its own. No `multiprocessing`: no resource tracker to outlive the bot, no shared executor
  that one dead worker breaks for every job in flight. With one job per worker the pool knows
  which process runs which job, so it can kill exactly that one.
- Every job has a wall-clock cap counted from its start on a worker. Past it the worker is
  SIGKILLed and the job raises `JobTimeout`; a worker that dies mid-job fails only that job
  (`WorkerCrashed`). Either way a warmed replacement starts in the background. The pool never
  retries a job: the caller decides (the lobby falls back to a cheaper agent).
- Workers die with the bot, kill -9 included (see `lobby.worker`), sit in their own process
  group and ignore SIGINT, so Ctrl-C in a terminal reaches the bot alone.
- Blocking pipe I/O and (un)pickling stay off the event loop: a reader thread per worker and a
  small sender pool hand results back with `call_soon_threadsafe`. Workers are started from the
  loop's thread, because Linux's parent-death signal follows the thread that started them.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import math
import os
import pickle
import random
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import faults
from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, Decision, LearningAgent
from engine.games.base import GameState
from lobby.worker import recv, send

log = logging.getLogger(__name__)

T = TypeVar("T")

_ROOT = Path(__file__).resolve().parent.parent  # the source checkout: workers import from it
_COMMAND = [sys.executable, "-m", "lobby.worker"]  # fork+exec of a fresh interpreter
_START_ATTEMPTS = 3  # start failures in a row before `start()` gives up and queued jobs fail
_MAX_BACKOFF = 30.0

# Agents are built once per worker process and reused: building may load numba kernels or
# learned memory.
_agents: OrderedDict[tuple[AgentSpec, str], Agent] = OrderedDict()
#: Agents kept per worker, least recently used dropped first: an agent can hold a big table
#: (an Othello search table is 16 MB), and specs come from people.
MAX_AGENTS = 32


class JobFailed(Exception):
    """A pool job produced no result. (An exception of the job's own is re-raised as itself.)"""


class JobTimeout(JobFailed):
    """The job ran past its cap; its worker was killed."""


class WorkerCrashed(JobFailed):
    """The worker died while running the job (crash, os._exit, segfault, OOM kill)."""


class PoolClosed(JobFailed):
    """The pool was closed before the job could finish."""


def worker_agent(spec: AgentSpec, game: str) -> Agent:
    """This process's instance of the agent a spec names (built on first use)."""
    key = (spec, game)
    agent = _agents.get(key)
    if agent is None:
        agent = _agents[key] = registry.build(spec, game)
        while len(_agents) > MAX_AGENTS:
            _agents.popitem(last=False)
    else:
        _agents.move_to_end(key)
    return agent


def choose_in_worker(
    state: GameState,
    spec: AgentSpec,
    budget: Budget,
    seed: int,
    memory: Mapping[bytes, bytes] | None = None,
) -> Decision:
    """Run one agent decision (module level so it pickles into the worker).

    A learning agent first gets `memory`: the rows its `memory_keys(state)` asked for, loaded
    by the lobby (the worker never touches SQLite).
    """
    agent = worker_agent(spec, state.game)
    if memory is not None and isinstance(agent, LearningAgent):
        agent.use_memory(memory)
    return agent.choose(state, budget, random.Random(seed))


@dataclass(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    cap: float
    label: str
    future: asyncio.Future[Any]
    fault: str | None = None
    urgent: bool = False  # a person waits for it: it jumps the queue of the others
    queued: float = field(default_factory=time.monotonic)
    started: float | None = None


@dataclass(frozen=True, slots=True)
class JobTiming:
    """How long one finished job waited in the queue, and then ran in its worker."""

    label: str
    urgent: bool
    wait: float
    run: float


#: Timings kept (the newest), for reports.
MAX_TIMINGS = 10_000


class _Pickler(pickle.Pickler):
    """A pickler that calls into Python for every object, so a thread pickling a big job (a
    training batch's memory snapshot) lets the GIL go to the event loop every few ms; the C
    pickler alone would hold it throughout (~20 ms for 5 MB)."""

    def persistent_id(self, obj: Any) -> None:
        return None


def _no_signals() -> None:
    """Keep Ctrl-C and SIGTERM off this helper thread. The kernel hands a process's signal to
    any thread that does not block it; one that lands here would not wake the event loop of
    a program that relies on Python's own SIGINT handling (asyncio.run), which then sleeps on."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _urgent(w: _Worker) -> bool:
    return w.job is not None and w.job.urgent


def _fail(job: _Job, exc: JobFailed) -> None:
    if not job.future.done():
        job.future.set_exception(exc)


class _Worker:
    """One worker process and what the pool knows of it (touched on the loop's thread only,
    except the pipes, which belong to the reader and sender threads)."""

    def __init__(self, warm: bool) -> None:
        job_r, job_w = os.pipe()  # os.pipe is close-on-exec: no other worker inherits them
        reply_r, reply_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
        argv = [*_COMMAND, str(job_r), str(reply_w), str(os.getpid()), "1" if warm else "0"]
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
        self.job: _Job | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.born = time.monotonic()
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def kill(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self.proc.kill()

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class EnginePool:
    """`await pool.choose(state, spec, budget)` -> Decision, computed in a worker process.

    `workers=0` runs jobs in a thread of this process instead (for tests of the code above the
    pool): one at a time, with the same caps, but a thread cannot be killed, so a job past its
    cap raises `JobTimeout` and goes on running in the background. The bot always uses
    processes. `warm=False` skips the warm-up (tests); `ceiling` bounds every job's cap;
    `untimed` is the cap of a decision whose budget has no time (such agents answer in
    milliseconds: a depth-limited search, a lookup), so a hung one is replaced quickly.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        ceiling: float = 30.0,
        untimed: float = 3.0,
        warm: bool = True,
        start_timeout: float = 120.0,
    ) -> None:
        if workers < 0:
            raise ValueError("workers must be >= 0")
        if not ceiling > 0:
            raise ValueError("ceiling must be > 0")
        self.workers = workers
        self.ceiling = ceiling
        self.untimed = untimed
        self.warm = warm
        self.start_timeout = start_timeout  # a warm-up may compile numba kernels from cold
        # counters, for logs and tests
        self.jobs_run = 0
        self.timeouts = 0
        self.crashes = 0
        self.workers_started = 0
        self.start_failures = 0  # in a row; reset by a worker that starts
        self._seed = random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[_Job] = deque()
        self._live: list[_Worker] = []
        self._respawns: set[asyncio.TimerHandle] = set()
        self._changed = asyncio.Event()
        self._sender: ThreadPoolExecutor | None = None
        self._thread: ThreadPoolExecutor | None = None  # workers=0
        self._thread_lock = asyncio.Lock()
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        #: The newest jobs' queue waits and run times (for reports; queue waits are where a
        #: person's wait would grow if the pool were too small).
        self.timings: deque[JobTiming] = deque(maxlen=MAX_TIMINGS)

    @property
    def pids(self) -> list[int]:
        """The worker processes alive now (starting, idle or busy)."""
        return [w.pid for w in self._live]

    @property
    def idle(self) -> int:
        """How many workers wait for a job now."""
        return sum(w.state == "idle" for w in self._live)

    def cap_for(self, budget: Budget) -> float:
        """A decision's wall-clock cap: its time budget plus a margin (`untimed` without one),
        at most the ceiling."""
        t = budget.time
        if t is None or not math.isfinite(t) or t <= 0:
            return min(self.untimed, self.ceiling)
        return min(1.5 * t + 1.0, self.ceiling)

    async def start(self) -> None:
        """Start every worker and wait until each has warmed its kernels."""
        self._loop = asyncio.get_running_loop()
        if self.workers == 0:
            self._thread = ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="engine", initializer=_no_signals
            )
            if self.warm:
                from engine.warm import warm_up

                await self._loop.run_in_executor(self._thread, warm_up)
            return
        self._sender = ThreadPoolExecutor(
            self.workers, thread_name_prefix="engine-send", initializer=_no_signals
        )
        for _ in range(self.workers):
            self._spawn()
        while sum(w.state in ("idle", "busy") for w in self._live) < self.workers:
            if self.start_failures >= _START_ATTEMPTS or self._closed:
                await self.close()
                raise RuntimeError("engine workers fail to start (see the log and stderr)")
            self._changed.clear()
            await self._changed.wait()

    async def choose(
        self,
        state: GameState,
        spec: AgentSpec,
        budget: Budget,
        seed: int | None = None,
        memory: Mapping[bytes, bytes] | None = None,
        *,
        urgent: bool = False,
    ) -> Decision:
        """One decision; `memory` is handed to a learning agent before it chooses. `urgent`:
        a person is waiting for it, so it goes before the queued jobs that are not (bot
        matches, training)."""
        seed = self._seed.randrange(2**63) if seed is None else seed
        args = (state, spec, budget, seed, memory)
        label = f"{choose_in_worker.__name__}[{spec.label()}]"
        cap = self.cap_for(budget)
        result: Decision = await self._submit(choose_in_worker, args, cap, label, urgent)
        return result

    async def run(
        self, fn: Callable[..., T], *args: Any, cap: float | None = None, urgent: bool = False
    ) -> T:
        """Run a module-level function in a worker (e.g. a training batch), killed past `cap`
        seconds (at most the ceiling, which is also the default); `urgent` as in `choose`."""
        if cap is not None and not cap > 0:
            raise ValueError(f"a job's cap must be > 0, not {cap}")
        limit = self.ceiling if cap is None else min(cap, self.ceiling)
        label = getattr(fn, "__qualname__", repr(fn))
        result: T = await self._submit(fn, args, limit, label, urgent)
        return result

    async def _submit(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        cap: float,
        label: str,
        urgent: bool = False,
    ) -> Any:
        if self._closed:
            raise PoolClosed("the engine pool is closed")
        if self._loop is None:
            raise RuntimeError("the engine pool is not started")
        job = _Job(fn, args, cap, label, self._loop.create_future())
        if self.workers == 0:
            return await self._run_in_thread(job)
        job.urgent = urgent
        if urgent:  # after the other urgent jobs, before the rest
            at = sum(1 for queued in self._queue if queued.urgent)
            self._queue.insert(at, job)
        else:
            self._queue.append(job)
        self._dispatch()
        return await job.future

    async def _run_in_thread(self, job: _Job) -> Any:
        async with self._thread_lock:  # one job at a time, in order, like a single worker
            if self._closed or self._thread is None:
                raise PoolClosed("the engine pool is closed")
            fault = faults.fire("job")  # a thread cannot crash or be killed: act it out
            if fault == "crash":
                self.crashes += 1
                raise WorkerCrashed(f"{job.label}: crash injected")
            if fault == "hang":
                await asyncio.sleep(job.cap)
            else:
                assert self._loop is not None
                job.started = time.monotonic()
                work = self._loop.run_in_executor(self._thread, job.fn, *job.args)
                try:
                    return await asyncio.wait_for(work, job.cap)
                except TimeoutError:
                    pass
                finally:
                    self.jobs_run += 1
                    self._timed(job)
            self.timeouts += 1
            log.warning(
                "engine job %s passed its %.1f s cap (left running in its thread)",
                job.label,
                job.cap,
            )
            raise JobTimeout(f"{job.label} ran past its {job.cap:.1f} s cap")

    # --- the workers' lives (on the loop's thread) ---

    def _spawn(self) -> None:
        if self._closed:
            return
        assert self._loop is not None
        try:
            w = _Worker(self.warm)
        except OSError:
            log.exception("cannot start an engine worker")
            self._start_failed()
            return
        self._live.append(w)
        w.timer = self._loop.call_later(self.start_timeout, self._on_deadline, w)
        threading.Thread(target=self._read, args=(w,), name=f"engine-{w.pid}", daemon=True).start()

    def _start_failed(self) -> None:
        """Retry later, waiting longer after each failure in a row; if no worker is up, the
        queued jobs fail rather than wait forever."""
        self.start_failures += 1
        delay = min(_MAX_BACKOFF, 0.5 * 2 ** (self.start_failures - 1))
        log.warning(
            "engine worker failed to start (%d in a row); retrying in %.1f s",
            self.start_failures,
            delay,
        )
        if self.start_failures >= _START_ATTEMPTS and not any(
            w.state in ("idle", "busy") for w in self._live
        ):
            while self._queue:
                _fail(self._queue.popleft(), WorkerCrashed("no engine worker can start"))
        assert self._loop is not None
        handle: asyncio.TimerHandle

        def respawn() -> None:
            self._respawns.discard(handle)
            self._spawn()

        handle = self._loop.call_later(delay, respawn)
        self._respawns.add(handle)

    def _dispatch(self) -> None:
        """Give queued jobs to idle workers; the cap starts now.

        With two workers or more, jobs nobody waits for (bot matches, training, analyses)
        take at most all workers but one: a person's move never waits behind them, only
        behind other people's moves."""
        assert self._loop is not None and self._sender is not None
        idle = [w for w in self._live if w.state == "idle"]
        while idle and self._queue:
            job = self._next_job()
            if job is None:
                return  # only jobs for the spare worker remain: it stays for a person
            if job.future.done():  # its caller gave up while it waited
                continue
            w = idle.pop()
            job.started = time.monotonic()
            job.fault = faults.fire("job")  # counted here: deterministic across restarts
            w.state, w.job = "busy", job
            w.timer = self._loop.call_later(job.cap, self._on_deadline, w)
            self._sender.submit(self._send, w, job)

    def _timed(self, job: _Job) -> None:
        now = time.monotonic()
        started = job.started if job.started is not None else now
        self.timings.append(JobTiming(job.label, job.urgent, started - job.queued, now - started))

    def _next_job(self) -> _Job | None:
        """The next job to start: an urgent one first (they queue in front); another only
        while it leaves a worker for people."""
        if self._queue[0].urgent:
            return self._queue.popleft()
        background = sum(1 for w in self._live if w.state == "busy" and not _urgent(w))
        if self.workers >= 2 and background >= self.workers - 1:
            return None
        return self._queue.popleft()

    def _on_deadline(self, w: _Worker) -> None:
        w.timer = None
        if w.state == "starting":
            log.warning(
                "engine worker %d did not start in %.0f s: killing it", w.pid, self.start_timeout
            )
        elif w.state == "busy" and w.job is not None:
            job, w.job = w.job, None
            self.timeouts += 1
            log.warning(
                "engine job %s passed its %.1f s cap: killing worker %d", job.label, job.cap, w.pid
            )
            _fail(job, JobTimeout(f"{job.label} ran past its {job.cap:.1f} s cap"))
        else:
            return
        w.state = "killed"
        w.kill()  # its reader thread reports the exit, which starts a replacement

    def _on_message(self, w: _Worker, msg: tuple[str, Any]) -> None:
        kind, value = msg
        if kind == "ready":
            if w.state != "starting":
                return
            w.stop_timer()
            w.state = "idle"
            self.workers_started += 1
            self.start_failures = 0
            log.info("engine worker %d ready in %.2f s", w.pid, time.monotonic() - w.born)
            self._changed.set()
        else:
            job = w.job
            if w.state != "busy" or job is None:  # a late reply from a worker being killed
                return
            w.stop_timer()
            w.state, w.job = "idle", None
            self.jobs_run += 1
            self._timed(job)
            if not job.future.done():
                if kind == "ok":
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)
        if self._closed:
            self._retire(w)
        else:
            self._dispatch()

    def _on_unsent(self, w: _Worker, job: _Job, exc: Exception) -> None:
        """The job could not be pickled: nothing reached the worker, which is idle again."""
        if w.job is job and w.state == "busy":
            w.stop_timer()
            w.state, w.job = "idle", None
            if not job.future.done():
                job.future.set_exception(exc)
            if self._closed:
                self._retire(w)
            else:
                self._dispatch()

    def _on_exit(self, w: _Worker, status: int) -> None:
        w.stop_timer()
        self._live.remove(w)
        w.exited.set_result(status)
        state, job, w.job = w.state, w.job, None
        if job is not None:
            self.crashes += 1
            log.warning(
                "engine worker %d died (exit status %d) running %s", w.pid, status, job.label
            )
            _fail(job, WorkerCrashed(f"the worker running {job.label} died (status {status})"))
        elif state == "idle":
            log.warning("engine worker %d died while idle (exit status %d)", w.pid, status)
        self._changed.set()
        if self._closed:
            return
        if state == "starting":
            log.warning("engine worker %d exited (status %d) before it was ready", w.pid, status)
            self._start_failed()
        else:
            self._spawn()

    def _retire(self, w: _Worker) -> None:
        """Ask an idle worker to exit: end of file on its job pipe."""
        w.state = "retiring"
        with contextlib.suppress(OSError):
            w.to_child.close()

    # --- the threads (blocking I/O) ---

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        assert self._loop is not None
        # RuntimeError: the loop is closed, the bot is exiting (and the workers with it)
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(fn, *args)

    def _send(self, w: _Worker, job: _Job) -> None:
        buffer = io.BytesIO()
        try:
            _Pickler(buffer, pickle.HIGHEST_PROTOCOL).dump((job.fault, job.cap, job.fn, job.args))
        except Exception as exc:
            self._post(self._on_unsent, w, job, exc)
            return
        with contextlib.suppress(OSError, ValueError):  # a dead worker: its reader reports it
            send(w.to_child, buffer.getbuffer())

    def _read(self, w: _Worker) -> None:
        """A worker's reader thread: each message from it, then its exit, once reaped."""
        _no_signals()
        try:
            while True:
                data = recv(w.from_child)
                try:
                    msg = pickle.loads(data)
                except Exception as exc:
                    msg = ("err", RuntimeError(f"cannot read the worker's reply: {exc!r}"))
                self._post(self._on_message, w, msg)
        except (EOFError, OSError, ValueError):
            pass
        w.from_child.close()
        try:
            status = w.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # it closed its pipe but lives on: no such worker
            w.kill()
            status = w.proc.wait()
        self._post(self._on_exit, w, status)

    # --- shutdown ---

    async def close(self, timeout: float = 2.0) -> None:
        """Fail queued jobs, let running ones finish for at most `timeout` s, kill the rest and
        reap every worker. Idempotent."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close(timeout))
        await asyncio.shield(self._closing)

    async def _close(self, timeout: float) -> None:
        self._closed = True
        self._changed.set()
        while self._queue:
            _fail(self._queue.popleft(), PoolClosed("the engine pool is closed"))
        for handle in self._respawns:
            handle.cancel()
        self._respawns.clear()
        if self._thread is not None:
            self._thread.shutdown(wait=False, cancel_futures=True)
        for w in list(self._live):
            if w.state == "idle":
                self._retire(w)
            elif w.state == "starting":
                w.kill()
        running = [w.exited for w in self._live]
        if running:
            await asyncio.wait(running, timeout=timeout)
        for w in list(self._live):  # jobs that outlived the timeout, workers deaf to EOF
            if w.job is not None:
                _fail(w.job, PoolClosed("the engine pool closed while the job ran"))
                w.job = None
            w.kill()
        left = [w.exited for w in self._live]
        if left:
            await asyncio.wait(left, timeout=5.0)  # SIGKILLed: reaped at once
        if self._sender is not None:
            self._sender.shutdown(wait=False)
