"""A cold engine: workers ready at once, numba's compiles never killed by a job's cap, a
decision made again after a compile ate its time, first moves from plain Python while an agent
was never compiled (the same moves), and the warm-up's progress (docs/architecture.md, "The
engine pool")."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import lobby.joberrors
import lobby.jobs
import lobby.pool
import lobby.warmup
from engine import warm
from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.opponents import opponents
from engine.games import GAMES, new_game
from engine.games.connect4 import Connect4State
from lobby.jobs import choose_in_worker
from lobby.pool import EnginePool
from lobby.worker import repeatable
from tests.machine import scaled

ROOT = Path(__file__).resolve().parents[2]


# --- jobs (run in the workers) ---


def compiling_for(seconds: float) -> int:
    """As if numba compiled for `seconds` (its compile event, which the worker reports)."""
    from numba.core import event

    with event.trigger_event("numba:compile", data={}):
        time.sleep(seconds)
    return os.getpid()


def counted(path: str) -> int:
    """Counts its runs in a file; numba 'compiles' during the first run only."""
    file = Path(path)
    runs = int(file.read_text()) + 1 if file.exists() else 1
    file.write_text(str(runs))
    if runs == 1:
        compiling_for(0.01)
    return runs


@repeatable
def counted_runs(path: str) -> int:
    """`counted`, marked to run again after a compile."""
    return counted(path)


def sleeper(seconds: float) -> None:
    time.sleep(seconds)


def gated_warm(step: warm.WarmStep, gentle: bool = False, gate: str = "") -> None:
    """A warm-up step that lasts until the file `gate` exists (the compile of a first run,
    ended when the test says so: however loaded the machine, it is still under way before)."""
    while not Path(gate).exists():
        time.sleep(0.02)
    lobby.jobs.warm_in_worker(step, gentle)


# --- tests ---


async def test_a_compile_inside_a_job_stops_its_cap_until_it_ends() -> None:
    """A kernel first met inside a job compiles there: killed at the cap, numba could never
    cache it, and the job would fail the same way at every move."""
    pool = EnginePool(workers=1, warm=False)
    await pool.start()
    try:
        cap = scaled(1.0)
        pid = await pool.run(compiling_for, 3 * cap, cap=cap)
        assert pid in pool.pids and pool.timeouts == 0 and pool.compiles == 1
        assert pool.compile_seconds >= 3 * cap
        with pytest.raises(lobby.joberrors.JobTimeout):  # the cap holds outside a compile
            await pool.run(sleeper, 3 * cap, cap=cap)
    finally:
        await pool.close()


def loading_for(seconds: float) -> int:
    """As if numba loaded kernels from its cache for `seconds` (`engine.warm.LOAD_EVENT`)."""
    from numba.core import event

    with event.trigger_event(warm.LOAD_EVENT):
        time.sleep(seconds)
    return os.getpid()


async def test_a_load_from_numbas_cache_stops_a_jobs_cap_and_is_no_compile() -> None:
    """On a busy machine the first move of an agent compiled before this start loads its
    kernels for seconds inside the job: the Othello expert's passed its 2.5 s cap and its
    worker was killed."""
    pool = EnginePool(workers=1, warm=False)
    await pool.start()
    try:
        cap = scaled(1.0)
        pid = await pool.run(loading_for, 3 * cap, cap=cap)
        assert pid in pool.pids and pool.timeouts == 0
        assert pool.compiles == 0 and pool.compile_seconds == 0.0
    finally:
        await pool.close()


async def test_a_decision_during_which_numba_compiled_is_made_again(tmp_path: Path) -> None:
    """The compile ate the agent's time budget: its answer would be weaker than its own."""
    pool = EnginePool(workers=1, warm=False)
    await pool.start()
    try:
        assert await pool.run(counted_runs, str(tmp_path / "runs")) == 2
        assert await pool.run(counted_runs, str(tmp_path / "again")) == 2
        assert await pool.run(counted, str(tmp_path / "once")) == 1  # not marked
    finally:
        await pool.close()


