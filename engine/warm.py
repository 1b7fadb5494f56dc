"""Compile (or load from numba's cache) the kernels an agent needs, before it moves for real.

numba compiles a kernel on its first call, and keeps the machine code in the user's cache
folder (`engine/kernelcache.py`): a process after the first on a machine only loads it. The
engine pool (`lobby/pool.py`) warms its workers one agent at a time, in the order of
`warm_plan()`: the levels first, easy to expert, then the other opponents people can choose;
an agent someone asks for goes first. A step plays quick moves with its agent at the start,
in the middle and near the end of a game (`warm_step`), so every kernel the agent can meet is
compiled; it leaves a note in the cache (`kernelcache.mark`) that says how long it will take
next time. The bot's own process, which only applies the rules, calls `warm_rules` in a thread.
A worker hears of each of the engine's kernels as numba compiles or loads it (`CompileWatch`):
the pool counts the warm-up's progress in kernels, of all the plan needs (`KERNELS`).

While a step compiles, the pool can answer an agent's first moves with the same agent run as
plain Python (numba's JIT off, `plain_budget`, `plain_complete`): the same search, so the same
move, where its budget is depth or nodes rather than time.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import kernelcache
from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, Decision
from engine.agents.opponents import opponents
from engine.games import GAMES, new_game
from engine.games.base import GameState
from engine.games.catalog import title
from engine.kits import kit_file


def warm_rules() -> None:
    """The kernels the rules use (legal moves, playing, rendering) in both games."""
    rng = random.Random(0)
    for game in GAMES:
        state = new_game(game)
        while not state.is_over():
            state = state.play(rng.choice(state.legal_moves()))
            state.render_emoji()


def warm_positions(game: str, rng: random.Random) -> list[GameState]:
    """The start, a position past the opening (the perfect agent reads the first moves from
    its book) and one near the end (the endgame solvers only run there) of a random game."""
    start = new_game(game)
    states, state = [], start
    while not state.is_over():
        states.append(state)
        state = state.play(rng.choice(state.legal_moves()))
    return [start, states[min(8, len(states) - 1)], states[-10]]


def warm_agent(agent: Agent, picks: list[GameState], rng: random.Random) -> None:
    """One quick move of `agent` in each position, and one by the clock alone in the last
    (some agents solve the end exactly only without a depth cap): its kernels compiled or
    loaded."""
    for pick in picks:
        agent.choose(pick, Budget(time=0.05, nodes=200, depth=2), rng)
    agent.choose(picks[-1], Budget(time=0.05), rng)


# -- the plan ---------------------------------------------------------------------------------

#: Seconds each step compiles from an empty cache, after the steps before it in `warm_plan()`
#: order (kernels shared with an earlier step are loaded, not compiled), on the 2-core
#: reference machine at a load of about 1: `python -m benchmarks.speed.first_run --steps` measures
#: them. A step not listed counts `DEFAULT_COST`; one already compiled, `LOAD_COST`.
COSTS: dict[str, float] = {
    "othello-expert": 12.9,
    "connect4-expert": 4.3,
    "othello-easy": 0.1,
    "connect4-easy": 0.1,
    "othello-medium": 0.1,
    "connect4-medium": 3.3,
    "connect4-trainer": 0.7,
    "connect4-planner": 0.1,
    "connect4-mcts": 2.0,
    "connect4-minimax": 0.1,
    "connect4-expectiminimax": 1.4,
    "connect4-random": 0.1,
    "othello-mcts": 0.9,
    "othello-minimax": 0.1,
    "othello-expectiminimax": 0.1,
    "othello-greedy-first": 0.1,
    "othello-greedy-center": 0.1,
    "othello-greedy-edge": 0.1,
    "othello-greedy-random": 0.1,
    "othello-weightgrid": 0.1,
    "othello-random": 0.1,
}
#: Seconds each step compiles from an empty cache alone (an opponent asked for first).
ALONE: dict[str, float] = {
    "othello-expert": 13.0,
    "connect4-expert": 4.9,
    "othello-easy": 0.3,
    "connect4-easy": 0.4,
    "othello-medium": 12.8,
    "connect4-medium": 3.6,
    "connect4-trainer": 1.3,
    "connect4-planner": 0.6,
    "connect4-mcts": 2.1,
    "connect4-minimax": 3.7,
    "connect4-expectiminimax": 5.2,
    "connect4-random": 0.4,
    "othello-mcts": 2.3,
    "othello-minimax": 14.6,
    "othello-expectiminimax": 13.8,
    "othello-greedy-first": 0.2,
    "othello-greedy-center": 0.2,
    "othello-greedy-edge": 0.2,
    "othello-greedy-random": 0.3,
    "othello-weightgrid": 0.3,
    "othello-random": 0.2,
}
DEFAULT_COST = 2.0
#: A step's least cost: its quick moves, and the loads from the cache.
LOAD_COST = 0.3
#: The engine's kernels (a function compiled for one signature) each step compiles from an
#: empty cache after the steps before it in `warm_plan()` order, so their sum is every kernel
#: the plan needs: `python -m benchmarks.speed.first_run --kernels` counts them. A count
#: depends on the code alone, not on the machine. A step not listed counts `DEFAULT_KERNELS`.
KERNELS: dict[str, int] = {
    "othello-expert": 40,
    "connect4-expert": 25,
    "othello-easy": 0,
    "connect4-easy": 0,
    "othello-medium": 0,
    "connect4-medium": 9,
    "connect4-trainer": 6,
    "connect4-planner": 0,
    "connect4-mcts": 9,
    "connect4-minimax": 0,
    "connect4-expectiminimax": 2,
    "connect4-random": 0,
    "othello-mcts": 4,
    "othello-minimax": 0,
    "othello-expectiminimax": 0,
    "othello-greedy-first": 0,
    "othello-greedy-center": 0,
    "othello-greedy-edge": 0,
    "othello-greedy-random": 0,
    "othello-weightgrid": 0,
    "othello-random": 0,
}
DEFAULT_KERNELS = 5


@dataclass(frozen=True, slots=True)
class WarmStep:
    """One agent to warm: its game and spec, and the names people know it by (two levels may
    be one agent with two budgets)."""

    game: str
    names: tuple[str, ...]
    spec: AgentSpec

    @property
    def key(self) -> str:
        """The step's name in notes and tables: `connect4-medium`."""
        return f"{self.game}-{self.names[0]}"

    @property
    def label(self) -> str:
        """As shown: `Connect Four medium and hard`."""
        names = list(self.names)
        text = names[-1] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"{title(self.game)} {text}"

    def cached(self) -> bool:
        """Whether its note says everything it needs is compiled already (with this code)."""
        return kernelcache.marked(self.key)

    def cost(self) -> float:
        """Seconds it takes on the reference machine after the steps before it in the plan:
        a compile, or a load if it is `cached()`; a step that compiles no kernel of its own
        (its family's are in its worker, or in the cache) takes its quick moves only."""
        if self.cached():
            return LOAD_COST
        if self.kernels() == 0:
            return COSTS.get(self.key, LOAD_COST)
        return max(LOAD_COST, COSTS.get(self.key, DEFAULT_COST))

    def kernels(self) -> int:
        """The kernels it compiles after the steps before it in the plan (`KERNELS`)."""
        return KERNELS.get(self.key, DEFAULT_KERNELS)

    def family(self) -> tuple[str, str]:
        """Its game and the module of its agent's family: steps of one family share most of
        their kernels (the first compiles them, the others load them)."""
        return self.game, registry.AGENTS[self.spec.name].factory.__module__

    def modules(self) -> list[Path]:
        """The file of the agent's family (its kernels' modules are what it imports), and its
        game's kit if the family reaches its game's kernels through it (minimax, mcts)."""
        module = sys.modules[registry.AGENTS[self.spec.name].factory.__module__]
        path = Path(str(module.__file__))
        through_kit = kernelcache.ENGINE / "kits.py" in kernelcache.imports_of(path)
        return [path, kit_file(self.game)] if through_kit else [path]


