"""A started lobby never pays numba's first-call cost on the event loop: `resume` (what every
front end calls at start) loads the rule kernels in a thread first. Without it, the first
request after a start froze the loop for about half a second (numba's first use in a process
initialises its compiler and loads the cached kernels), or for seconds on a first run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.machine import scaled

ROOT = Path(__file__).resolve().parents[2]

FIRST_MOVE = """
import asyncio, sys, tempfile, time
from pathlib import Path
from db.store import Store
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool

async def main():
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "w.db")
        pool = EnginePool(workers=0)
        lobby = Lobby(store, pool, LobbyConfig(seed=1))
        await lobby.resume()
        loop = asyncio.get_running_loop()
        worst = 0.0
        async def watch():
            nonlocal worst
            while True:
                t = loop.time()
                await asyncio.sleep(0.002)
                worst = max(worst, loop.time() - t - 0.002)
        dog = asyncio.ensure_future(watch())
        await asyncio.sleep(0.01)
        for game in ("connect4", "othello"):
            snap = await lobby.start_pvp(
                __import__("lobby.core").core.Person("local", "a", "a"),
                __import__("lobby.core").core.Person("local", "b", "b"), game)
            snap.state.legal_moves()
            snap.state.render_emoji()
            await asyncio.sleep(0.01)
        dog.cancel()
        await lobby.close()
        await store.close()
        print(f"{worst:.4f}")

asyncio.run(main())
"""


def test_the_first_request_after_a_start_does_not_freeze_the_loop() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", FIRST_MOVE], cwd=ROOT, capture_output=True, text=True,
        timeout=scaled(300),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    worst = float(proc.stdout.split()[-1])
    stalled = f"the event loop stalled {worst * 1000:.0f} ms on the first requests"
    assert worst < scaled(0.1), stalled


EACH_STEP = """
import random, sys
import numba
from engine import warm
from engine.agents import registry
from engine.agents.base import Budget
from engine.games import new_game

def compiled():
    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("engine"):
            for key, value in vars(mod).items():
                if isinstance(value, numba.core.registry.CPUDispatcher):
                    out[f"{name}.{key}"] = len(value.signatures)
    return out

for i in map(int, sys.argv[1:]):
    step = warm.warm_plan()[i]
    agent = registry.build(step.spec, step.game)
    warm.warm_step(step, agent)
    before = compiled()
    rng = random.Random(5)
    states, state = [], new_game(step.game)
    while not state.is_over():  # the opening, the middle and the very end of one game
        states.append(state)
        state = state.play(rng.choice(state.legal_moves()))
    for s in [states[0], states[len(states) // 2], *states[-12::2]]:
        agent.choose(s, Budget(time=0.2), rng)
    new = {k: (before.get(k, 0), v) for k, v in compiled().items() if before.get(k, 0) != v}
    print(step.key, new)
"""


@pytest.mark.slow
def test_no_opponent_compiles_a_kernel_after_its_warm_up() -> None:
    """A worker warms one opponent at a time (`engine/warm.py`); a kernel its warm-up does not
    reach is compiled inside a move's job later, which the job's cap waits for, but the move is
    then thought again (found with the pattern expert: its read-only weights made the search a
    second compiled version). Each opponent in a fresh process, as a worker warms an opponent
    asked for first."""
    from engine.warm import warm_plan

    steps = [str(i) for i in range(len(warm_plan()))]
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", EACH_STEP, *steps[half::2]], cwd=ROOT, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for half in range(2)
    ]  # fmt: skip
    for proc in runs:
        out, err = proc.communicate(timeout=scaled(900))
        assert proc.returncode == 0, err[-3000:]
        lines = out.strip().split("\n")
        assert all(line.endswith(" {}") for line in lines), out[-2000:]
