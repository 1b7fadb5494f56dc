"""A hint for the player to move: the best move the strongest agent finds and, where a solver
proves it, what it leads to ("you win with your 6th move from now"). Runs in a pool worker."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4 import solver
from engine.games.base import GameState
from engine.games.connect4 import Connect4State
from engine.games.othello import OthelloState

# Othello positions with at most this many empty squares are solved to the end without a time
# limit (a fraction of a second on one core).
SOLVE_EMPTIES = 14


@dataclass(frozen=True, slots=True)
class Hint:
    move: str  # as the player types it: a column, a square
    outcome: str  # what it leads to, in plain words
    exact: bool  # proven by a solver, or the choice of a search


def in_moves(n: int) -> str:
    """`n` of the player's own moves from now, counting the one to play."""
    if n <= 1:
        return "your next move"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"your {n}{suffix} move from now"


def from_score(score: int, ply: int, cells: int) -> tuple[str, int]:
    """Pons' score (the winner's disc is number cells + 1 - 2|score| + 1 of the game, counting
    from 1) as ("win" | "draw" | "loss", in how many of the winner's own moves from now)."""
    if score > 0:
        return "win", (cells + 1 - ply - 2 * score) // 2 + 1
    if score < 0:
        return "loss", (cells - ply + 2 * score) // 2 + 1
    return "draw", 0


def _empties(state: OthelloState) -> int:
    return 64 - (state.black | state.white).bit_count()


def _connect4(state: Connect4State, seconds: float) -> Hint | None:
    """The solver's best move and its exact outcome, if it finishes in time."""
    try:
        solver.check_variant(state)
        score, best = solver.best_moves(state, deadline=time.perf_counter() + seconds)
    except (solver.BudgetExceeded, solver.UnsupportedVariant):
        return None
    move = state.move_to_str(min(best, key=lambda c: abs(2 * c - (state.cols - 1))))
    outcome, n = from_score(score, state.ply, state.rows * state.cols)
    if outcome == "win":
        return Hint(move, f"you win with {in_moves(n)}", True)
    if outcome == "draw":
        return Hint(move, "a draw with the best play on both sides", True)
    return Hint(move, f"you lose against perfect play; this holds out longest, {n} moves", True)


def hint(state: GameState, seconds: float = 1.5) -> Hint:
    """The best move for the side to move, found within about `seconds`."""
    if state.is_over():
        raise ValueError("the game is over: there is no move to hint")
    t0 = time.perf_counter()
    if isinstance(state, Connect4State):
        solved = _connect4(state, seconds / 2)
        if solved is not None:
            return solved
    level = registry.LEVELS[state.game]["expert"]
    left = max(0.1, seconds - (time.perf_counter() - t0))
    budget = Budget(depth=level.budget.depth, nodes=level.budget.nodes, time=left)
    if isinstance(state, OthelloState) and _empties(state) <= SOLVE_EMPTIES:
        # Exact regardless of the clock: a first call pays the kernels' compile inside any
        # time budget, and a hint this near the end must not depend on how busy the host is.
        budget = Budget()
    agent = registry.build(level.spec, state.game)
    decision = agent.choose(state, budget, random.Random(0))
    move = state.move_to_str(decision.move)
    if decision.info.get("exact") and decision.score is not None:  # Othello's endgame solver
        discs = int(decision.score)
        words = (
            f"you win by {discs} discs"
            if discs > 0
            else "a draw with the best play on both sides"
            if discs == 0
            else f"you lose by {-discs} discs against perfect play, the least you can"
        )
        return Hint(move, words, True)
    if decision.info.get("reason") == "book" and decision.score is not None:
        outcome = int(decision.score)
        kinds = ("it keeps your win", "it keeps the draw", "you lose against perfect play")
        return Hint(move, kinds[0 if outcome > 0 else 1 if outcome == 0 else 2], True)
    return Hint(move, "the best move a deep search finds, not proven to the end", False)