#: The order of the levels in the plan: the experts first (their first moves cannot be played
#: in plain Python, and Othello's compiles the longest, its search shared with medium and hard),
#: then the others, cheapest first.
PLAN_LEVELS = ("expert", "easy", "medium", "hard")


def warm_plan() -> list[WarmStep]:
    """Every opponent people can choose, once per spec: the levels first (`PLAN_LEVELS`, Othello
    before Connect Four), then the other agents."""
    names: dict[tuple[AgentSpec, str], list[str]] = {}
    for level in PLAN_LEVELS:
        for game in sorted(GAMES, reverse=True):
            lv = registry.LEVELS[game][level]
            names.setdefault((lv.spec, game), []).append(level)
    for game in GAMES:
        for o in opponents(game):
            seen = names.setdefault((o.spec, game), [])
            if o.name not in seen and o.level is None:
                seen.append(o.name)
    return [WarmStep(game, tuple(n), spec) for (spec, game), n in names.items()]


def warm_step(step: WarmStep, agent: Agent | None = None) -> None:
    """Compile (or load) every kernel `step`'s agent can meet (with `agent`, the instance that
    will play: its tables are made too), then note it in the cache."""
    compiles = not step.cached()
    before = compiled_kernels()
    began = time.perf_counter()
    if agent is None:
        agent = registry.build(step.spec, step.game)
    rng = random.Random(0)
    warm_agent(agent, warm_positions(step.game, rng), rng)
    kernelcache.mark(step.key, step.modules())
    compiled = compiled_kernels() - before
    if compiles and compiled == step.kernels() > 0:  # the reference's work (not a load only)
        record_seconds(step.key, time.perf_counter() - began, step.kernels())


