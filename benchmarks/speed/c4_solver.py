"""Our Connect Four solver against bitbully on Pons' test sets, interleaved in the same period.

    python -m benchmarks.speed.c4_solver --oracle /tmp/bbenv/bin/python --n 50 --rounds 3
    python -m benchmarks.speed.c4_solver --oracle /tmp/bbenv/bin/python --sets Begin-Hard

Each round times every position of a set with our solver (in this process) and with bitbully
(a separate process of the Python given by --oracle, `benchmarks/strength/oracle_bitbully.py
--time`: never imported here), the order of the two alternating between rounds. Every solve is
cold (the transposition table cleared first, not timed) and both run without books unless
--books; our scores must equal Pons'. Python's garbage collector is off while ours run: a
collection of this process's heap (numba's objects) takes milliseconds, and the positions this
loop makes would otherwise start one inside a timed solve now and then (collecting before each
solve instead leaves the caches cold: End-Easy's solves took twice as long).
Printed per set: the best round's mean time per position and mean nodes of each, and the ratio
bitbully time / our time (above 1: ours is faster), with the load average before and after.
Pons' sets are read from ../shared/data/connect4-pons-tests (or --pons DIR).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import time
from pathlib import Path

from engine.agents.connect4 import solver
from engine.games.connect4 import Connect4State

SETS = [
    ("Test_L3_R1", "End-Easy"),
    ("Test_L2_R1", "Middle-Easy"),
    ("Test_L2_R2", "Middle-Medium"),
    ("Test_L1_R1", "Begin-Easy"),
    ("Test_L1_R2", "Begin-Medium"),
    ("Test_L1_R3", "Begin-Hard"),
]
ROOT = Path(__file__).resolve().parents[2]


def ours(positions: list[tuple[str, int]]) -> tuple[float, float]:
    """(mean seconds, mean nodes) per position, the garbage collector off meanwhile."""
    seconds = nodes = 0.0
    gc.collect()
    gc.disable()
    try:
        for moves, score in positions:
            state = Connect4State.from_moves(moves)
            solver.reset()
            t0 = time.perf_counter()
            got = solver.solve(state)
            seconds += time.perf_counter() - t0
            nodes += solver.SearchCounter.last_nodes
            if got != score:
                raise SystemExit(f"{moves}: our solver gave {got}, Pons {score}")
    finally:
        gc.enable()
    return seconds / len(positions), nodes / len(positions)


def theirs(oracle: str, positions: list[tuple[str, int]], books: bool) -> tuple[float, float]:
    """(mean seconds, mean nodes) per position, timed inside the oracle's process."""
    args = [oracle, "-m", "benchmarks.strength.oracle_bitbully", "--time"]
    text = "".join(f"{moves}\n" for moves, _ in positions)
    out = subprocess.run(
        args + (["--book"] if books else []), input=text, capture_output=True, text=True,
        cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    for row, (moves, score) in zip(rows, positions, strict=True):
        if row["score"] != score:
            raise SystemExit(f"{moves}: bitbully gave {row['score']}, Pons {score}")
    return (
        sum(r["seconds"] for r in rows) / len(rows),
        sum(r["nodes"] for r in rows) / len(rows),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", required=True, help="a Python with bitbully installed")
    ap.add_argument("--n", type=int, default=50, help="positions per set")
    ap.add_argument("--n-hard", type=int, default=10, help="positions of Begin-Hard (seconds each)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sets", nargs="*", default=[], help="e.g. Test_L1_R2 Begin-Hard")
    ap.add_argument("--books", action="store_true", help="both with their opening books")
    ap.add_argument("--pons", type=Path, default=ROOT.parent / "shared/data/connect4-pons-tests")
    args = ap.parse_args()
    solver.use_books(opening=args.books, edge=args.books)
    solver.solve(Connect4State.from_moves("4444333322"))  # compile / load
    for name, label in SETS:
        if args.sets and name not in args.sets and label not in args.sets:
            continue
        lines = (args.pons / name).read_text().splitlines()
        n = args.n_hard if label == "Begin-Hard" else args.n
        positions = [(m, int(s)) for m, s in (ln.split() for ln in lines if ln.strip())][:n]
        load = os.getloadavg()[0]
        best: dict[str, tuple[float, float]] = {}
        for r in range(args.rounds):
            order = ("ours", "bitbully") if r % 2 == 0 else ("bitbully", "ours")
            for who in order:
                got = (
                    ours(positions) if who == "ours" else theirs(args.oracle, positions, args.books)
                )
                if who not in best or got[0] < best[who][0]:
                    best[who] = got
        (t_ours, n_ours), (t_bb, n_bb) = best["ours"], best["bitbully"]
        print(
            f"{label:14s} n={len(positions):4d}  ours {t_ours * 1e3:9.3f} ms {n_ours:11.0f} nodes"
            f"  bitbully {t_bb * 1e3:9.3f} ms {n_bb:11.0f} nodes  ratio {t_bb / t_ours:5.2f}"
            f"  (load {load:.1f} -> {os.getloadavg()[0]:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
