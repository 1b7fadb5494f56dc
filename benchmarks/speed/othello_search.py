"""Othello search speed: midgame nodes/s and exact endgame solves of FFO #40-#44.

Run with `python -m benchmarks.speed.othello_search [--cap SECONDS] [--ffo 40,41] [--repeat N]`
from the repository root. The midgame figure is the best of three runs of a fixed-depth search
from a few seeded random positions 20 plies in. Each FFO position is solved `--repeat` times
(default 1) from an empty table, one at a time in this one process; it prints each position's
CPU seconds (min and median over the repeats), nodes, the score and move against the published
answer, and the total of the minima. Each solve is capped (default 120 s); a capped solve prints
how far it got. Edax 4.6 with a zero evaluation takes 12.85 s for all five on this machine class.

Nodes are the solver's own count: positions with 3 or more empties (the 2- and 1-empty
positions of the specialised last moves are not counted).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from benchmarks.measure import load, warm_up
from engine.agents.othello.search import OthelloSearch, OutOfBudget
from engine.games.othello import OthelloState

FFO_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "ffo_40_44.tsv"
MIDGAME_DEPTH = 9


def midgame_positions(count: int = 4, plies: int = 20) -> list[OthelloState]:
    rng = random.Random(2024)
    out: list[OthelloState] = []
    while len(out) < count:
        state = OthelloState.new()
        for _ in range(plies):
            moves = state.legal_moves()
            if not moves:
                break
            state = state.play(rng.choice(moves))
        if not state.is_over():
            out.append(state)
    return out


def bench_midgame(search: OthelloSearch) -> None:
    best = 0.0
    for _ in range(3):
        nodes = 0
        seconds = 0.0
        for state in midgame_positions():
            search.reset(None, None)
            t0 = time.perf_counter()
            search.negamax(state.me, state.opp, MIDGAME_DEPTH)
            seconds += time.perf_counter() - t0
            nodes += search.nodes
        best = max(best, nodes / seconds)
        print(f"  midgame depth {MIDGAME_DEPTH}: {nodes} nodes in {seconds:.2f} s")
    print(f"midgame alpha-beta: best {best / 1e6:.2f} M nodes/s")


def bench_ffo(search: OthelloSearch, ids: set[int], cap: float, repeat: int) -> None:
    lines = FFO_FILE.read_text().splitlines()[1:]
    total = 0.0
    total_nodes = 0
    for line in lines:
        ffo_id, board, side, empties, score, best_moves = line.split("\t")
        if int(ffo_id) not in ids:
            continue
        state = OthelloState.from_notation(f"{board} {side}")
        times = []
        for _ in range(repeat):
            search.reset(None, None)
            search.clear_endgame_tt()
            t0 = time.perf_counter()
            c0 = time.process_time()
            search.deadline = t0 + cap
            try:
                got, move = search.solve(state.me, state.opp)
            except OutOfBudget:
                dt = time.perf_counter() - t0
                print(
                    f"FFO #{ffo_id} ({empties} empties): not solved within {cap:.0f} s "
                    f"({search.nodes / 1e6:.0f} M nodes, {search.nodes / dt / 1e6:.1f} M nodes/s)"
                )
                break
            times.append(time.process_time() - c0)
        if not times:
            continue
        best = min(times)
        total += best
        total_nodes += search.nodes
        name = state.move_to_str(move)
        ok = got == int(score) and name in best_moves.split(",")
        print(
            f"FFO #{ffo_id} ({empties} empties): {name} {got:+d} in {best:.2f} s "
            f"(median {statistics.median(times):.2f} s of {len(times)}), "
            f"{search.nodes / 1e6:.1f} M nodes ({search.nodes / best / 1e6:.1f} M nodes/s) "
            f"{'ok' if ok else f'WRONG (expected {best_moves} {score})'}",
            flush=True,
        )
    print(
        f"FFO total: {total:.2f} s CPU, {total_nodes / 1e6:.1f} M nodes "
        f"({total_nodes / max(total, 1e-9) / 1e6:.1f} M nodes/s)"
    )


def compile_kernels() -> None:
    """Compile or load every kernel of the search (a first call only compiles)."""
    search = OthelloSearch(tt_bits=10)
    state = OthelloState.from_notation(
        "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXOOOOOOOOOOOOOOOOOOOOO--- X"
    )
    search.reset(None, None)
    search.negamax(state.me, state.opp, 2)
    search.solve(state.me, state.opp)
    search.expectimax(state.me, state.opp, 1, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cap", type=float, default=120.0, help="seconds per FFO position")
    parser.add_argument("--ffo", default="40,41,42,43,44", help="FFO ids to solve")
    parser.add_argument("--repeat", type=int, default=1, help="solves of each FFO position")
    parser.add_argument("--skip-midgame", action="store_true")
    args = parser.parse_args()
    warm_up(compile_kernels)
    search = OthelloSearch(tt_bits=20, eg_bits=22)
    if not args.skip_midgame:
        bench_midgame(search)
    bench_ffo(search, {int(x) for x in args.ffo.split(",")}, args.cap, args.repeat)
    print(load())


if __name__ == "__main__":
    main()
