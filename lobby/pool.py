"""The engine pool: agents think in worker processes the pool supervises, one job per worker.

Why this shape (docs/architecture.md, "The engine pool"):

- A worker is a `python -m lobby.worker` process started with `subprocess` (fork+exec: never a
  bare fork of the bot, which runs threads), speaking length-prefixed pickles over two pipes of
  its own. No `multiprocessing`: no resource tracker to outlive the bot, no shared executor
  that one dead worker breaks for every job in flight. With one job per worker the pool knows
  which process runs which job, so it can kill exactly that one.
- Every job has a wall-clock cap counted from its start on a worker. Past it the worker is
  SIGKILLed and the job raises `JobTimeout`; a worker that dies mid-job fails only that job
  (`WorkerCrashed`). Either way a replacement starts in the background. The pool never
  retries a job: the caller decides (the lobby falls back to a cheaper agent).
- Workers die with the bot, kill -9 included (see `lobby.worker`), sit in their own process
  group and ignore SIGINT, so Ctrl-C in a terminal reaches the bot alone.
- Workers are ready as soon as the engine is imported; numba compiles a kernel on its first
  call (or loads it from its cache). They warm one agent at a time in the background
  (`engine/warm.py`'s plan, an agent asked for first), and the cap of a job stops while numba
  compiles in it. While an agent was never compiled, a plain Python worker (numba's JIT off)
  answers its moves where that is the agent's own move (`engine.warm.plain_budget`).
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
from engine import warm as warming
from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, Decision, LearningAgent
from engine.games.base import GameState
from lobby.worker import recv, repeatable, send

log = logging.getLogger(__name__)

T = TypeVar("T")

_ROOT = Path(__file__).resolve().parent.parent  # the source checkout: workers import from it
_COMMAND = [sys.executable, "-m", "lobby.worker"]  # fork+exec of a fresh interpreter
_START_ATTEMPTS = 3  # start failures in a row before `start()` gives up and queued jobs fail
_MAX_BACKOFF = 30.0
_WARM_ATTEMPTS = 2  # failed warm-ups of one agent before the pool stops trying it
#: Seconds a plain Python answer may take before the compiled agent is asked too.
HEDGE_SECONDS = 2.0
_PRIOR = 5.0  # reference seconds the first guess of the machine's speed weighs

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


@repeatable  # a compile ate its time budget: the worker decides again
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


#: The niceness of a warm-up nobody waits for (Linux: of its thread only).
GENTLE = 10


def warm_in_worker(step: warming.WarmStep, gentle: bool = False) -> None:
    """Compile (or load) every kernel of a step's agent (with an instance of its own: the
    worker keeps only the agents its jobs use, whose tables can be big).

    `gentle`: in a thread of low priority (the worker's own thread, which runs the decisions,
    keeps its priority), so a background warm-up takes the CPU only when nothing else, a
    person's first move compiling beside it above all, wants it."""

    def warm() -> None:
        warming.warm_step(step)

    if not gentle or not sys.platform.startswith("linux"):
        warm()
        return
    failed: list[BaseException] = []

    def run() -> None:
        with contextlib.suppress(OSError):  # a thread's niceness: Linux's setpriority by tid
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), GENTLE)
        try:
            warm()
        except BaseException as exc:  # raised in the worker's thread, as if it ran there
            failed.append(exc)

    thread = threading.Thread(target=run, name="warm-up")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """How far the engine's warm-up is: agents compiled (or loaded) of those people can
    choose, the ones left (as shown: `Othello expert`), about how many seconds they take, and
    whether they compile (else numba only loads them from its cache, in seconds)."""

    ready: int
    total: int
    left: tuple[str, ...]
    seconds: float
    compiling: bool

    @property
    def warm(self) -> bool:
        return self.ready >= self.total

    def progress(self) -> str:
        """`8 of 20 opponents ready, about 25 s left`."""
        left = max(1, round(self.seconds))
        return f"{self.ready} of {self.total} opponents ready, about {left} s left"

    def note(self) -> str:
        """A line for someone starting a game while the engine compiles (empty otherwise)."""
        if self.warm or not self.compiling:
            return ""
        return (
            f"The game engine is still compiling after an install or update ({self.progress()}):"
            " the bot's first moves may be slower."
        )


