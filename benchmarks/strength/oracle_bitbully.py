"""Oracle for analysis.py: Connect Four scores by bitbully (AGPL), run as a separate
process in its own environment, never imported by the bot or the tests.

    python -m venv /tmp/bbenv && /tmp/bbenv/bin/pip install bitbully
    /tmp/bbenv/bin/python -m benchmarks.strength.oracle_bitbully < positions.txt > scores.jsonl

Reads one position per line (moves as 1-based column digits, possibly empty); writes one JSON
object per line: {"moves": ..., "scores": {"<1-based column>": Pons score for the mover}}.

With --time (for `benchmarks.speed.c4_solver`): the position's own score by MTD(f), each solve
cold (the transposition table cleared first, not timed), without the opening book unless
--book: {"moves": ..., "score": ..., "seconds": ..., "nodes": ...}.
"""

from __future__ import annotations

import json
import sys
import time

from bitbully import BitBully, Board


def board_of(moves: str) -> Board:
    board = Board()
    if moves and not board.play([int(c) - 1 for c in moves]):
        raise SystemExit(f"illegal position {moves!r}")
    return board


def timed(book: bool) -> None:
    agent = BitBully() if book else BitBully(opening_book=None)
    for line in sys.stdin:
        moves = line.strip()
        board = board_of(moves)
        agent.reset_transposition_table()
        agent.reset_node_counter()
        t0 = time.perf_counter()
        score = agent.mtdf(board)
        seconds = time.perf_counter() - t0
        out = {"moves": moves, "score": int(score), "seconds": seconds}
        out["nodes"] = int(agent.get_node_counter())
        print(json.dumps(out), flush=True)


def main() -> None:
    if "--time" in sys.argv[1:]:
        timed("--book" in sys.argv[1:])
        return
    agent = BitBully()
    for line in sys.stdin:
        moves = line.strip()
        scores = agent.score_all_moves(board_of(moves))
        out = {"moves": moves, "scores": {str(c + 1): int(s) for c, s in scores.items()}}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