def _one_step_plan(
    game: str, level: str, cached: bool = False
) -> tuple[list[warm.WarmStep], dict[str, float], set[str]]:
    """A plan of one level, compiled before or never (as on a first run)."""
    lv = registry.LEVELS[game][level]
    step = warm.WarmStep(game, (level,), lv.spec)
    if cached:
        return [step], {step.key: warm.LOAD_COST}, {step.key}
    return [step], {step.key: 10.0}, set()


async def test_first_moves_come_from_plain_python_while_an_agent_was_never_compiled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step_plan("connect4", "medium"))
    gate = tmp_path / "compiled"
    slow = functools.partial(gated_warm, gate=str(gate))
    monkeypatch.setattr(lobby.warmup, "warm_in_worker", slow)
    pool = EnginePool(workers=1)
    await pool.start()
    try:
        assert pool.plain_pid is not None
        status = pool.status()
        assert (status.ready, status.total, status.warm, status.compiling) == (0, 1, False, True)
        assert "(0 of 1 opponents)" in status.progress()
        medium, expert = (registry.LEVELS["connect4"][n] for n in ("medium", "expert"))
        assert pool.wait_for(medium.spec, "connect4") is not None  # a new board says so
        state = Connect4State.from_moves("4453")
        plain = await pool.choose(state, medium.spec, medium.budget, seed=7, urgent=True)
        assert not pool.status().warm  # the only compiled worker was warming all along
        compiled = choose_in_worker(state, medium.spec, medium.budget, 7)
        assert (plain.move, plain.score, plain.depth) == (compiled.move, compiled.score, 3)
        # an agent that thinks by the clock alone waits for a compiled worker
        moved = asyncio.ensure_future(pool.choose(state, expert.spec, expert.budget, seed=7))
        await asyncio.sleep(scaled(0.5))
        assert not moved.done() and not pool.status().warm
        gate.touch()  # the compile ends
        assert (await moved).move in state.legal_moves()
        await asyncio.wait_for(pool.everything(), scaled(60))
        assert pool.status().warm and pool.wait_for(medium.spec, "connect4") is None
        await pool.choose(state, medium.spec, medium.budget, seed=7)
        labels = [t.label for t in pool.timings if t.label.startswith("choose")]
        assert labels == [
            "choose_in_worker[minimax[eval=checkers]] (plain)",
            "choose_in_worker[perfect]",
            "choose_in_worker[minimax[eval=checkers]]",
        ]
        for _ in range(int(scaled(100))):  # nothing left to answer in plain Python
            if pool.plain_pid is None:
                break
            await asyncio.sleep(0.05)
        assert pool.plain_pid is None
    finally:
        await pool.close()


async def test_a_warm_start_has_no_plain_worker_and_warms_in_the_background(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step_plan("othello", "easy", True))
    pool = EnginePool(workers=2)
    await pool.start()
    try:
        assert pool.plain_pid is None and len(pool.pids) == 2
        easy = registry.LEVELS["othello"]["easy"]
        assert not pool.status().compiling and pool.wait_for(easy.spec, "othello") is None
        await asyncio.wait_for(pool.everything(), scaled(60))
        status = pool.status()
        assert (status.ready, status.total, status.left, status.seconds) == (1, 1, (), 0.0)
        assert not status.compiling and status.kernels == status.kernel_total > 0
        assert pool.jobs_run == 0  # a warm-up is not a job
    finally:
        await pool.close()


PLAIN_MOVES = """
import json, os, random, sys
from engine import warm
warm.PLAIN_SECONDS *= float(os.environ["PLAIN_SCALE"])  # a loaded machine: the same depth
from engine.agents import registry
from engine.agents.opponents import opponent
from engine.games import new_game
out = []
for game, name, plies in json.loads(sys.stdin.read()):
    state = new_game(game)
    for i in plies:
        state = state.play(state.legal_moves()[i])
    o = opponent(game, name)
    d = registry.build(o.spec, game).choose(state, warm.plain_budget(o.budget), random.Random(3))
    out.append([str(d.move), warm.plain_complete(d, o.budget)])
print(json.dumps(out))
"""


