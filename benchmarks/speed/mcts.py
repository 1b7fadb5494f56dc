"""Speed of the MCTS agent (iterations/s) and of the Connect Four solver on Pons' test sets.

    python -m benchmarks.speed.mcts mcts            # iterations/s, Connect Four and Othello
    python -m benchmarks.speed.mcts solver --n 200  # mean time per position for each Pons set

Each figure is the best of --repeat runs (the machine is shared). The solver's transposition
table is cleared before every position (a cold solve, as in Pons' benchmark); clearing is not
timed. The Pons sets are read from ../shared/data/connect4-pons-tests (or --pons DIR).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from benchmarks.measure import load, warm_up
from engine.agents.base import Budget
from engine.agents.connect4 import solver as c4solver
from engine.agents.mcts import MCTSAgent
from engine.games.base import GameState
from engine.games.connect4 import Connect4State
from engine.games.othello import OthelloState

SETS = [
    ("Test_L3_R1", "End-Easy", 4.6e-6),
    ("Test_L2_R1", "Middle-Easy", 37e-6),
    ("Test_L2_R2", "Middle-Medium", 3.2e-3),
    ("Test_L1_R1", "Begin-Easy", 0.25e-3),
    ("Test_L1_R2", "Begin-Medium", 97e-3),
    ("Test_L1_R3", "Begin-Hard", 5.5),
]


def bench_mcts(repeat: int, sims: int) -> None:
    starts: list[tuple[str, GameState]] = [
        ("connect4 empty", Connect4State.new()),
        ("connect4 middle", Connect4State.from_moves("4453536")),
        ("othello start", OthelloState.new()),
    ]
    for label, state in starts:
        agent = MCTSAgent(state.game)
        agent.choose(state, Budget(nodes=100), random.Random(0))
        best = 0.0
        for r in range(repeat):
            t0 = time.perf_counter()
            d = agent.choose(state, Budget(nodes=sims), random.Random(r))
            best = max(best, d.nodes / (time.perf_counter() - t0))
        print(f"{label:16s} {sims} simulations: best {best / 1e3:.0f} k iterations/s")


#: A position 37 plies in (the first of Pons' End-Easy set): solved in microseconds, it makes
#: numba compile (or load) every kernel of the search before anything is timed.
WARM_UP = "2252576253462244111563365343671351441"


def bench_solver(pons: Path, n: int, repeat: int, sets: list[str]) -> None:
    warm_up(lambda: c4solver.solve(Connect4State.from_moves(WARM_UP)))
    c4solver.reset()
    for name, label, ref in SETS:
        if sets and name not in sets and label not in sets:
            continue
        lines = [ln.split() for ln in (pons / name).read_text().splitlines() if ln.strip()][:n]
        states = [(Connect4State.from_moves(m), int(s)) for m, s in lines]
        best_mean = float("inf")
        nodes = 0
        for _ in range(repeat):
            total = 0.0
            nodes = 0
            for state, score in states:
                c4solver.reset()
                t0 = time.perf_counter()
                got = c4solver.solve(state)
                total += time.perf_counter() - t0
                nodes += c4solver.SearchCounter.last_nodes
                if got != score:
                    raise SystemExit(f"{name}: {state.to_notation()} gave {got}, expected {score}")
            best_mean = min(best_mean, total / len(states))
        rate = nodes / (best_mean * len(states))
        print(
            f"{label:14s} n={len(states):4d} mean {best_mean * 1e3:9.3f} ms  "
            f"(Pons C++ {ref * 1e3:.4g} ms)  mean nodes {nodes / len(states):10.0f}  "
            f"{rate / 1e6:.2f} M nodes/s"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("mcts", "solver"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sims", type=int, default=200_000)
    ap.add_argument("--n", type=int, default=100, help="positions per Pons set")
    ap.add_argument("--sets", nargs="*", default=[], help="e.g. Test_L3_R1 Begin-Easy")
    default_pons = Path(__file__).resolve().parents[3] / "shared/data/connect4-pons-tests"
    ap.add_argument("--pons", type=Path, default=default_pons)
    args = ap.parse_args()
    if args.what == "mcts":
        bench_mcts(args.repeat, args.sims)
    else:
        bench_solver(args.pons, args.n, args.repeat, args.sets)
    print(load())


if __name__ == "__main__":
    main()
