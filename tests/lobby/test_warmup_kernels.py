"""The warm-up's progress in kernels: each engine kernel a worker compiles, or loads from
numba's cache, reaches the bot's process as it happens (not at the end of its step), and the
count rises to the total the plan needs (`engine.warm.KERNELS`); an agent someone asks for that
is still to compile says about how long it takes (docs/architecture.md, "The engine pool",
"Progress")."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import lobby.pool
import lobby.warmup
from engine import warm
from lobby.pool import EnginePool
from tests.lobby.test_engine_start import until_true
from tests.machine import scaled

#: Kernels as numba's compile events give them: the module and name of the dispatcher's
#: function, and its signature.
COMPILED = (
    ("engine.fake", "one", ("int64",)),
    ("engine.fake", "two", ("uint64", "int64")),
    ("engine.fake", "three", ()),
)


def _compile(module: str, name: str, args: tuple[str, ...]) -> None:
    """numba's compile event of a kernel (its dispatcher's function and signature)."""
    from numba.core import event

    fn = SimpleNamespace(__module__=module, __qualname__=name)
    data = {"dispatcher": SimpleNamespace(py_func=fn), "args": args}
    with event.trigger_event("numba:compile", data=data):
        time.sleep(0.01)


def kernels_then_gate(step: warm.WarmStep, gentle: bool = False, gate: str = "") -> None:
    """A warm-up step that compiles three kernels and loads one from the cache (numba's own
    functions do not count), then lasts until the file `gate` exists."""
    from numba.core import event

    for module, name, args in COMPILED:
        _compile(module, name, args)
    with event.trigger_event(warm.LOAD_EVENT, data={"kernel": "engine.fake.four()", "found": True}):
        pass
    with event.trigger_event(warm.LOAD_EVENT, data={"kernel": "engine.fake.five()"}):
        pass  # not in the cache: compiled next, and counted then
    _compile("numba.np.arraymath", "sum_impl", ("int64",))
    while not Path(gate).exists():
        time.sleep(0.02)


def _one_step(key: str) -> tuple[list[warm.WarmStep], dict[str, float], set[str]]:
    [step] = [s for s in warm.warm_plan() if s.key == key]
    return [step], {step.key: warm.COSTS.get(key, warm.DEFAULT_COST)}, set()


async def test_a_workers_kernels_reach_the_pool_while_its_step_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step("connect4-easy"))
    gate = tmp_path / "gate"
    job = functools.partial(kernels_then_gate, gate=str(gate))
    monkeypatch.setattr(lobby.warmup, "warm_in_worker", job)
    pool = EnginePool(workers=1)
    await pool.start()
    try:
        await until_true(lambda: pool.status().kernels == 4)  # three compiled, one loaded
        status = pool.status()
        assert not status.warm and status.compiling
        needed = warm.KERNELS.get("connect4-easy", warm.DEFAULT_KERNELS)
        assert status.kernel_total == max(needed, 4)
        assert f"kernels 4 of {status.kernel_total} ready (0 of 1 opponents)" in status.progress()
        gate.touch()
        await asyncio.wait_for(pool.everything(), scaled(60))
        status = pool.status()
        assert status.warm and status.kernels == status.kernel_total == max(needed, 4)
    finally:
        await pool.close()


async def test_a_cold_step_reports_the_kernels_it_compiles(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A real step on an empty cache of its own: it compiles at least the kernels the plan
    counts for it (it runs alone: nothing before it compiled their shared ones)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))  # the worker's cache
    key = "connect4-trainer"
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step(key))
    pool = EnginePool(workers=1)
    await pool.start()
    try:
        await asyncio.wait_for(pool.everything(), scaled(120))
        names = pool.warmup._kernels
        assert len(names) >= warm.KERNELS[key] > 0
        assert all(n.startswith("engine.") and n.endswith(")") for n in names), names
        assert pool.status().kernels == pool.status().kernel_total == len(names)
    finally:
        await pool.close()


def test_the_kernel_counts_cover_the_plan() -> None:
    """Each step of the plan has its count (`first_run --kernels` makes the table anew)."""
    assert set(warm.KERNELS) == {step.key for step in warm.warm_plan()}
    assert all(n >= 0 for n in warm.KERNELS.values()) and sum(warm.KERNELS.values()) > 0


def _warmup(guess: float) -> lobby.warmup.Warmup:
    """A warm-up of the whole plan on a first start, the machine `guess` times slower than
    the reference."""
    w = lobby.warmup.Warmup()
    plan = warm.warm_plan()
    costs = {s.key: max(warm.LOAD_COST, warm.COSTS.get(s.key, warm.DEFAULT_COST)) for s in plan}
    w.use_plan((plan, costs, set()), guess)
    return w


def test_an_agent_still_to_compile_says_how_long_its_compile_takes() -> None:
    w = _warmup(2.0)
    plan = {s.key: s for s in warm.warm_plan()}
    expert, medium = plan["othello-expert"], plan["othello-medium"]
    assert expert.family() == medium.family()  # (the medium level shares the expert's search)
    # Asked for before the expert compiled their shared kernels: as long as it takes alone.
    wait = w.wait_for(medium.spec, "othello", [])
    assert wait is not None and wait.label == medium.label
    assert wait.seconds == pytest.approx(2.0 * warm.ALONE["othello-medium"])
    assert f"{medium.label} is still being compiled" in wait.note()
    assert f"about {round(wait.seconds)} s more" in wait.note()
    w.warmed(expert, 2.0 * warm.COSTS["othello-expert"], failed=False)
    assert w.wait_for(expert.spec, "othello", []) is None  # compiled
    after = w.wait_for(medium.spec, "othello", [])  # its own cost in the plan now
    assert after is not None and after.seconds < wait.seconds
    assert after.seconds == pytest.approx(2.0 * max(warm.LOAD_COST, warm.COSTS[medium.key]))


def test_an_agent_under_way_counts_what_it_did_and_a_compiled_one_says_nothing() -> None:
    w = _warmup(1.0)
    step = next(s for s in warm.warm_plan() if s.key == "connect4-expert")
    job = SimpleNamespace(warm=step, started=time.monotonic() - 1.0)
    live = [SimpleNamespace(job=job)]
    wait = w.wait_for(step.spec, "connect4", live)  # type: ignore[arg-type]
    cost = warm.COSTS["connect4-expert"]
    assert wait is not None and cost - 1.5 < wait.seconds <= cost - 1.0
    cached = lobby.warmup.Warmup()
    plan = warm.warm_plan()
    cached.use_plan((plan, {s.key: warm.LOAD_COST for s in plan}, {s.key for s in plan}), 1.0)
    assert cached.wait_for(step.spec, "connect4", []) is None  # compiled before: loads only


def test_kernels_a_decision_compiled_are_work_done_for_the_steps_not_begun() -> None:
    """A person's first move against an agent not warmed yet compiles its kernels: the steps
    that would have compiled them only load them (the estimate was twice too long after it)."""
    w = _warmup(1.0)
    plan = warm.warm_plan()
    before = w.status([]).seconds
    move = SimpleNamespace(warm=None, step=None)  # a decision's job (an agent not in the plan)
    for i in range(12):
        w.kernel((f"engine.fake.k{i}(int64)", True), move)  # type: ignore[arg-type]
    waiting = [s for s in plan if s.kernels()]
    share = 12 / sum(s.kernels() for s in waiting)
    cost = sum(max(warm.LOAD_COST, warm.COSTS.get(s.key, 2.0)) for s in waiting)
    after = w.status([]).seconds
    assert after == pytest.approx(before - share * cost)
    w.kernel(("engine.fake.k0(int64)", True), move)  # type: ignore[arg-type]  # (again)
    w.kernel(("engine.fake.loaded()", False), move)  # type: ignore[arg-type]
    assert w.status([]).seconds == pytest.approx(after)  # (a load is no compile)
    assert w.status([]).kernels == 13


def test_a_step_past_its_estimate_makes_the_rest_longer() -> None:
    """A step still compiling when the estimate said it would be done: this machine is slower
    than measured so far, the steps after it will be too, and it has as much left as of its
    kernels (the estimate had said 1 s left for a minute)."""
    w = _warmup(1.0)
    plan = warm.warm_plan()
    first = plan[0]
    cost, kernels = warm.COSTS[first.key], first.kernels()
    total = w.status([]).seconds
    job = SimpleNamespace(warm=first, started=time.monotonic() - 3 * cost)
    live = [SimpleNamespace(job=job)]
    slower = (5.0 + 3 * cost) / (5.0 + cost)  # the first guess weighs 5 s (`_PRIOR`)
    status = w.status(live)  # type: ignore[arg-type]
    assert status.seconds == pytest.approx(total * slower, rel=0.01)  # none of its kernels
    for i in range(kernels // 2):
        w.kernel((f"engine.fake.k{i}()", True), job)  # type: ignore[arg-type]
    undone = 1 - (kernels // 2) / kernels
    status = w.status(live)  # type: ignore[arg-type]
    assert status.seconds == pytest.approx((total - cost + undone * cost) * slower, rel=0.01)
    assert status.seconds > total - cost
    # a decision compiled meanwhile (a person's first move), and the warm-up waited for the CPU
    w.kernel(("engine.fake.decided()", True), SimpleNamespace(warm=None, step=None))  # type: ignore[arg-type]
    status = w.status(live)  # type: ignore[arg-type]
    assert status.seconds < (total - cost + undone * cost) * slower * 0.99


def test_kernels_a_decision_compiled_count_once_their_step_is_done() -> None:
    """The step that loads what a decision compiled takes that work with it: the steps after
    it are not shortened twice."""
    w = _warmup(1.0)
    plan = {s.key: s for s in warm.warm_plan()}
    before = w.status([]).seconds
    step = plan["connect4-expert"]
    move = SimpleNamespace(warm=None, step=None)
    for i in range(step.kernels()):  # a person's first move compiled them all
        w.kernel((f"engine.fake.k{i}()", True), move)  # type: ignore[arg-type]
    w.warmed(step, 0.5, failed=False)  # ... so its warm-up only loaded them
    cost = max(warm.LOAD_COST, warm.COSTS[step.key])
    assert w.status([]).seconds == pytest.approx((before - cost) * w._slowness)


def test_a_step_that_waited_for_a_decisions_compile_says_nothing_of_the_machines_speed() -> None:
    """A person's first move compiled beside the warm-up, which gave it the CPU: the step took
    ten times its cost, and the estimate had said 159 s left with 50 s to go."""
    w = _warmup(1.0)
    step = next(s for s in warm.warm_plan() if s.key == "connect4-expert")
    before = w.status([]).seconds
    w.warmed(step, 10 * warm.COSTS[step.key], failed=False, measured=False)
    assert w.status([]).seconds == pytest.approx(before - warm.COSTS[step.key])


def test_kernels_a_decision_compiled_for_its_agent_are_that_steps_work_done() -> None:
    """The Othello expert asked for first: its decision compiles the step's kernels (the
    estimate had said 53 s left with 27 s to go, counting them as any step's)."""
    w = _warmup(1.0)
    step = next(s for s in warm.warm_plan() if s.key == "othello-expert")
    before = w.status([]).seconds
    move = SimpleNamespace(warm=None, step=step.key)
    for i in range(step.kernels() // 2):
        w.kernel((f"engine.fake.k{i}()", True), move)  # type: ignore[arg-type]
    done = (step.kernels() // 2) / step.kernels()
    assert w.status([]).seconds == pytest.approx(before - done * warm.COSTS[step.key])
    for i in range(step.kernels() // 2, step.kernels() + 4):  # and 4 of other steps
        w.kernel((f"engine.fake.k{i}()", True), move)  # type: ignore[arg-type]
    assert w.status([]).seconds < before - warm.COSTS[step.key]


def test_an_agent_asked_for_before_its_family_compiles_their_kernels_in_the_estimate() -> None:
    """Othello medium asked for first compiles the search the expert shares with it: while its
    warm-up runs it has the expert's cost and kernels, not a load's 0.3 s (the estimate had
    said 66 s left with 15 s to go: a step of 0.3 s running for 11 s made the machine look
    thirty times slower)."""
    w = _warmup(1.0)
    plan = {s.key: s for s in warm.warm_plan()}
    expert, medium = plan["othello-expert"], plan["othello-medium"]
    total = w.status([]).seconds
    assert w.hurry(medium.spec, "othello", []) == medium.key
    assert w.status([]).seconds == pytest.approx(total)  # the same work, another step
    alone = min(warm.COSTS[expert.key], warm.ALONE[medium.key])
    ran = 0.8 * alone  # well within what it takes alone
    job = SimpleNamespace(warm=medium, step=medium.key, started=time.monotonic() - ran)
    live = [SimpleNamespace(job=job)]
    for i in range(expert.kernels() // 2):  # its kernels are counted as its own
        w.kernel((f"engine.fake.k{i}()", True), job)  # type: ignore[arg-type]
    status = w.status(live)  # type: ignore[arg-type]
    assert status.seconds == pytest.approx(total - ran, rel=0.05)
    assert status.kernels == expert.kernels() // 2
    w.warmed(medium, alone, failed=False)
    assert w.status([]).seconds == pytest.approx(total - alone, rel=0.05)