def _position(game: str, length: int, rng: random.Random) -> list[int]:
    """Indices of legal moves from the start: a position `length` plies in (or fewer, if the
    game would end), not over."""
    state, plies = new_game(game), []
    for _ in range(length):
        i = rng.randrange(len(state.legal_moves()))
        after = state.play(state.legal_moves()[i])
        if after.is_over():
            break
        state = after
        plies.append(i)
    return plies


def test_plain_python_plays_the_compiled_agents_own_moves() -> None:
    """Every opponent whose budget allows it (`engine.warm.plain_budget`), at openings and
    random positions: the plain Python move is the compiled one (a depth-capped search by the
    clock, hard, only where it reached its depth, as `plain_complete` requires)."""
    rng = random.Random(4)
    cases: list[tuple[str, str, list[int]]] = []
    for game in GAMES:
        for o in opponents(game):
            if warm.plain_budget(o.budget) is None:
                continue
            deep = o.budget.time is not None
            for length in (0, 3) if deep else (0, 5, 17, 30):
                cases.append((game, o.name, _position(game, length, rng)))
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PLAIN_SCALE=str(scaled(1.0)))
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", PLAIN_MOVES], input=json.dumps(cases), cwd=ROOT,
        env=env, capture_output=True, text=True, timeout=scaled(600),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain = json.loads(proc.stdout)
    checked = 0
    for (game, name, plies), (move, complete) in zip(cases, plain, strict=True):
        o = next(o for o in opponents(game) if o.name == name)
        state = new_game(game)
        for i in plies:
            state = state.play(state.legal_moves()[i])
        budget = Budget(depth=o.budget.depth, nodes=o.budget.nodes)  # the whole search
        compiled = registry.build(o.spec, game).choose(state, budget, random.Random(3))
        if complete:
            checked += 1
            assert move == str(compiled.move), (game, name, plies)
    assert checked >= len(cases) - 2


async def test_a_worker_kept_for_people_loads_every_compiled_agent_while_bot_jobs_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bot job waits while one worker warms up and the other is kept for people: the kept
    worker loads the compiled agents meanwhile (a load, not a compile), so when the bot jobs
    take the first worker, the one kept for people has every agent and a person's move does
    not wait for a load."""
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step_plan("connect4", "easy", True))
    gate = tmp_path / "loaded"
    monkeypatch.setattr(
        lobby.warmup, "warm_in_worker", functools.partial(gated_warm, gate=str(gate))
    )
    pool = EnginePool(workers=2)
    await pool.start()
    bot_job: asyncio.Future[None] | None = None
    try:
        await until_true(lambda: sum(w.state != "starting" for w in pool._live if not w.plain) == 2)
        bot_job = asyncio.ensure_future(pool.run(sleeper, scaled(3.0)))
        await until_true(lambda: all(w.state == "busy" for w in pool._live if not w.plain))
        gate.touch()  # the warm-up and the loads end; the bot job takes a worker
        await until_true(lambda: any(not w.urgent and w.job for w in pool._live))
        kept = [w for w in pool._live if not w.plain and not (w.job and not w.urgent)]
        await until_true(lambda: all("connect4-easy" in w.warmed for w in kept))
        assert kept and not bot_job.done()  # loaded while the bot job ran
        easy = registry.LEVELS["connect4"]["easy"]
        state = Connect4State.from_moves("44")
        await pool.choose(state, easy.spec, easy.budget, seed=3, urgent=True)
        [person] = [t for t in pool.timings if t.urgent]
        assert person.wait < scaled(1.0) and person.load == 0.0
    finally:
        if bot_job is not None:
            bot_job.cancel()
        await pool.close()


async def until_true(check: Callable[[], bool], within: float = 30.0) -> None:
    """Wait until `check()` holds; fail past `within` seconds on the reference machine."""
    end = time.monotonic() + scaled(within)
    while not check():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.02)


def waiting_for(path: str) -> int:
    """A job that lasts until the file `path` exists."""
    while not Path(path).exists():
        time.sleep(0.02)
    return os.getpid()


async def test_two_moves_run_at_once_beside_the_warm_ups_compile_on_a_first_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On a first start one worker compiles the warm-up for tens of seconds: the pool runs a
    worker more meanwhile, so people's moves never wait behind that compile (two run at once
    beside it), and it retires once every agent is compiled."""
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step_plan("connect4", "medium"))
    gate, release = tmp_path / "compiled", tmp_path / "release"
    monkeypatch.setattr(
        lobby.warmup, "warm_in_worker", functools.partial(gated_warm, gate=str(gate))
    )
    pool = EnginePool(workers=2)
    await pool.start()
    moves: list[asyncio.Future[int]] = []
    try:
        await until_true(lambda: any(w.job and w.job.warm for w in pool._live))
        moves = [
            asyncio.ensure_future(pool.run(waiting_for, str(release), urgent=True))
            for _ in range(2)
        ]
        await until_true(lambda: sum(bool(w.job and w.job.urgent) for w in pool._live) == 2)
        assert not pool.status().warm  # both beside the warm-up's compile
        release.touch()
        assert len(set(await asyncio.gather(*moves))) == 2
        gate.touch()
        await asyncio.wait_for(pool.everything(), scaled(60))
        await until_true(lambda: len(pool.pids) == 2 and pool.plain_pid is None)
    finally:
        for move in moves:
            move.cancel()
        await pool.close()


