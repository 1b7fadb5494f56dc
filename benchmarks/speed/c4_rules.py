"""Connect Four kernel speed on the standard 7x6 board: random playouts and perft.

Run from the repository root: ``python -m benchmarks.speed.c4_rules``. Numbers are for one core
after a warm-up call, so they measure the compiled kernels, not numba's compilation.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.measure import load
from engine.games import c4kernels as kern

ROWS, COLS, K = 6, 7, 4
EMPTY = np.uint64(0)


def bench_playouts(seconds: float = 2.0) -> float:
    """Random playouts per second from the empty board."""
    kern.playouts(EMPTY, EMPTY, ROWS, COLS, K, 1_000, 1)  # compile or load from cache
    n, batch, start = 0, 100_000, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        kern.playouts(EMPTY, EMPTY, ROWS, COLS, K, batch, n + 1)
        n += batch
    return n / elapsed


def bench_perft(depth: int) -> tuple[int, float]:
    """(nodes, seconds) for perft(depth) from the empty board."""
    kern.perft(EMPTY, EMPTY, ROWS, COLS, K, 2)
    start = time.perf_counter()
    nodes = int(kern.perft(EMPTY, EMPTY, ROWS, COLS, K, depth))
    return nodes, time.perf_counter() - start


def main() -> None:
    rate = bench_playouts()
    print(f"connect4 playouts/s: {rate / 1e6:.2f}M")
    for depth in (9, 10):
        nodes, elapsed = bench_perft(depth)
        print(
            f"connect4 perft({depth}): {nodes} nodes in {elapsed:.3f} s "
            f"({nodes / elapsed / 1e6:.0f} M nodes/s)"
        )
    print(load())


if __name__ == "__main__":
    main()
