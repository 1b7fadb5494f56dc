"""Check every entry of the Connect Four opening book against an independent solver.

The oracle is the PyPI package `bitbully` (a C++ solver, AGPL), run as a separate process of
the Python given by --oracle (`oracle_bitbully.py`; never imported): for each book position,
the book's score must be the best move's exact score, and the book's column must reach it.

    python -m benchmarks.strength.c4_book --oracle /tmp/bbenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from engine.agents.connect4 import book as c4book
from tools import c4book as book_builder

HERE = Path(__file__).parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", help="a Python with bitbully installed")
    args = ap.parse_args()
    if not args.oracle:  # an optional oracle: say what is missing, not a usage page
        print(
            "error: this check needs bitbully, an independent solver: --oracle PY, a Python "
            "with bitbully installed",
            file=sys.stderr,
        )
        sys.exit(2)
    t0 = time.perf_counter()
    states = [s for ply in range(c4book.BOOK_PLY + 1) for s in book_builder.positions(ply)]
    done = subprocess.run(
        [args.oracle, str(HERE / "oracle_bitbully.py")],
        input="".join(f"{s.to_notation()}\n" for s in states),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    checked = bad = missing = 0
    for state, row in zip(states, rows, strict=True):
        entry = c4book.lookup(state)
        if entry is None:
            missing += 1  # an unfinished build
            continue
        scores = {int(c) - 1: int(v) for c, v in row["scores"].items()}
        best = max(scores.values())
        checked += 1
        if entry[0] != best or scores[entry[1]] != best:
            bad += 1
            print(f"wrong: {state.to_notation() or '(empty)'} book={entry} oracle={scores}")
    print(
        f"{checked} book positions of <= {c4book.BOOK_PLY} discs checked, {bad} wrong, "
        f"{missing} not in the book ({time.perf_counter() - t0:.1f} s)"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
