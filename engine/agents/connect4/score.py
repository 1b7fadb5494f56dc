"""The solver's score of a position (Pons' convention) in words a person reads, and the hint
the solver proves."""

from __future__ import annotations

import time

from engine.agents.connect4 import solver
from engine.games.connect4 import Connect4State


def from_score(score: int, ply: int, cells: int) -> tuple[str, int]:
    """Pons' score (the winner's disc is number cells + 1 - 2|score| + 1 of the game, counting
    from 1) as ("win" | "draw" | "loss", in how many of the winner's own moves from now)."""
    if score > 0:
        return "win", (cells + 1 - ply - 2 * score) // 2 + 1
    if score < 0:
        return "loss", (cells - ply + 2 * score) // 2 + 1
    return "draw", 0


def in_moves(n: int) -> str:
    """`n` of the player's own moves from now, counting the one to play."""
    if n <= 1:
        return "your next move"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"your {n}{suffix} move from now"


def solved_hint(state: Connect4State, seconds: float) -> tuple[str, str] | None:
    """The solver's best move and its exact outcome in words, if it finishes in time."""
    try:
        solver.check_variant(state)
        score, best = solver.best_moves(state, deadline=time.perf_counter() + seconds)
    except (solver.BudgetExceeded, solver.UnsupportedVariant):
        return None
    move = state.move_to_str(min(best, key=lambda c: abs(2 * c - (state.cols - 1))))
    outcome, n = from_score(score, state.ply, state.rows * state.cols)
    if outcome == "win":
        return move, f"you win with {in_moves(n)}"
    if outcome == "draw":
        return move, "a draw with the best play on both sides"
    return move, f"you lose against perfect play; this holds out longest, {n} moves"
