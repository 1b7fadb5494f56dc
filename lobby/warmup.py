"""The engine's warm-up as the pool follows it: the plan's steps in order (an agent asked for
moves to the front), which steps some worker finished or failed, and the estimate of what is
left on this machine. The pool (`lobby.pool`) holds one and tells it what its workers did; why
the warm-up works this way: docs/architecture.md, "The engine pool"."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from engine import warm as warming
from engine.agents.base import AgentSpec, Budget, Decision
from lobby.jobs import warm_in_worker
from lobby.workers import Job, Worker

log = logging.getLogger(__name__)

#: Failed warm-ups of one agent before the pool stops trying it.
WARM_ATTEMPTS = 2
_PRIOR = 5.0  # reference seconds the first guess of the machine's speed weighs
#: Seconds a plain Python answer may take before the compiled agent is asked too.
HEDGE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """How far the engine's warm-up is: agents compiled (or loaded) of those people can
    choose, the ones left (as shown: `Othello expert`), about how many seconds they take,
    whether they compile (else numba only loads them from its cache, in seconds), and the
    engine's kernels compiled (or loaded) in some worker of those the agents need."""

    ready: int
    total: int
    left: tuple[str, ...]
    seconds: float
    compiling: bool
    kernels: int
    kernel_total: int

    @property
    def warm(self) -> bool:
        return self.ready >= self.total

    def progress(self) -> str:
        """`kernels 120 of 310 ready (8 of 20 opponents), about 25 s left`."""
        done = f"kernels {self.kernels} of {self.kernel_total} ready"
        if self.warm:
            return f"{done}, all {self.total} opponents"
        left = max(1, round(self.seconds))
        return f"{done} ({self.ready} of {self.total} opponents), about {left} s left"


@dataclass(frozen=True, slots=True)
class AgentWait:
    """An agent still to compile on this machine: as shown, and about how many seconds its
    compile takes from now."""

    label: str
    seconds: float

    def note(self) -> str:
        """The line for someone starting a game against it."""
        return (
            f"{self.label} is still being compiled on this machine after an install or update,"
            f" for about {max(1, round(self.seconds))} s more: its first move may wait for it."
        )


def read_plan() -> tuple[list[warming.WarmStep], dict[str, float], set[str]]:
    """The warm-up's plan, each step's cost and the steps `cached()` (run in a thread: it reads
    the cache's notes). A step this machine compiled before (an update changed its code since)
    costs what it took then, in the reference machine's seconds (`first_guess` turns them
    back into this machine's)."""
    plan = warming.warm_plan()
    cached = {step.key for step in plan if step.cached()}
    costs = {s.key: warming.LOAD_COST if s.key in cached else s.cost() for s in plan}
    recorded = warming.recorded_seconds()
    factor = warming.machine_factor(recorded)
    if factor is not None:
        for key in costs.keys() & recorded.keys() - cached:
            costs[key] = max(warming.LOAD_COST, recorded[key] / factor)
    return plan, costs, cached


def first_guess() -> float:
    """A first guess of how much slower than the reference this machine is: as much as its
    recorded compiles were (`engine.warm.machine_factor`; 1 without a record), times the square
    root of its load per core (Linux shares the CPU between sessions before processes: the
    bot's session gets its share however many processes the others run)."""
    factor = warming.machine_factor(warming.recorded_seconds()) or 1.0
    return factor * warming.load_slowness(warming.load_per_core())


