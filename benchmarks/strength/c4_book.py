"""Check every entry of the Connect Four opening book against an independent solver.

The oracle is the PyPI package `bitbully` (a C++ solver; used here only, never by engine/):
for each book position, the book's outcome must be the sign of the best move's exact score,
and the book's column must reach that same sign.

    pip install bitbully && python -m benchmarks.strength.c4_book
"""

from __future__ import annotations

import sys
import time

from benchmarks.measure import sign
from engine.agents.connect4 import book as c4book
from tools import c4book as book_builder


def main() -> None:
    try:
        import bitbully
    except ImportError:  # an optional oracle: say what is missing, not a traceback
        print(
            "error: this check needs bitbully, an independent solver: pip install bitbully",
            file=sys.stderr,
        )
        sys.exit(2)

    oracle = bitbully.BitBully()
    t0 = time.perf_counter()
    checked = bad = missing = 0
    for ply in range(c4book.BOOK_PLY + 1):
        for state in book_builder.positions(ply):
            entry = c4book.lookup(state)
            if entry is None:
                missing += 1  # an unfinished build
                continue
            scores = oracle.score_all_moves(bitbully.Board.from_moves(list(state.moves)))
            scores = {int(c): int(v) for c, v in scores.items()}
            best = sign(max(scores.values()))
            checked += 1
            if entry[0] != best or sign(scores[entry[1]]) != best:
                bad += 1
                print(f"wrong: {state.to_notation() or '(empty)'} book={entry} oracle={scores}")
    print(
        f"{checked} book positions of <= {c4book.BOOK_PLY} discs checked, {bad} wrong, "
        f"{missing} not in the book ({time.perf_counter() - t0:.1f} s)"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
