"""Connect Four search speed: minimax nodes/s with each evaluation, on a few positions.

Run with `python -m benchmarks.speed.c4_search` from the repository root. Each search is a
fixed-depth iterative deepening (no clock), repeated; the best of the repeats is printed, since
the machine is shared. The first call only compiles (or loads numba's on-disk cache).
"""

from __future__ import annotations

import random
import time

from benchmarks.measure import load, warm_up
from engine.agents.base import Budget
from engine.agents.connect4.evals import EVALS
from engine.agents.connect4.minimax import C4Expectiminimax, C4Minimax
from engine.agents.connect4.planner import PlannerAgent
from engine.games.connect4 import Connect4State

#: (moves, depth): the empty board, an opening, a middle game, a crowded board.
POSITIONS = (("", 12), ("4453", 12), ("3443225", 13), ("4343552", 13))
REPEATS = 3


def best_rate(agent: C4Minimax | C4Expectiminimax, state: Connect4State, depth: int) -> str:
    best = 0.0
    nodes = 0
    seconds = 0.0
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        decision = agent.choose(state, Budget(depth=depth), random.Random(0))
        dt = time.perf_counter() - t0
        if decision.nodes / dt > best:
            best, nodes, seconds = decision.nodes / dt, decision.nodes, dt
    return f"{nodes:>9} nodes {seconds:7.3f} s {best / 1e6:6.2f} M nodes/s"


def compile_kernels() -> None:
    """Compile or load every kernel of the search (a first call only compiles)."""
    state = Connect4State.from_moves("4435")
    for name in EVALS:
        C4Minimax(eval=name).choose(state, Budget(depth=2), random.Random(0))
        C4Expectiminimax(eval=name).choose(state, Budget(depth=3), random.Random(0))


def main() -> None:
    warm_up(compile_kernels)
    for name in EVALS:
        for moves, depth in POSITIONS:
            state = Connect4State.from_moves(moves)
            line = best_rate(C4Minimax(eval=name), state, depth)
            print(f"minimax  eval={name:<13} {moves or '(empty)':<12} depth {depth:>2}: {line}")
    for moves, depth in POSITIONS[:2]:
        state = Connect4State.from_moves(moves)
        line = best_rate(C4Expectiminimax(), state, depth - 4)
        print(f"expecti  eval=checkers      {moves or '(empty)':<12} depth {depth - 4:>2}: {line}")
    for moves, _ in POSITIONS:
        state = Connect4State.from_moves(moves)
        for search in ("average", "minimax"):
            for depth in (3, 4, 5):
                t0 = time.perf_counter()
                PlannerAgent(search=search).choose(state, Budget(depth=depth), random.Random(0))
                dt = time.perf_counter() - t0
                where = moves or "(empty)"
                print(f"planner  search={search:<8} {where:<12} depth {depth}: {dt:.3f} s")
    print(load())


if __name__ == "__main__":
    main()