class Warmup:
    """The warm-up's plan and progress (touched on the loop's thread only)."""

    def __init__(self) -> None:
        # its steps in order, their costs on the reference machine, the steps some worker
        # finished (key -> seconds it took) or failed, and when it began
        self._plan: list[warming.WarmStep] = []
        self._costs: dict[str, float] = {}
        self._done: dict[str, float] = {}
        self._failed: dict[str, int] = {}
        self._began = time.monotonic()
        self._slowness = self._guess = 1.0  # seconds here per second on the reference machine
        self._measured = [0.0, 0.0]  # seconds here, and on the reference machine, of compiles
        self._ready: dict[str, asyncio.Future[None]] = {}  # `step_ready`
        self.planned = False  # whether `status()` knows the plan
        self._cached: set[str] = set()  # steps compiled before this start (loads only)
        self._order: dict[str, int] = {}  # the plan's first order (`_take_over`)
        self._counts: dict[str, int] = {}  # kernels a step took over (`_take_over`)
        self._taken: set[str] = set()  # the steps that took over their family's compile
        self._everything: asyncio.Future[None] | None = None
        self._kernels: set[str] = set()  # the engine's kernels some worker compiled or loaded
        self._ahead = 0  # ... of which decisions compiled first, for steps not done yet
        self._during: dict[str, int] = {}  # ... of which a step's own warm-ups compiled
        self._decided = -math.inf  # when a decision last compiled a kernel (monotonic)

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        """The pool starts: the warm-up's clock too."""
        self._began = time.monotonic()
        self._everything = loop.create_future()

    def without_plan(self) -> None:
        """No warm-up to follow (a pool without one, or one that warmed up in a thread)."""
        self.planned = True
        if self._everything is not None and not self._everything.done():
            self._everything.set_result(None)

    def use_plan(
        self, planned: tuple[list[warming.WarmStep], dict[str, float], set[str]], guess: float
    ) -> bool:
        """The plan `read_plan` read, and the first guess of the machine's speed; whether
        something is left to compile (else every step only loads from numba's cache)."""
        self._plan, self._costs, self._cached = planned
        self._order = {step.key: i for i, step in enumerate(self._plan)}
        self.planned = True
        self._slowness = self._guess = guess
        return len(self._cached) < len(self._plan)

    @property
    def started(self) -> bool:
        return self._everything is not None

    @property
    def finished(self) -> bool:
        """Every step of the plan is done (or given up)."""
        return self._everything is not None and self._everything.done()

    async def everything(self) -> None:
        """Wait until every agent of the plan is compiled (or loaded) in a worker."""
        if self._everything is None:
            raise RuntimeError("the engine pool is not started")
        await asyncio.shield(self._everything)

    def kernel(self, kernel: tuple[str, bool], job: Job | None) -> None:
        """A worker running `job` compiled the engine's kernel (a function and its signature)
        or loaded it from numba's cache: (its name, whether it compiled). A kernel compiled
        first counts for the step of the job's agent, up to that step's count (`KERNELS`);
        beyond, for the steps not begun (its family's, which it compiled ahead of them)."""
        name, compiled = kernel
        fresh = compiled and name not in self._kernels
        self._kernels.add(name)
        if not fresh or job is None:
            return
        if job.warm is None:
            self._decided = time.monotonic()  # the warm-ups under way wait for the CPU
        key = job.warm.key if job.warm is not None else job.step
        step = next((s for s in self._plan if s.key == key), None)
        if (
            step is not None
            and key not in self._done
            and self._during.get(step.key, 0) < self._count(step)
        ):
            self._during[step.key] = self._during.get(step.key, 0) + 1
            return
        self._ahead += 1

    def status(self, live: Iterable[Worker]) -> EngineStatus:
        """How far the warm-up is, and about how long the rest takes here, given the `live`
        workers (the warm-ups they run now)."""
        left = [step for step in self._plan if step.key not in self._done]
        total = len(self._plan)
        compiling = any(s.key not in self._cached for s in left)
        labels = tuple(s.label for s in left)
        kernels, kernel_total = self.kernel_counts()
        seconds = self._seconds_left(left, live)
        return EngineStatus(
            total - len(left), total, labels, seconds, compiling, kernels, kernel_total
        )

    def _seconds_left(self, left: list[warming.WarmStep], live: Iterable[Worker]) -> float:
        """About how long the steps `left` take here. A step has done as much of its cost as
        of its kernels compiled (by its warm-up, or by a decision of its agent: a person's
        first move); the kernels compiled ahead of their step are as much of the cost of the
        steps not begun. A step under way has done as much of its cost as the time it ran, if
        that is less, until it is past its estimate: then it has left as much as of its
        kernels not compiled, and shows this machine slower still, unless a decision compiled
        meanwhile (a warm-up gives it the CPU)."""
        running = {key: started for key, started in under_way(live)}
        now, waiting, kernels = time.monotonic(), 0.0, 0
        rest: dict[str, tuple[float, float, int]] = {}
        for step in left:
            cost, count = self._costs.get(step.key, warming.DEFAULT_COST), self._count(step)
            undone = 1.0 - min(1.0, self._during.get(step.key, 0) / count) if count else 1.0
            rest[step.key] = cost, undone, count
            if step.key not in running and count:
                waiting += cost * undone
                kernels += count - self._during.get(step.key, 0)
        seconds = sum(cost * undone for cost, undone, _ in rest.values())
        if kernels > 0:
            seconds -= min(1.0, self._ahead / kernels) * waiting
        slowness = max(
            [self._slowness]
            + [
                self._measure(now - started, rest[key][0])
                for key, started in running.items()
                if key in rest and started > self._decided
            ]
        )
        seconds *= slowness
        for key, started in running.items():
            if key in rest:  # (a load of a step done costs nothing here)
                cost, undone, count = rest[key][0] * slowness, rest[key][1], rest[key][2]
                by_time = cost - (now - started)
                left_here = undone * cost if by_time <= 0 and count else min(undone * cost, by_time)
                seconds -= undone * cost - max(0.0, left_here)
        return max(0.0, seconds)

    def kernel_counts(self) -> tuple[int, int]:
        """The engine's kernels ready in some worker, of those the plan needs (`KERNELS`). A
        kernel loaded from numba's cache holds the machine code of those it calls (they are
        not loaded on their own): a step done counts all of its own. More kernels than the
        plan's count make the total (a table older than the code)."""
        needed = sum(self._count(step) for step in self._plan)
        done = sum(self._count(step) for step in self._plan if step.key in self._done)
        ready = max(len(self._kernels), done)
        if self._plan and len(self._done) == len(self._plan):
            ready = max(ready, needed)
        return ready, max(needed, ready)

    def wait_for(self, spec: AgentSpec, game: str, live: Iterable[Worker]) -> AgentWait | None:
        """How long the agent `spec` of `game` has to compile still (None if it is ready, was
        compiled before this start, or is not in the plan), given the `live` workers. Asked
        for, it compiles at once (`hurry`, or in the decision's own worker)."""
        step = next((s for s in self._plan if s.spec == spec and s.game == game), None)
        if step is None or not self.compiles(step.key):
            return None
        seconds = self._alone(step) * self._slowness
        started = dict(under_way(live)).get(step.key)
        if started is not None:
            seconds -= time.monotonic() - started
        return AgentWait(step.label, max(0.0, seconds))

    def _alone(self, step: warming.WarmStep) -> float:
        """The reference seconds `step` compiles if it is next: its cost, or as much as it
        costs alone while the agent of its family that the plan has first is not done."""
        mine = self._costs.get(step.key, warming.DEFAULT_COST)
        order = self._order.get(step.key, len(self._order))
        for other in self._plan:
            if (
                other.key not in self._done
                and self._order.get(other.key, len(self._order)) < order
                and other.family() == step.family()
            ):
                return max(mine, warming.ALONE.get(step.key, mine))
        return mine

    def is_done(self, key: str | None) -> bool:
        """Whether some worker has warmed the step `key`."""
        return key in self._done

    def compiles(self, key: str | None) -> bool:
        """Whether the step `key` has kernels to compile (no worker warmed it, and it was not
        compiled before this start)."""
        return key is not None and key not in self._done and key not in self._cached

    def step(self, key: str) -> warming.WarmStep:
        return next(step for step in self._plan if step.key == key)

    def next_step(self, warmed: set[str], under_way: set[str | None]) -> warming.WarmStep | None:
        """The first step of the plan a worker that did `warmed` has not done; one that another
        worker is compiling for the first time (`under_way`) waits for it (it would compile
        the same kernels)."""
        for step in self._plan:
            if step.key in warmed or self._failed.get(step.key, 0) >= WARM_ATTEMPTS:
                continue
            if step.key in under_way and step.key not in self._done:
                continue
            return step
        return None

    def hurry(self, spec: AgentSpec, game: str, live: Iterable[Worker] = ()) -> str:
        """Move the step of an agent asked for before the steps not done yet (adding it to
        the plan if it is not in it), given the `live` workers; its key."""
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
        self._take_over(step, live)  # (its decision or its warm-up compiles first)
        if self._everything is not None and self._everything.done():
            self._everything = asyncio.get_running_loop().create_future()
        return step.key

    def plain_worth(self, step: str, budget: Budget) -> bool:
        """Whether a plain Python answer is worth asking for the agent of `step`: no worker has
        warmed it yet and its compile takes longer than a plain Python search with this
        budget (`engine.warm.plain_worth`)."""
        if step in self._done or step in self._cached:
            return False
        return warming.ALONE.get(step, warming.DEFAULT_COST) >= warming.plain_worth(budget)

    def step_ready(self, key: str) -> asyncio.Future[None]:
        """Done when some worker has warmed the step `key` (or the pool gave up on it)."""
        ready = self._ready.get(key)
        if ready is None:
            ready = self._ready[key] = asyncio.get_running_loop().create_future()
            if key in self._done or self._failed.get(key, 0) >= WARM_ATTEMPTS:
                ready.set_result(None)
        return ready

    def job(
        self, step: warming.WarmStep, gentle: bool, cap: float, for_people: bool = False
    ) -> Job:
        """A warm-up step for one worker; `gentle` in a thread of low priority (while another
        worker is free for people: a single worker's warm-up delays every move behind it);
        `for_people`: a load on the worker kept for people (`Job.for_people`)."""
        label = f"warm[{step.key}]"
        future = asyncio.get_running_loop().create_future()
        job = Job(warm_in_worker, (step, gentle), cap, label, future)
        job.future.add_done_callback(quiet)  # nobody awaits a warm-up
        job.warm, job.step, job.for_people = step, step.key, for_people
        return job

    def next_for(self, w: Worker, live: Iterable[Worker]) -> warming.WarmStep | None:
        """The next step for the worker `w` among the `live` ones (none for the plain one)."""
        if w.plain:
            return None
        live = list(live)
        step = self.next_step(w.warmed, {v.job.step for v in live if v.job})
        if step is not None and self.compiles(step.key):
            self._take_over(step, live)  # (it compiles now: what it takes over is known)
        return step

    def next_load_for(self, w: Worker) -> warming.WarmStep | None:
        """The next step `w` has not done that only loads from numba's cache (compiled before
        this start, or by another worker: quick), none for the plain one."""
        if w.plain:
            return None
        for step in self._plan:
            compiled = step.key in self._done or step.key in self._cached
            if not compiled or step.key in w.warmed:
                continue
            if self._failed.get(step.key, 0) < WARM_ATTEMPTS:
                return step
        return None

    def plain_helps(self, step: str, budget: Budget, live: Iterable[Worker]) -> bool:
        """Whether the plain worker should answer for the agent of `step`: it is worth it
        (`plain_worth`), and the plain worker is there among the `live` ones."""
        if not self.plain_worth(step, budget):
            return False
        return any(w.plain and w.state in ("starting", "idle", "busy") for w in live)

    def ended(self, w: Worker, job: Job, failed: bool, live: Iterable[Worker]) -> None:
        """The warm-up `job` ended in `w` (or failed, and killed it); once every step is
        done, the idle plain worker among the `live` ones retires."""
        step = job.warm
        assert step is not None
        if not failed:
            w.warmed.add(step.key)
        began = job.started or time.monotonic()
        took = time.monotonic() - began
        if self.warmed(step, took, failed, measured=began > self._decided):
            for v in live:  # no more first moves to answer in plain Python
                if v.plain and v.state == "idle":
                    v.retire()  # (a busy one retires once its answer is in)

    def _count(self, step: warming.WarmStep) -> int:
        """The kernels `step` compiles (`KERNELS`, or what it took over of its family's)."""
        return self._counts.get(step.key, step.kernels())

    def _take_over(self, step: warming.WarmStep, live: Iterable[Worker] = ()) -> None:
        """`step` compiles before an agent of its family (same game and module) that the plan
        had first, and no worker of the `live` ones compiles that one now: it compiles their
        shared kernels, so it takes over that one's cost, as much as it costs alone, and as
        large a share of its kernels; that one keeps the rest (so the estimate of what is left
        stays true while it runs, not only once it is done). Once a step."""
        if step.key in self._taken or step.key in self._cached:
            return
        family = step.family()
        order = self._order.get(step.key, len(self._order))
        busy = {key for key, _ in under_way(live)}
        other = next(
            (
                s
                for s in sorted(self._plan, key=lambda s: self._order.get(s.key, len(self._order)))
                if s.key not in self._done
                and s.family() == family
                and self._order.get(s.key, len(self._order)) < order
            ),
            None,
        )
        if other is None or other.key in busy:
            return
        self._taken.add(step.key)
        mine = self._costs.get(step.key, warming.DEFAULT_COST)
        theirs = self._costs.get(other.key, warming.DEFAULT_COST)
        taken = max(mine, min(theirs, warming.ALONE.get(step.key, theirs)))
        self._costs[step.key] = taken
        self._costs[other.key] = max(warming.LOAD_COST, theirs + mine - taken)
        kernels = self._count(other)
        moved = round(kernels * min(1.0, (taken - mine) / theirs)) if theirs > 0 else 0
        self._counts[step.key] = self._count(step) + moved
        self._counts[other.key] = kernels - moved

    def _measure(self, took: float, cost: float) -> float:
        """How much slower than the reference this machine is, with a step of `cost` that took
        `took` here beside the steps measured so far (the first guess weighs as much as
        `_PRIOR` seconds of them)."""
        took_all, cost_all = self._measured
        return max(0.2, (self._guess * _PRIOR + took_all + took) / (_PRIOR + cost_all + cost))

    def warmed(
        self, step: warming.WarmStep, took: float, failed: bool, measured: bool = True
    ) -> bool:
        """A worker finished the step in `took` seconds (or failed it); whether every step of
        the plan is done now (it just became so). Not `measured`: a decision compiled
        meanwhile, and had the CPU first (its time says nothing of this machine's speed)."""
        if failed:
            self._failed[step.key] = self._failed.get(step.key, 0) + 1
        elif step.key not in self._done:
            self._done[step.key] = took
            if step.key not in self._cached:  # what it did not compile, decisions had
                found = self._count(step) - self._during.pop(step.key, 0)
                self._ahead = max(0, self._ahead - max(0, found))
            self._take_over(step)
            cost = self._costs.get(step.key, warming.DEFAULT_COST)
            if measured:
                self._slowness = self._measure(took, cost)
                self._measured[0] += took
                self._measured[1] += cost
            log.info("engine: %s ready in %.1f s", step.label, took)
        ready = self._ready.get(step.key)
        given_up = self._failed.get(step.key, 0) >= WARM_ATTEMPTS
        if ready is not None and not ready.done() and (step.key in self._done or given_up):
            ready.set_result(None)
        if self._everything is None or self._everything.done():
            return False
        if all(s.key in self._done or self._failed.get(s.key, 0) >= WARM_ATTEMPTS
               for s in self._plan):  # fmt: skip
            self._everything.set_result(None)
            log.info("engine: every agent ready in %.1f s", time.monotonic() - self._began)
            return True
        return False

    def close(self, error: BaseException) -> None:
        """The pool closes: decisions waiting for a warm-up go on (and fail), and whoever waits
        for `everything()` gets `error`."""
        for ready in self._ready.values():
            if not ready.done():
                ready.set_result(None)
        if self._everything is not None and not self._everything.done():
            self._everything.add_done_callback(quiet)
            self._everything.set_exception(error)


