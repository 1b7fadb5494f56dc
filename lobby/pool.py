"""The engine pool: agents think in worker processes the pool supervises, one job per worker.

Why this shape (docs/architecture.md, "The engine pool"):

- A worker is a `python -m lobby.worker` process started with `subprocess` (fork+exec: never a
  bare fork of the bot, which runs threads), speaking length-prefixed pickles over two pipes of
  its own (`lobby.workers`). No `multiprocessing`: no resource tracker to outlive the bot, no
  shared executor that one dead worker breaks for every job in flight. With one job per worker
  the pool knows which process runs which job, so it can kill exactly that one.
- Every job has a wall-clock cap counted from its start on a worker. Past it the worker is
  SIGKILLed and the job raises `JobTimeout`; a worker that dies mid-job fails only that job
  (`WorkerCrashed`). Either way a replacement starts in the background. The pool never
  retries a job: the caller decides (the lobby falls back to a cheaper agent).
- Workers die with the bot, kill -9 included (see `lobby.worker`), sit in their own process
  group and ignore SIGINT, so Ctrl-C in a terminal reaches the bot alone. They are started
  from the loop's thread: Linux's parent-death signal follows the thread that started them.
- Workers are ready as soon as the engine is imported and warm one agent at a time in the
  background (`lobby.warmup`); the cap of a job stops while numba compiles in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import random
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import faults
from engine import warm as warming
from engine.agents.base import AgentSpec, Budget, Decision
from engine.games.base import GameState
from lobby.inthread import InThread
from lobby.joberrors import JobTimeout, PoolClosed, WorkerCrashed
from lobby.jobs import after_wait, choose_in_worker
from lobby.warmup import AgentWait, EngineStatus, Warmup, first_answer, first_guess, read_plan
from lobby.workers import MAX_TIMINGS, Job, JobQueue, JobTiming, Worker, fail, no_signals

log = logging.getLogger(__name__)

T = TypeVar("T")

_COMMAND = [sys.executable, "-m", "lobby.worker"]  # fork+exec of a fresh interpreter
_START_ATTEMPTS = 3  # start failures in a row before `start()` gives up and queued jobs fail
_MAX_BACKOFF = 30.0


class EnginePool:
    """`await pool.choose(state, spec, budget)` -> Decision, computed in a worker process.

    `workers=0` runs jobs in a thread of this process instead (for tests of the code above the
    pool): one at a time, with the same caps, but a thread cannot be killed, so a job past its
    cap raises `JobTimeout` and goes on running in the background. The bot always uses
    processes. `warm=False` skips the warm-up and the plain worker (tests); `ceiling` bounds
    every job's cap; `untimed` is the cap of a decision whose budget has no time (such agents
    answer in milliseconds: a depth-limited search, a lookup), so a hung one is replaced quickly.
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
        self.extra = 0  # workers beyond `workers` while the warm-up compiles (one, or none)
        self.start_failures = 0  # in a row; reset by a worker that starts
        self.compiles = 0  # chains of kernels numba compiled inside jobs
        self.compile_seconds = 0.0
        self._seed = random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue = JobQueue()
        self._live: list[Worker] = []
        self._respawns: set[asyncio.TimerHandle] = set()
        self._changed = asyncio.Event()
        self._sender: ThreadPoolExecutor | None = None
        self._thread: InThread | None = None  # workers=0
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        #: The warm-up's plan and how far it is.
        self.warmup = Warmup()
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
        return self.warmup.planned

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
        self.warmup.begin(self._loop)
        if self.workers == 0:
            self._thread = InThread()
            if self.warm:
                await self._thread.warm_up()
            self.warmup.without_plan()
            return
        self._sender = ThreadPoolExecutor(
            self.workers, thread_name_prefix="engine-send", initializer=no_signals
        )
        cold = False
        if self.warm:  # the plan's notes are files (and digests of the engine's source)
            planned = await self._loop.run_in_executor(self._sender, read_plan)
            cold = self.warmup.use_plan(planned, first_guess())
        else:
            self.warmup.without_plan()
        # With a warm-up, one worker first: the others start once it is ready, so on a busy
        # machine the first is not slowed by their start (a start is a second of CPU)
        for _ in range(1 if self.warm else self.workers):
            self._spawn()
        if cold:  # first moves while the agents compile; one worker more meanwhile (people's
            self._spawn("plain")  # moves never wait behind the warm-up's compiles)
            self.extra = int(self.workers >= 2)
        while sum(w.state in ("idle", "busy") and not w.plain for w in self._live) < self.workers:
            if self.start_failures >= _START_ATTEMPTS or self._closed:
                await self.close()
                raise RuntimeError("engine workers fail to start (see the log and stderr)")
            self._changed.clear()
            await self._changed.wait()

    async def everything(self) -> None:
        """Wait until every agent of the warm-up's plan is compiled (or loaded) in a worker."""
        await self.warmup.everything()

    def status(self) -> EngineStatus:
        """How far the warm-up is, and about how long the rest takes here."""
        return self.warmup.status(self._live)

    def wait_for(self, spec: AgentSpec, game: str) -> AgentWait | None:
        """How long the agent still has to compile (None: it is ready, or only loads)."""
        return self.warmup.wait_for(spec, game, self._live)

    async def choose(
        self,
        state: GameState,
        spec: AgentSpec,
        budget: Budget,
        seed: int | None = None,
        memory: Mapping[bytes, bytes] | None = None,
        *,
        urgent: bool = False,
        asked: float | None = None,
    ) -> Decision:
        """One decision; `memory` is handed to a learning agent before it chooses. `urgent`:
        a person is waiting for it, so it goes before the queued jobs that are not (bot
        matches, training); `asked`: when that person began to wait (`time.monotonic()`),
        if before now: the wait for the answer counts from then (`lobby.jobs.after_wait`).

        An agent no worker compiled yet is warmed first (before the rest of the plan). Until
        then the plain Python worker, if there is one, answers for it where that is the
        agent's own move (`engine.warm.plain_budget`, `plain_complete`); if it has not answered
        within `lobby.warmup.HEDGE_SECONDS` (a depth or nodes budget: it is quick), the compiled
        agent is asked too (compiling what it needs), and the first answer counts."""
        seed = self._seed.randrange(2**63) if seed is None else seed
        label = f"{choose_in_worker.__name__}[{spec.label()}]"
        step = self._hurry(spec, state.game)
        args = (state, spec, budget, seed, memory)
        cap = self.cap_for(budget)
        plain = warming.plain_budget(budget)
        if plain is None or step is None or not self.warmup.plain_helps(step, budget, self._live):
            result: Decision = await self._submit(
                choose_in_worker, args, cap, label, urgent, step=step, asked=asked
            )
            return result
        plain_args = (state, spec, plain, seed, memory)
        plain_cap = min(warming.PLAIN_SECONDS + 1.0, self.ceiling)
        return await first_answer(
            self._submit(
                choose_in_worker,
                plain_args,
                plain_cap,
                f"{label} (plain)",
                urgent,
                plain=True,
                asked=asked,
            ),
            self.warmup.step_ready(step),
            lambda: self._submit(
                choose_in_worker, args, cap, label, urgent, step=step, asked=asked
            ),
            budget,
            label,
        )

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
        *,
        plain: bool = False,
        step: str | None = None,
        asked: float | None = None,
    ) -> Any:
        if self._closed:
            raise PoolClosed("the engine pool is closed")
        if self._loop is None:
            raise RuntimeError("the engine pool is not started")
        job = Job(fn, args, cap, label, self._loop.create_future(), step=step)
        if self.workers == 0:
            return await self._run_in_thread(job)
        job.urgent, job.plain = urgent, plain
        if asked is not None:
            job.asked = min(asked, job.queued)
        self._queue.put(job)
        self._dispatch()
        return await job.future

    async def _run_in_thread(self, job: Job) -> Any:
        if self._thread is None:
            raise PoolClosed("the engine pool is closed")
        try:
            outcome, value = await self._thread.run(job)
        finally:
            if job.started is not None:  # it ran (its own exception, if any, goes on up)
                self.jobs_run += 1
                self.timings.append(JobTiming.of(job))
        if outcome == "ok":
            return value
        if outcome == "closed":
            raise PoolClosed("the engine pool is closed")
        if outcome == "crash":
            self.crashes += 1
            raise WorkerCrashed(f"{job.label}: crash injected")
        self.timeouts += 1
        log.warning(
            "engine job %s passed its %.1f s cap (left running in its thread)", job.label, job.cap
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
            w = Worker.take_early(mode) or Worker(mode, _COMMAND)  # (or one bot.py started)
        except OSError:
            log.exception("cannot start an engine worker")
            self._start_failed()
            return
        self._live.append(w)
        w.timer = self._loop.call_later(self.start_timeout, self._on_deadline, w)
        w.listen(
            functools.partial(self._post, self._on_message, w),
            functools.partial(self._post, self._on_exit, w),
        )

    def _start_failed(self) -> None:
        """Retry later, waiting longer after each failure in a row; if no worker is up, the
        queued jobs fail rather than wait forever."""
        self.start_failures += 1
        delay = min(_MAX_BACKOFF, 0.5 * 2 ** (self.start_failures - 1))
        failed = "engine worker failed to start (%d in a row); retrying in %.1f s"
        log.warning(failed, self.start_failures, delay)
        if self.start_failures >= _START_ATTEMPTS and not any(
            w.state in ("idle", "busy") for w in self._live
        ):
            self._queue.fail_jobs(lambda: WorkerCrashed("no engine worker can start"))
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
            background = sum(1 for w in self._live if w.state == "busy" and not w.urgent)
            job = self._queue.take(background, self.workers)
            if job is None:
                break  # only jobs for the spare worker remain: it stays for a person
            if job.future.done():  # its caller gave up while it waited
                continue
            # a worker that has warmed the job's agent, if one is idle
            w = next((w for w in idle if job.step in w.warmed), idle[-1])
            idle.remove(w)
            if job.step is not None and job.step not in w.warmed and self.warmup.is_done(job.step):
                job.taken = time.monotonic()  # its wait ends; its worker loads the agent first
                w.then = job  # compiled by another worker: loaded here first, uncapped
                load = self.warmup.job(self.warmup.step(job.step), False, self.start_timeout)
                load.for_people = job.urgent  # a person waits for it
                self._send_job(w, load)
            else:
                self._send_job(w, job)
                if job.urgent and self.warmup.compiles(job.step):
                    self._drop_warm_up(job.step)
        plain = next((w for w in self._live if w.plain and w.state == "idle"), None)
        if plain is not None and (answer := self._queue.take_plain()) is not None:
            self._send_job(plain, answer)
        if any(job.urgent for job in self._queue):
            return
        # the worker kept for people stays free while the others start: a person's first move
        # (asked for as the bot starts) goes to it at once, not behind a load or their start
        starting = any(v.state == "starting" and not v.plain for v in self._live)
        for w in idle:  # the warm-up, while no person's job waits; the worker kept for
            # people only loads (seconds once, not at a person's move), beside the bot jobs
            free = not self._queue and self._background_slot()
            if free:
                step = self.warmup.next_for(w, self._live)
            else:
                step = None if starting else self.warmup.next_load_for(w)
            if step is not None:
                gentle = self.workers >= 2
                self._send_job(w, self.warmup.job(step, gentle, self.start_timeout, not free))

    def _send_job(self, w: Worker, job: Job) -> None:
        """Start `job` on the idle worker `w`; its cap starts now."""
        assert self._loop is not None and self._sender is not None
        job.started = time.monotonic()
        if job.fn is choose_in_worker and not job.waited:  # (sent again: not twice)
            since = job.queued if job.asked is None else job.asked
            job.args, job.waited = after_wait(job.args, job.started - since), True
        if job.warm is None:
            job.fault = faults.fire("job")  # counted here: deterministic across restarts
        w.state, w.job = "busy", job
        w.timer = self._loop.call_later(job.cap, self._on_deadline, w)
        self._sender.submit(w.send, job, functools.partial(self._post, self._on_unsent, w, job))

    def _background_slot(self) -> bool:
        """Whether a warm-up may start: with two workers or more, one that is up stays for
        people (while the others start, too), two with the extra worker of a cold start."""
        up = [w for w in self._live if w.state in ("idle", "busy") and not w.plain]
        background = sum(1 for w in up if w.state == "busy" and not w.urgent)
        return self.workers < 2 or background < min(len(up), self.workers) - 1

    # --- the warm-up (on the loop's thread) ---

    def _drop_warm_up(self, step: str | None) -> None:
        """A person's decision compiles `step` itself: a background warm-up of it elsewhere
        would compile the same kernels, so it stops (the step is warmed later, from the cache)."""
        for v in self._live:
            if v.job is not None and v.job.warm is not None and v.job.step == step and not v.urgent:
                v.job, v.state = None, "killed"
                v.kill()  # its exit starts a replacement

    def _hurry(self, spec: AgentSpec, game: str) -> str | None:
        """The warm-up step of an agent asked for, moved to the front (None without a warm-up)."""
        if not self.warm or self.workers == 0 or not self.warmup.planned:
            return None
        return self.warmup.hurry(spec, game, self._live)

    def _warmed(self, w: Worker, job: Job, failed: bool) -> None:
        """A warm-up step ended in `w` (or failed, and killed it)."""
        if failed and not self._closed:
            assert job.warm is not None
            log.warning("engine warm-up of %s failed in worker %d", job.warm.label, w.pid)
        self.warmup.ended(w, job, failed, self._live)

    def _on_deadline(self, w: Worker) -> None:
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
            fail(job, JobTimeout(f"{job.label} ran past its {job.cap:.1f} s cap"))
        else:
            return
        w.state = "killed"
        w.kill()  # its reader thread reports the exit, which starts a replacement

    def _on_message(self, w: Worker, msg: tuple[str, Any]) -> None:
        kind, value = msg
        if kind == "ready":
            if w.state != "starting":
                return
            w.stop_timer()
            w.state, w.ready = "idle", True
            self.workers_started += not w.plain
            self.start_failures = 0
            log.info(
                "engine worker %d%s ready in %.2f s",
                w.pid,
                " (plain Python)" if w.plain else "",
                time.monotonic() - w.born,
            )
            self._changed.set()
            for _ in range(self.workers + self.extra - sum(not v.plain for v in self._live)):
                self._spawn()  # the workers `start` left for after the first
        elif kind in ("compiling", "compiled"):
            self._on_compile(w, kind, value)
            return
        elif kind == "kernel":  # compiled or loaded, in any job: the warm-up's progress
            self.warmup.kernel(value, w.job)
            return
        else:
            job = w.job
            if w.state != "busy" or job is None:  # a late reply from a worker being killed
                return
            w.idle()
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
                self.timings.append(JobTiming.of(job))
            if not job.future.done():
                if kind == "ok":
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)
        if self._closed:
            w.retire()
            return
        if self.warmup.finished:  # every agent is compiled: nothing left for the plain
            self.extra = 0  # worker, nor for the extra one (any worker beyond `workers`)
            up = sum(v.state in ("starting", "idle", "busy") and not v.plain for v in self._live)
            if w.plain or up > self.workers:
                w.retire()
        self._dispatch()

    def _on_compile(self, w: Worker, kind: str, seconds: float | None) -> None:
        """numba compiles or loads kernels in a job: its cap waits (up to `start_timeout`) and
        starts again when that ends (a decision is made again after a compile: lobby.worker)."""
        job = w.job
        if w.state != "busy" or job is None or job.warm is not None:
            return
        assert self._loop is not None
        w.stop_timer()
        if kind == "compiling":
            w.timer = self._loop.call_later(self.start_timeout, self._on_deadline, w)
            return
        if seconds is not None:  # (None: kernels loaded from numba's cache)
            self.compiles += 1
            self.compile_seconds += seconds
            log.info("engine job %s compiled kernels for %.1f s", job.label, seconds)
        w.timer = self._loop.call_later(job.cap, self._on_deadline, w)

    def _requeue(self, w: Worker) -> None:
        """The decision waiting for `w`'s warm-up goes back to the front of the queue."""
        then, w.then = w.then, None
        if then is not None and not then.future.done():
            self._queue.put_back(then)

    def _on_unsent(self, w: Worker, job: Job, exc: Exception) -> None:
        """The job could not be pickled: nothing reached the worker, which is idle again."""
        if w.job is job and w.state == "busy":
            w.idle()
            if not job.future.done():
                job.future.set_exception(exc)
            if self._closed:
                w.retire()
            else:
                self._dispatch()

    def _on_exit(self, w: Worker, status: int) -> None:
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
            fail(job, WorkerCrashed(f"the worker running {job.label} died (status {status})"))
        elif state == "idle" and not w.plain:
            log.warning("engine worker %d died while idle (exit status %d)", w.pid, status)
        self._changed.set()
        if self._closed:
            return
        self._requeue(w)
        if w.plain:  # needed only while some agent was never compiled
            if w.ready and self.warmup.started and not self.warmup.finished:
                self._spawn("plain")
            else:  # done with, or it cannot start: the compiled agents answer
                self._queue.fail_plain(lambda: WorkerCrashed("no plain Python worker"))
        elif state == "starting":
            log.warning("engine worker %d exited (status %d) before it was ready", w.pid, status)
            self._start_failed()
        elif state != "retiring":  # (the extra worker retires once every agent is compiled)
            self._spawn()
        self._dispatch()

    # --- the threads (blocking I/O) ---

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        assert self._loop is not None
        # RuntimeError: the loop is closed, the bot is exiting (and the workers with it)
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(fn, *args)

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
        self._queue.fail_jobs(lambda: PoolClosed("the engine pool is closed"))
        self._queue.fail_plain(lambda: PoolClosed("the engine pool is closed"))
        self.warmup.close(PoolClosed("the engine pool is closed"))
        for handle in self._respawns:
            handle.cancel()
        self._respawns.clear()
        if self._thread is not None:
            self._thread.close()
        for w in list(self._live):
            if w.state == "idle":
                w.retire()
            elif w.state == "starting" or (w.job is not None and w.job.warm is not None):
                w.kill()  # a warm-up has nobody waiting for it
        running = [w.exited for w in self._live]
        if running:
            await asyncio.wait(running, timeout=timeout)
        for w in list(self._live):  # jobs that outlived the timeout, workers deaf to EOF
            if w.job is not None:
                fail(w.job, PoolClosed("the engine pool closed while the job ran"))
                w.job = None
            w.kill()
        left = [w.exited for w in self._live]
        if left:
            await asyncio.wait(left, timeout=5.0)  # SIGKILLed: reaped at once
        if self._sender is not None:
            self._sender.shutdown(wait=False)
