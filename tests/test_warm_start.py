"""A started lobby never pays numba's first-call cost on the event loop: `resume` (what every
front end calls at start) loads the rule kernels in a thread first. Without it, the first
request after a start froze the loop for about half a second (numba's first use in a process
initialises its compiler and loads the cached kernels), or for seconds on a first run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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
        [sys.executable, "-c", FIRST_MOVE], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    worst = float(proc.stdout.split()[-1])
    assert worst < 0.1, f"the event loop stalled {worst * 1000:.0f} ms on the first requests"