def under_way(live: Iterable[Worker]) -> list[tuple[str, float]]:
    """The (step, monotonic start) of the warm-ups the `live` workers run now."""
    return [
        (w.job.warm.key, w.job.started)
        for w in live
        if w.job is not None and w.job.warm is not None and w.job.started is not None
    ]


def quiet(future: asyncio.Future[Any]) -> None:
    """Mark a future's exception as seen (asyncio logs unseen ones)."""
    if not future.cancelled():
        future.exception()


async def first_answer(
    plain: Coroutine[Any, Any, Decision],
    ready: Awaitable[None],
    compiled: Callable[[], Awaitable[Decision]],
    budget: Budget,
    label: str,
) -> Decision:
    """A decision while its agent compiles: the `plain` Python worker's answer if it is the
    agent's own move (`engine.warm.plain_complete`), else the `compiled` agent's, asked once
    the agent is `ready` or the plain answer is late (`HEDGE_SECONDS`, for a budget of depth
    or nodes) or not complete; the first of the two answers counts."""
    tasks: dict[str, asyncio.Future[Any]] = {
        "plain": asyncio.ensure_future(plain),
        "ready": asyncio.ensure_future(ready),
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
                tasks["compiled"] = asyncio.ensure_future(compiled())
                tasks.pop("ready")
            if "plain" not in tasks:
                return await tasks["compiled"]  # type: ignore[no-any-return]
    finally:
        for task in tasks.values():
            if isinstance(task, asyncio.Task):
                task.cancel()  # a queued job is dropped; a running one ends unread


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
