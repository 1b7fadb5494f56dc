"""Othello kernel speed: perft(10) from the start and random playouts per second.

Run with `python -m benchmarks.speed.othello_rules` from the repository root. The first calls only
compile (or load numba's on-disk cache), so they are timed separately and not counted.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.measure import load, warm_up
from engine.games import othkernels as k
from engine.games.othello import OthelloState

PERFT_DEPTH = 10
PERFT_EXPECTED = 24571284
PLAYOUTS = 200_000


def main() -> None:
    start = OthelloState.new()
    me, opp = np.uint64(start.me), np.uint64(start.opp)

    warm_up(lambda: (k.perft(me, opp, 1), k.playouts(me, opp, 1, 0)))

    t0 = time.perf_counter()
    nodes = k.perft(me, opp, PERFT_DEPTH)
    dt = time.perf_counter() - t0
    status = "ok" if nodes == PERFT_EXPECTED else f"WRONG, expected {PERFT_EXPECTED}"
    print(
        f"othello perft({PERFT_DEPTH}): {nodes} nodes in {dt:.3f} s "
        f"({nodes / dt / 1e6:.1f} M nodes/s, {status})"
    )

    t0 = time.perf_counter()
    k.playouts(me, opp, PLAYOUTS, 12345)
    dt = time.perf_counter() - t0
    print(f"othello random playouts: {PLAYOUTS} in {dt:.3f} s ({PLAYOUTS / dt:,.0f} playouts/s)")
    print(load())


if __name__ == "__main__":
    main()
