"""Othello search speed: midgame nodes/s and exact endgame solves of FFO #40-#44, and the same
positions searched by Edax when its binary is given.

Run with `python -m benchmarks.speed.othello_search [--cap SECONDS] [--ffo 40,41] [--repeat N]
[--depth D] [--edax BINARY --edax-eval FILE]` from the repository root. The midgame figure is
the best of three runs of a fixed-depth search (`--depth`, 9 by default) from a few seeded
random positions 20 plies in, with the standard and with the pattern evaluation, in CPU
seconds. Each FFO position is solved `--repeat` times (default 1) from an empty table, one at a
time in this one process; it prints each position's CPU seconds (min and median over the
repeats), nodes, the score and move against the published answer, and the total of the minima.
Each solve is capped (default 120 s; 0: no cap, so that the node counts repeat exactly, the
cap's chunks restarting the root); a capped solve prints how far it got.

`--edax`: an Edax 4.6 binary, run as a separate program on one thread (`-n 1`, no book) on the
same FFO positions and on the midgame positions at the same depth, with the evaluation weights
`--edax-eval` (an Edax eval.dat); it prints Edax's own summary line (nodes, wall time, CPU
time). The bot never imports or ships Edax: this only measures against it.

Nodes are the solver's own count: positions with 3 or more empties (the 2- and 1-empty
positions of the specialised last moves are not counted).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import tempfile
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


def bench_midgame(depth: int) -> None:
    """Nodes/s of a depth-`depth` search of the midgame positions, each evaluation."""
    for name in ("standard", "patterns"):
        search = OthelloSearch(tt_bits=20, eval=name)
        best = 0.0
        for _ in range(3):
            nodes = 0
            seconds = 0.0
            for state in midgame_positions():
                search.reset(None, None)
                t0 = time.process_time()
                search.negamax(state.me, state.opp, depth)
                seconds += time.process_time() - t0
                nodes += search.nodes
            best = max(best, nodes / seconds)
            print(f"  midgame depth {depth} eval {name}: {nodes} nodes in {seconds:.2f} s CPU")
        print(f"midgame alpha-beta, eval {name}: best {best / 1e6:.2f} M nodes/s")


def board_line(state: OthelloState) -> str:
    """A position as a line of Edax's problem files: 64 squares a1..h8, then the side."""
    cells = "".join(
        "X" if state.black >> sq & 1 else "O" if state.white >> sq & 1 else "-" for sq in range(64)
    )
    return f"{cells} {'X' if state.side == 0 else 'O'};"


def run_edax(binary: str, weights: str, states: list[OthelloState], level: int) -> None:
    """Edax on the positions, one thread, no book; its summary line (nodes, wall, CPU)."""
    with tempfile.TemporaryDirectory() as tmp:
        problems = Path(tmp) / "positions.obf"
        problems.write_text("".join(board_line(s) + "\n" for s in states))
        command = [str(Path(binary).resolve()), "-solve", str(problems), "-n", "1"]
        command += ["-l", str(level), "-eval-file", str(Path(weights).resolve())]
        command += ["-book-usage", "off", "-h", "22"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp, check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    print(f"edax level {level}: {lines[-1] if lines else done.stderr.strip()}", flush=True)


def ffo_positions(ids: set[int]) -> list[OthelloState]:
    out = []
    for line in FFO_FILE.read_text().splitlines()[1:]:
        ffo_id, board, side, *_ = line.split("\t")
        if int(ffo_id) in ids:
            out.append(OthelloState.from_notation(f"{board} {side}"))
    return out


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
            search.deadline = t0 + cap if cap > 0 else None
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
    parser.add_argument("--depth", type=int, default=MIDGAME_DEPTH, help="midgame depth")
    parser.add_argument("--edax", help="an Edax binary, to run on the same positions")
    parser.add_argument("--edax-eval", help="the evaluation weights (eval.dat) Edax reads")
    args = parser.parse_args()
    if args.edax and not args.edax_eval:
        parser.error("--edax needs --edax-eval")
    warm_up(compile_kernels)
    print(load())
    ids = {int(x) for x in args.ffo.split(",")}
    if not args.skip_midgame:
        bench_midgame(args.depth)
        if args.edax:
            run_edax(args.edax, args.edax_eval, midgame_positions(), args.depth)
    bench_ffo(OthelloSearch(tt_bits=20, eg_bits=22), ids, args.cap, args.repeat)
    if args.edax:
        run_edax(args.edax, args.edax_eval, ffo_positions(ids), 60)
    print(load())


if __name__ == "__main__":
    main()