@dataclass(eq=False)
class _Job:
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


def _complete(task: asyncio.Future[Any], budget: Budget, label: str) -> Decision | None:
    """The plain Python answer of a finished job, if it is the agent's own move."""
    try:
        decision: Decision = task.result()
    except Exception as exc:  # the compiled agent answers instead
        log.info("%s: no answer (%s)", label, exc)
        return None
    if not warming.plain_complete(decision, budget):
        log.info("%s: not complete (depth %s)", label, decision.depth)
        return None
    return decision


def _quiet(future: asyncio.Future[Any]) -> None:
    """Mark a future's exception as seen (asyncio logs unseen ones)."""
    if not future.cancelled():
        future.exception()


def _plan() -> tuple[list[warming.WarmStep], dict[str, float], set[str]]:
    """The warm-up's plan, each step's cost and the steps `cached()` (a thread: it reads the
    cache's notes)."""
    plan = warming.warm_plan()
    cached = {step.key for step in plan if step.cached()}
    costs = {s.key: warming.LOAD_COST if s.key in cached else s.cost() for s in plan}
    return plan, costs, cached


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

    def __init__(self, mode: str) -> None:
        job_r, job_w = os.pipe()  # os.pipe is close-on-exec: no other worker inherits them
        reply_r, reply_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
        argv = [*_COMMAND, str(job_r), str(reply_w), str(os.getpid()), mode]
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
        self.plain = mode == "plain"
        self.job: _Job | None = None
        self.then: _Job | None = None  # the decision to send once its warm-up (`job`) is done
        self.ready = False  # it said so once
        self.warmed: set[str] = set()  # the warm-up steps done in this process
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
    processes. `warm=False` skips the warm-up and the plain worker (tests); `ceiling` bounds
    every job's cap;
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
        self.start_timeout = start_timeout  # also the cap of a warm-up step and of a compile
        # counters, for logs and tests
        self.jobs_run = 0
        self.timeouts = 0
        self.crashes = 0
        self.workers_started = 0  # (the plain worker is not counted, nor in `pids`)
        self.start_failures = 0  # in a row; reset by a worker that starts
        self.compiles = 0  # chains of kernels numba compiled inside jobs
        self.compile_seconds = 0.0
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
        # the warm-up: its steps in order, their costs on the reference machine, the steps
        # some worker finished (key -> seconds it took) or failed, and when it began
        self._plan: list[warming.WarmStep] = []
        self._costs: dict[str, float] = {}
        self._done: dict[str, float] = {}
        self._failed: dict[str, int] = {}
        self._began = time.monotonic()
        self._slowness = self._guess = 1.0  # seconds here per second on the reference machine
        self._measured = [0.0, 0.0]  # seconds here, and on the reference machine, of compiles
        self._plain_queue: deque[_Job] = deque()
        self._ready: dict[str, asyncio.Future[None]] = {}  # `_step_ready`
        self._planned = False
        self._cached: set[str] = set()  # steps compiled before this start (loads only)
        self._order: dict[str, int] = {}  # the plan's first order (`_took_over`)
        self._everything: asyncio.Future[None] | None = None
        #: The newest jobs' queue waits and run times (for reports; queue waits are where a
        #: person's wait would grow if the pool were too small).
        self.timings: deque[JobTiming] = deque(maxlen=MAX_TIMINGS)

    @property
    def pids(self) -> list[int]:
        """The worker processes alive now (starting, idle or busy)."""
        return [w.pid for w in self._live if not w.plain]

    @property
    def idle(self) -> int:
        """How many workers wait for a job now."""
        return sum(w.state == "idle" and not w.plain for w in self._live)

    @property
    def planned(self) -> bool:
        """Whether `status()` knows the warm-up's plan (soon after `start()` began)."""
        return self._planned

    @property
    def plain_pid(self) -> int | None:
        """The plain Python worker's process, while there is one."""
        return next((w.pid for w in self._live if w.plain), None)

    def cap_for(self, budget: Budget) -> float:
        """A decision's wall-clock cap: its time budget plus a margin (`untimed` without one),
        at most the ceiling."""
        t = budget.time
        if t is None or not math.isfinite(t) or t <= 0:
            return min(self.untimed, self.ceiling)
        return min(1.5 * t + 1.0, self.ceiling)

    async def start(self) -> None:
        """Start every worker and wait until each has imported the engine (a second or so:
        the warm-up goes on in the background, `everything()`). Without workers, the whole
        warm-up runs in a thread first."""
        self._loop = asyncio.get_running_loop()
        self._began = time.monotonic()
        self._everything = self._loop.create_future()
        if self.workers == 0:
            self._thread = ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="engine", initializer=_no_signals
            )
            if self.warm:
                await self._loop.run_in_executor(self._thread, warming.warm_up)
            self._planned = True
            self._everything.set_result(None)
            return
        self._sender = ThreadPoolExecutor(
            self.workers, thread_name_prefix="engine-send", initializer=_no_signals
        )
        cold = False
        if self.warm:  # the plan's notes are files (and digests of the engine's source)
            planned = await self._loop.run_in_executor(self._sender, _plan)
            self._plan, self._costs, self._cached = planned
            self._order = {step.key: i for i, step in enumerate(self._plan)}
            self._planned = True
            cold = len(self._cached) < len(self._plan)
            # a first guess of the machine's speed from its load per core; its square root,
            # since Linux shares the CPU between sessions before processes (the bot's session
            # gets its share however many processes the others run)
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
            per_core = os.getloadavg()[0] / max(1, cpus)
            self._slowness = self._guess = max(1.0, math.sqrt(per_core))
        else:
            self._planned = True
            self._everything.set_result(None)
        # With a warm-up, one worker first: the others start once it is ready, so on a busy
        # machine the first is not slowed by their start (a start is a second of CPU)
        for _ in range(1 if self.warm else self.workers):
            self._spawn()
        if cold:  # first moves while the agents compile
            self._spawn("plain")
        while sum(w.state in ("idle", "busy") and not w.plain for w in self._live) < self.workers:
            if self.start_failures >= _START_ATTEMPTS or self._closed:
                await self.close()
                raise RuntimeError("engine workers fail to start (see the log and stderr)")
            self._changed.clear()
            await self._changed.wait()

    async def everything(self) -> None:
        """Wait until every agent of the warm-up's plan is compiled (or loaded) in a worker."""
        if self._everything is None:
            raise RuntimeError("the engine pool is not started")
        await asyncio.shield(self._everything)

    def status(self) -> EngineStatus:
        """How far the warm-up is, and about how long the rest takes here."""
        left = [step for step in self._plan if step.key not in self._done]
        seconds = sum(self._costs.get(step.key, warming.DEFAULT_COST) for step in left)
        seconds *= self._slowness
        now = time.monotonic()
        for w in self._live:  # what the steps under way have done already
            if w.job is not None and w.job.warm is not None and w.job.started is not None:
                cost = self._costs.get(w.job.warm.key, warming.DEFAULT_COST) * self._slowness
                seconds -= min(cost, now - w.job.started)
        total = len(self._plan)
        compiling = any(s.key not in self._cached for s in left)
        labels = tuple(s.label for s in left)
        return EngineStatus(total - len(left), total, labels, max(0.0, seconds), compiling)

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
        matches, training).

        An agent no worker compiled yet is warmed first (before the rest of the plan). Until
        then the plain Python worker, if there is one, answers for it where that is the
        agent's own move (`engine.warm.plain_budget`, `plain_complete`); if it has not answered
        within `HEDGE_SECONDS` (a depth or nodes budget: it is quick), the compiled agent is
        asked too (compiling what it needs), and the first of the two answers counts."""
        seed = self._seed.randrange(2**63) if seed is None else seed
        label = f"{choose_in_worker.__name__}[{spec.label()}]"
        step = self._hurry(spec, state.game)
        args = (state, spec, budget, seed, memory)
        cap = self.cap_for(budget)
        plain = warming.plain_budget(budget)
        if plain is None or step is None or not self._plain_helps(step, budget):
            result: Decision = await self._submit(
                choose_in_worker, args, cap, label, urgent, step=step
            )
            return result
        plain_args = (state, spec, plain, seed, memory)
        plain_cap = min(warming.PLAIN_SECONDS + 1.0, self.ceiling)
        tasks = {
            "plain": asyncio.ensure_future(
                self._submit(
                    choose_in_worker, plain_args, plain_cap, f"{label} (plain)", urgent, plain=True
                )
            ),
            "ready": self._step_ready(step),
        }
        # a search by the clock runs long in plain Python: both at once on two cores would
        # each be slower than either alone
        hedge = HEDGE_SECONDS if budget.time is None else None
        try:
            while True:
                timeout = hedge if "compiled" not in tasks else None
                done, _ = await asyncio.wait(
                    tasks.values(), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                if tasks["plain"] in done:
                    answer = _complete(tasks.pop("plain"), budget, label)
                    if answer is not None:
                        return answer
                if "compiled" in tasks and tasks["compiled"] in done:
                    return tasks["compiled"].result()  # type: ignore[no-any-return]
                if "compiled" not in tasks:  # no (complete) answer yet, or the agent is ready
                    compiled = self._submit(choose_in_worker, args, cap, label, urgent, step=step)
                    tasks["compiled"] = asyncio.ensure_future(compiled)
                    tasks.pop("ready")
                if "plain" not in tasks:
                    return await tasks["compiled"]  # type: ignore[no-any-return]
        finally:
            for task in tasks.values():
                if isinstance(task, asyncio.Task):
                    task.cancel()  # a queued job is dropped; a running one ends unread

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

    def _step_ready(self, key: str) -> asyncio.Future[None]:
        """Done when some worker has warmed the step `key` (or the pool gave up on it)."""
        assert self._loop is not None
        ready = self._ready.get(key)
        if ready is None:
            ready = self._ready[key] = self._loop.create_future()
            if key in self._done or self._failed.get(key, 0) >= _WARM_ATTEMPTS:
                ready.set_result(None)
        return ready

    async def _submit(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        cap: float,
        label: str,
        urgent: bool = False,
        *,
        plain: bool = False,
        step: str | None = None,
    ) -> Any:
        if self._closed:
            raise PoolClosed("the engine pool is closed")
        if self._loop is None:
            raise RuntimeError("the engine pool is not started")
        job = _Job(fn, args, cap, label, self._loop.create_future(), step=step)
        if self.workers == 0:
            return await self._run_in_thread(job)
        job.urgent, job.plain = urgent, plain
        if plain:
            self._plain_queue.append(job)
        elif urgent:  # after the other urgent jobs, before the rest
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

    def _spawn(self, mode: str | None = None) -> None:
        if self._closed:
            return
        assert self._loop is not None
        if mode is None:  # a worker without a warm-up does not import every agent first
            mode = "jit" if self.warm else "bare"
        try:
            w = _Worker(mode)
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
        idle = [w for w in self._live if w.state == "idle" and not w.plain]
        while idle and self._queue:
            job = self._next_job()
            if job is None:
                break  # only jobs for the spare worker remain: it stays for a person
            if job.future.done():  # its caller gave up while it waited
                continue
            # a worker that has warmed the job's agent, if one is idle
            w = next((w for w in idle if job.step in w.warmed), idle[-1])
            idle.remove(w)
            if job.step is not None and job.step not in w.warmed and job.step in self._done:
                w.then = job  # compiled by another worker: loaded here first, uncapped
                self._send_job(w, self._warm_job(self._step(job.step), gentle=False))
            else:
                self._send_job(w, job)
        plain = next((w for w in self._live if w.plain and w.state == "idle"), None)
        while plain is not None and self._plain_queue:
            job = self._plain_queue.popleft()
            if not job.future.done():
                self._send_job(plain, job)
                plain = None
        if not self._queue:  # the warm-up: only while no job waits
            for w in idle:
                step = self._next_step(w) if self._background_slot() else None
                if step is not None:
                    self._send_job(w, self._warm_job(step, gentle=self.workers >= 2))

    def _send_job(self, w: _Worker, job: _Job) -> None:
        """Start `job` on the idle worker `w`; its cap starts now."""
        assert self._loop is not None and self._sender is not None
        job.started = time.monotonic()
        if job.warm is None:
            job.fault = faults.fire("job")  # counted here: deterministic across restarts
        w.state, w.job = "busy", job
        w.timer = self._loop.call_later(job.cap, self._on_deadline, w)
        self._sender.submit(self._send, w, job)

    def _background_slot(self) -> bool:
        """Whether a warm-up may start: with two workers or more, one that is up stays for
        people (while the others start, too)."""
        up = [w for w in self._live if w.state in ("idle", "busy") and not w.plain]
        background = sum(1 for w in up if w.state == "busy" and not _urgent(w))
        return self.workers < 2 or background < len(up) - 1

    # --- the warm-up (on the loop's thread) ---

    def _warm_job(self, step: warming.WarmStep, gentle: bool) -> _Job:
        """A warm-up step for one worker; `gentle` in a thread of low priority (while another
        worker is free for people: a single worker's warm-up delays every move behind it)."""
        assert self._loop is not None
        label = f"warm[{step.key}]"
        args = (step, gentle)
        job = _Job(warm_in_worker, args, self.start_timeout, label, self._loop.create_future())
        job.future.add_done_callback(_quiet)  # nobody awaits a warm-up
        job.warm, job.step = step, step.key
        return job

    def _step(self, key: str) -> warming.WarmStep:
        return next(step for step in self._plan if step.key == key)

    def _next_step(self, w: _Worker) -> warming.WarmStep | None:
        """The first step of the plan this worker has not done; one that another worker is
        compiling for the first time waits for it (it would compile the same kernels)."""
        if w.plain:
            return None
        under_way = {v.job.step for v in self._live if v.job is not None}
        for step in self._plan:
            if step.key in w.warmed or self._failed.get(step.key, 0) >= _WARM_ATTEMPTS:
                continue
            if step.key in under_way and step.key not in self._done:
                continue
            return step
        return None

    def _hurry(self, spec: AgentSpec, game: str) -> str | None:
        """Move the step of an agent asked for before the steps not done yet (adding it to
        the plan if it is not in it); its key (None without a warm-up)."""
        if not self.warm or self.workers == 0 or not self._planned:
            return None
        i = next((i for i, s in enumerate(self._plan) if s.spec == spec and s.game == game), -1)
        if i < 0:
            step = warming.WarmStep(game, (spec.label(),), spec)
            self._costs[step.key] = warming.DEFAULT_COST
        else:
            step = self._plan.pop(i)
        if step.key in self._done:
            self._plan.insert(i, step)
            return step.key
        first = next((j for j, s in enumerate(self._plan) if s.key not in self._done), 0)
        self._plan.insert(first, step)
        if self._everything is not None and self._everything.done():
            self._everything = asyncio.get_running_loop().create_future()
        return step.key

    def _plain_helps(self, step: str, budget: Budget) -> bool:
        """Whether the plain worker should answer for the agent of `step`: no worker has
        warmed it yet, its compile takes longer than a plain Python search with this budget
        (`engine.warm.plain_worth`), and the plain worker is there."""
        if step in self._done or step in self._cached:
            return False
        if warming.ALONE.get(step, warming.DEFAULT_COST) < warming.plain_worth(budget):
            return False
        return any(w.plain and w.state in ("starting", "idle", "busy") for w in self._live)

    def _took_over(self, step: warming.WarmStep) -> float:
        """The cost of `step`, done now. A step done before an agent of its family (same game
        and module) that the plan had first compiled their shared kernels: it takes over that
        one's cost, as much as it costs alone, and that one keeps the rest (so the estimate of
        what is left stays true)."""
        family = step.family()
        order = self._order.get(step.key, len(self._order))
        mine = self._costs.get(step.key, warming.DEFAULT_COST)
        for other in self._plan:
            if (
                other.key not in self._done
                and other.family() == family
                and self._order.get(other.key, len(self._order)) < order
            ):
                theirs = self._costs.get(other.key, warming.DEFAULT_COST)
                taken = max(mine, min(theirs, warming.ALONE.get(step.key, theirs)))
                self._costs[step.key] = taken
                self._costs[other.key] = max(warming.LOAD_COST, theirs + mine - taken)
                break
        return self._costs.get(step.key, warming.DEFAULT_COST)

    def _warmed(self, w: _Worker, job: _Job, failed: bool) -> None:
        """A warm-up step ended in `w` (or failed, and killed it)."""
        step = job.warm
        assert step is not None
        if failed:
            self._failed[step.key] = self._failed.get(step.key, 0) + 1
            if not self._closed:
                log.warning("engine warm-up of %s failed in worker %d", step.label, w.pid)
        else:
            w.warmed.add(step.key)
            took = time.monotonic() - (job.started or time.monotonic())
            if step.key not in self._done:
                self._done[step.key] = took
                cost = self._took_over(step)
                # how much slower than the reference this machine is, as measured so far (the
                # first guess weighs as much as `_PRIOR` seconds of it)
                self._measured[0] += took
                self._measured[1] += cost
                took_all, cost_all = self._measured
                guess = self._guess * _PRIOR
                self._slowness = max(0.2, (guess + took_all) / (_PRIOR + cost_all))
                log.info("engine: %s ready in %.1f s", step.label, took)
        ready = self._ready.get(step.key)
        given_up = self._failed.get(step.key, 0) >= _WARM_ATTEMPTS
        if ready is not None and not ready.done() and (step.key in self._done or given_up):
            ready.set_result(None)
        if self._everything is None or self._everything.done():
            return
        if all(s.key in self._done or self._failed.get(s.key, 0) >= _WARM_ATTEMPTS
               for s in self._plan):  # fmt: skip
            self._everything.set_result(None)
            log.info("engine: every agent ready in %.1f s", time.monotonic() - self._began)
            for v in self._live:  # no more first moves to answer in plain Python
                if v.plain and v.state == "idle":
                    self._retire(v)  # (a busy one retires once its answer is in)

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
            (log.info if w.plain else log.warning)(  # plain Python: the compiled agent answers
                "engine job %s passed its %.1f s cap: killing worker %d", job.label, job.cap, w.pid
            )
            if job.warm is not None:
                self._warmed(w, job, failed=True)
                self._requeue(w)
            elif not w.plain:
                self.timeouts += 1
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
            w.state, w.ready = "idle", True
            self.workers_started += 0 if w.plain else 1
            self.start_failures = 0
            log.info(
                "engine worker %d%s ready in %.2f s",
                w.pid,
                " (plain Python)" if w.plain else "",
                time.monotonic() - w.born,
            )
            self._changed.set()
            for _ in range(self.workers - sum(not v.plain for v in self._live)):
                self._spawn()  # the workers `start` left for after the first
        elif kind in ("compiling", "compiled"):
            self._on_compile(w, kind, value)
            return
        else:
            job = w.job
            if w.state != "busy" or job is None:  # a late reply from a worker being killed
                return
            w.stop_timer()
            w.state, w.job = "idle", None
            if job.warm is not None:
                self._warmed(w, job, failed=kind != "ok")
                if kind != "ok":
                    log.warning("engine warm-up %s: %s", job.label, value)
                then, w.then = w.then, None
                if then is not None and not self._closed and not then.future.done():
                    self._send_job(w, then)  # the decision it was loaded for
                    self._dispatch()
                    return
            else:
                self.jobs_run += 1
                self._timed(job)
            if not job.future.done():
                if kind == "ok":
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)
        if self._closed:
            self._retire(w)
            return
        if w.plain and self._everything is not None and self._everything.done():
            self._retire(w)  # every agent is compiled: nothing left for it
        self._dispatch()

    def _on_compile(self, w: _Worker, kind: str, seconds: float | None) -> None:
        """numba compiles in a job: its cap waits (up to `start_timeout`) and starts again
        when the compile ends (a decision is made again then: `lobby.worker`)."""
        job = w.job
        if w.state != "busy" or job is None or job.warm is not None:
            return
        assert self._loop is not None
        w.stop_timer()
        if kind == "compiling":
            w.timer = self._loop.call_later(self.start_timeout, self._on_deadline, w)
            return
        self.compiles += 1
        self.compile_seconds += seconds or 0.0
        log.info("engine job %s compiled kernels for %.1f s", job.label, seconds or 0.0)
        w.timer = self._loop.call_later(job.cap, self._on_deadline, w)

    def _requeue(self, w: _Worker) -> None:
        """The decision waiting for `w`'s warm-up goes back to the front of the queue."""
        then, w.then = w.then, None
        if then is not None and not then.future.done():
            self._queue.appendleft(then)

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
            if not (self._closed and job.warm is not None):
                log.warning(
                    "engine worker %d died (exit status %d) running %s", w.pid, status, job.label
                )
            if job.warm is not None:
                self._warmed(w, job, failed=True)
            else:
                self.crashes += 1
            _fail(job, WorkerCrashed(f"the worker running {job.label} died (status {status})"))
        elif state == "idle" and not w.plain:
            log.warning("engine worker %d died while idle (exit status %d)", w.pid, status)
        self._changed.set()
        if self._closed:
            return
        self._requeue(w)
        if w.plain:  # needed only while some agent was never compiled
            if w.ready and self._everything is not None and not self._everything.done():
                self._spawn("plain")
            else:  # done with, or it cannot start: the compiled agents answer
                self._fail_plain()
        elif state == "starting":
            log.warning("engine worker %d exited (status %d) before it was ready", w.pid, status)
            self._start_failed()
        else:
            self._spawn()
        self._dispatch()

    def _fail_plain(self) -> None:
        """No plain worker: its queued jobs fail (the compiled agents answer instead)."""
        while self._plain_queue:
            _fail(self._plain_queue.popleft(), WorkerCrashed("no plain Python worker"))

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
        for w in self._live:
            self._requeue(w)
        while self._queue:
            _fail(self._queue.popleft(), PoolClosed("the engine pool is closed"))
        while self._plain_queue:
            _fail(self._plain_queue.popleft(), PoolClosed("the engine pool is closed"))
        for ready in self._ready.values():  # decisions waiting for a warm-up go on (and fail)
            if not ready.done():
                ready.set_result(None)
        if self._everything is not None and not self._everything.done():
            self._everything.add_done_callback(_quiet)
            self._everything.set_exception(PoolClosed("the engine pool is closed"))
        for handle in self._respawns:
            handle.cancel()
        self._respawns.clear()
        if self._thread is not None:
            self._thread.shutdown(wait=False, cancel_futures=True)
        for w in list(self._live):
            if w.state == "idle":
                self._retire(w)
            elif w.state == "starting" or (w.job is not None and w.job.warm is not None):
                w.kill()  # a warm-up has nobody waiting for it
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
