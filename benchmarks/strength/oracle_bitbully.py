"""Oracle for analysis.py: Connect Four scores by bitbully (AGPL), run as a separate
process in its own environment, never imported by the bot or the tests.

    python -m venv /tmp/bbenv && /tmp/bbenv/bin/pip install bitbully
    /tmp/bbenv/bin/python -m benchmarks.strength.oracle_bitbully < positions.txt > scores.jsonl

Reads one position per line (moves as 1-based column digits, possibly empty); writes one JSON
object per line: {"moves": ..., "scores": {"<1-based column>": Pons score for the mover}}.
"""

from __future__ import annotations

import json
import sys

from bitbully import BitBully, Board


def main() -> None:
    agent = BitBully()
    for line in sys.stdin:
        moves = line.strip()
        board = Board()
        if moves and not board.play([int(c) - 1 for c in moves]):
            raise SystemExit(f"illegal position {moves!r}")
        scores = agent.score_all_moves(board)
        out = {"moves": moves, "scores": {str(c + 1): int(s) for c, s in scores.items()}}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