async def test_a_persons_move_that_compiles_its_agent_stops_the_warm_up_of_the_same_agent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A person asks for the agent the warm-up is compiling in another worker: their move
    compiles it at once (a person waits), so the warm-up's worker, which would compile the
    same kernels beside it, stops; the agent is warmed again later, from the cache."""
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step_plan("connect4", "expert"))
    gate = tmp_path / "compiled"
    monkeypatch.setattr(
        lobby.warmup, "warm_in_worker", functools.partial(gated_warm, gate=str(gate))
    )
    pool = EnginePool(workers=2)
    await pool.start()
    try:
        await until_true(lambda: any(w.job and w.job.warm for w in pool._live))
        [warming] = [w.pid for w in pool._live if w.job and w.job.warm]
        expert = registry.LEVELS["connect4"]["expert"]
        state = Connect4State.from_moves("4444")
        move = await pool.choose(state, expert.spec, expert.budget, seed=1, urgent=True)
        assert move.move in state.legal_moves()
        await until_true(lambda: warming not in pool.pids)
        assert pool.crashes == 0 and pool.timeouts == 0
        gate.touch()
        await asyncio.wait_for(pool.everything(), scaled(60))
    finally:
        await pool.close()


async def test_the_worker_kept_for_people_stays_free_while_the_others_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A warm start: the first worker up does not begin loading the agents while the second
    starts, so a person's first move, asked for as the bot starts, goes to it at once (it
    waited for the second worker's start, or for a load, and a first easy move took 2.6 s)."""
    monkeypatch.setattr(lobby.pool, "read_plan", lambda: _one_step_plan("othello", "easy", True))
    gate = tmp_path / "loaded"
    monkeypatch.setattr(
        lobby.warmup, "warm_in_worker", functools.partial(gated_warm, gate=str(gate))
    )
    pool = EnginePool(workers=2)
    start = asyncio.ensure_future(pool.start())
    try:
        await until_true(lambda: any(w.state != "starting" for w in pool._live if not w.plain))
        seen = 0
        while any(w.state == "starting" for w in pool._live if not w.plain):
            [first] = [w for w in pool._live if not w.plain and w.state != "starting"]
            assert first.state == "idle" and first.job is None, "it took a load"
            seen += 1
            await asyncio.sleep(0.01)
        assert seen > 0  # (the second worker's start was seen)
        await start
        gate.touch()
        await asyncio.wait_for(pool.everything(), scaled(60))
    finally:
        gate.touch()
        start.cancel()
        await pool.close()