def warm_up() -> None:
    """Warm every step of the plan and every registered agent's default spec, in every game:
    numba's whole cache, built at once (the test suite and the chaos run start from it)."""
    plan = warm_plan()
    for step in plan:
        warm_step(step)
    rng = random.Random(0)
    for game in GAMES:
        new_game(game).perft(2)  # type: ignore[attr-defined]
        picks = warm_positions(game, rng)
        for info in registry.agents_for(game):
            warm_agent(registry.build(registry.resolve(info.name, game)[0], game), picks, rng)


# -- this machine's figures --------------------------------------------------------------------

#: Where the seconds each step's last compile took on this machine are kept (a file a step,
#: beside the kernels and the warm-up's notes): the estimate of a warm-up after an update.
RECORD = kernelcache.CACHE / "seconds"


def load_per_core() -> float:
    """The machine's load average over a minute, per core."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return os.getloadavg()[0] / max(1, cpus or 1)


def record_seconds(key: str, seconds: float, kernels: int) -> None:
    """Note that the step `key` compiled its `kernels` in `seconds` here, at the machine's
    present load. Only a step that compiled what it compiles in the reference's figures
    (`KERNELS`: neither a part of them after an update, nor only loads, nor the kernels of an
    agent of its family before it) is noted: its seconds compare with `COSTS`."""
    target = RECORD / f"{''.join(c if c.isalnum() or c in '-_.' else '_' for c in key)}.json"
    data = {"key": key, "seconds": round(seconds, 3), "load": round(load_per_core(), 2)}
    data["kernels"] = kernels
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f"{target.name}.{os.getpid()}")
        part.write_text(json.dumps(data), encoding="utf-8")
        part.replace(target)
    except OSError:  # a cache that cannot be written: the estimates use the reference's
        pass


def recorded_seconds() -> dict[str, float]:
    """Each recorded step's seconds here, as at a load of at most one a core (the load at the
    time divided out as the estimate multiplies it in: its square root, `load_slowness`); a
    record of another count of kernels than the step's now (`KERNELS`) is left out, and so is
    one of a step that compiles none (its time is the warm-up's own work, not a compile's)."""
    out: dict[str, float] = {}
    try:
        files = list(RECORD.glob("*.json"))
    except OSError:
        return out
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            key = str(data["key"])
            if data["kernels"] == KERNELS.get(key, DEFAULT_KERNELS) > 0:
                out[key] = float(data["seconds"]) / load_slowness(float(data["load"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def load_slowness(per_core: float) -> float:
    """How much slower a compile runs at a load of `per_core` than on an idle machine: the
    square root of the load per core (Linux shares the CPU between sessions first)."""
    return max(1.0, math.sqrt(max(0.0, per_core)))


def machine_factor(recorded: dict[str, float]) -> float | None:
    """How much slower than the reference machine (`COSTS`) this one compiled the steps it
    recorded, at a load of one a core; None without a record. The reference's own seconds,
    not what an estimate counts at least for a step (`LOAD_COST`): a step that compiles
    little takes far less than that here too."""
    keys = [k for k in recorded if k in COSTS]
    reference = sum(COSTS[k] for k in keys)
    if reference < 1.0:  # too little to tell (loads only)
        return None
    return max(0.2, sum(recorded[k] for k in keys) / reference)


# -- plain Python while a step compiles --------------------------------------------------------

#: The longest an agent run as plain Python may think before its answer is given up.
PLAIN_SECONDS = 8.0
#: Seconds of compile (on the reference machine, `ALONE`) below which an agent is not worth
#: answering in plain Python: compiled, it answers about as soon. A search by the clock to a
#: depth cap takes seconds in plain Python (hard, from the start: 0.3 s in Othello, 4.4 s in
#: Connect Four), so it is worth it only against a longer compile.
PLAIN_WORTH = 2.0
PLAIN_WORTH_TIMED = 10.0


def plain_worth(budget: Budget) -> float:
    """The compile time above which an agent with `budget` is answered in plain Python."""
    return PLAIN_WORTH if budget.time is None else PLAIN_WORTH_TIMED


def plain_budget(budget: Budget) -> Budget | None:
    """The budget to run an agent with as plain Python, or None when that would not make its
    own move: an agent that thinks by the clock alone would search less deep than compiled.

    A budget of depth or nodes (or none) is kept as it is: the same search, so the same move.
    A time with a depth cap becomes `PLAIN_SECONDS`, and the move counts only if the search
    reached that depth (`plain_complete`)."""
    if budget.time is None:
        return budget
    if budget.depth is None:
        return None
    return Budget(time=PLAIN_SECONDS, nodes=budget.nodes, depth=budget.depth)


def plain_complete(decision: Decision, budget: Budget) -> bool:
    """Whether the plain Python `decision` is the agent's own move under `budget`: it searched
    all its budget allows, solved the position exactly, or needed no search (a forced move, a
    win in one: the same rule compiled)."""
    if budget.time is None or decision.info.get("exact") is True:
        return True
    if decision.nodes == 0 and not decision.depth:  # decided without a search
        return True
    return budget.depth is not None and (decision.depth or 0) >= budget.depth


# -- compiles and loads, as they happen ---------------------------------------------------------

#: The event of a kernel loaded from numba's cache (numba has one only for its compiles).
LOAD_EVENT = "boardbot:load"


def kernel_name(py_func: Any, args: Any) -> str:
    """A kernel as counted: its function and signature, `engine.games.bits.popcnt(uint64)`."""
    module = getattr(py_func, "__module__", None) or "?"
    name = getattr(py_func, "__qualname__", None) or repr(py_func)
    return f"{module}.{name}({', '.join(map(str, args))})"


def announce_loads() -> None:
    """Make every load of a kernel from numba's cache a `LOAD_EVENT` (once per process;
    imports numba), its data whether it was `found` and the `kernel`'s name. A load takes a
    fraction of a second, seconds on a busy machine: a job's cap waits for it as for a
    compile."""
    from numba.core import caching, event, sigutils

    load = caching.Cache.load_overload
    if getattr(load, "announced", False):
        return

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        found: dict[str, Any] = {}  # the event's data: whether the cache had the kernel
        with contextlib.suppress(Exception):  # (a name is only for the counts)
            args = sigutils.normalize_signature(sig)[0]  # type: ignore[no-untyped-call]
            found["kernel"] = kernel_name(getattr(self, "_py_func", None), args)
        with event.trigger_event(LOAD_EVENT, data=found):
            kernel = load(self, sig, target_context)  # type: ignore[no-untyped-call]
            found["found"] = kernel is not None
            return kernel

    load_overload.announced = True  # type: ignore[attr-defined]
    caching.Cache.load_overload = load_overload  # type: ignore[method-assign]


def event_kernel(ev: Any, package: str) -> str | None:
    """The name of the kernel of `package` that the ended compile or load `ev` made ready (a
    load that found nothing, numba's own functions: None). A compile that fails counts too
    (its agent fails: it is no warm-up's progress)."""
    data = ev.data if isinstance(ev.data, dict) else {}
    if ev.kind == LOAD_EVENT:
        name = data.get("kernel") if data.get("found") else None
    elif "dispatcher" in data:
        name = kernel_name(getattr(data["dispatcher"], "py_func", None), data.get("args", ()))
    else:
        return None
    return name if isinstance(name, str) and name.startswith(f"{package}.") else None


class _Compiled:
    """The engine's kernels this process compiled, counted from the first `compiled_kernels()`."""

    count = 0
    listening = False


def compiled_kernels() -> int:
    """How many of the engine's kernels this process has compiled (listening from the first
    call on: imports numba)."""
    if not _Compiled.listening:
        _Compiled.listening = True

        def compiled(name: str, fresh: bool) -> None:
            _Compiled.count += fresh

        CompileWatch(on_kernel=compiled).install()
    return _Compiled.count


class CompileWatch:
    """Counts numba's compiles in this process and their seconds; calls `on_start()` as the
    outermost compile or load from the cache of a chain begins (one kernel compiles or loads
    the kernels it calls first, inside its own) and `on_end(seconds)` as it ends: the seconds
    of a chain that compiled, None for one that only loaded. `on_kernel(name, compiled)`
    hears of each kernel of `package` made ready, compiled or loaded, as it is (a kernel
    loaded from the cache holds the machine code of those it calls: they are not loaded)."""

    def __init__(
        self,
        on_start: Callable[[], None] | None = None,
        on_end: Callable[[float | None], None] | None = None,
        on_kernel: Callable[[str, bool], None] | None = None,
        package: str = "engine",
    ) -> None:
        self.count = 0
        self.seconds = 0.0
        self.loads = 0  # chains that only loaded (a kernel found in the cache at least)
        self.on_start = on_start
        self.on_end = on_end
        self.on_kernel = on_kernel
        self.package = package
        self._depth = 0
        self._began = 0.0
        self._compiled = False  # the chain under way compiled something
        self._loaded = False  # ... or loaded something

    def install(self) -> CompileWatch:
        """Listen to numba's compile events and to loads from its cache from now on (imports
        numba)."""
        from numba.core import event

        watch = self

        class Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                watch._started(ev.kind != LOAD_EVENT)

            def on_end(self, ev: Any) -> None:
                kernel = event_kernel(ev, watch.package)
                if kernel is not None and watch.on_kernel is not None:
                    watch.on_kernel(kernel, ev.kind != LOAD_EVENT)
                watch._ended(ev.kind != LOAD_EVENT or bool((ev.data or {}).get("found")))

        announce_loads()
        event.register("numba:compile", Listener())  # type: ignore[no-untyped-call]
        event.register(LOAD_EVENT, Listener())  # type: ignore[no-untyped-call]
        return self

    def _started(self, compiles: bool = True) -> None:
        self._depth += 1
        self._compiled = self._compiled or compiles
        if self._depth == 1:
            self._began = time.perf_counter()
            self._compiled, self._loaded = compiles, False
            if self.on_start is not None:
                self.on_start()

    def _ended(self, found: bool = True) -> None:
        self._depth -= 1
        self._loaded = self._loaded or found
        if self._depth == 0:
            took = time.perf_counter() - self._began
            if self._compiled:
                self.count += 1
                self.seconds += took
            elif self._loaded:
                self.loads += 1
            if self.on_end is not None:
                self.on_end(took if self._compiled else None)
