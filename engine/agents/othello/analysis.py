"""Othello's analysis (`engine.analysis`): the endgame solver's exact disc difference where it
finishes, a fixed-depth search before that (its verdicts are estimates, marked so)."""

from __future__ import annotations

import time

import numpy as np

from engine.agents.base import Budget
from engine.agents.othello.evals import final_score
from engine.agents.othello.minimax import minimax_search
from engine.agents.othello.search import OthelloSearch
from engine.analysis import GOOD_LOSS, OUTCOMES, Review, sign
from engine.games.base import GameState
from engine.games.othello import PASS, OthelloState

#: The fixed depth of the search before the solver's zone, and how many empties the solver is
#: tried from (it stops at the first position it cannot finish in its share).
SEARCH_DEPTH = 8
SOLVE_FROM = 20
#: A search's estimate of at least this loss is a blunder (its points: its evaluation over
#: 100, on its own scale); what is good: `engine.analysis.GOOD_LOSS`.
BLUNDER_LOSS = 12


def load_solvers() -> None:
    """Load the search's and the solver's kernels (seconds in a fresh process, then nothing)."""
    minimax_search(OthelloSearch(), OthelloState.new(), Budget(depth=2), 0)


def review(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    """Every move judged: exactly in the solver's zone, by a search's estimate before it."""
    n = len(moves)
    boards = [s for s in states if isinstance(s, OthelloState)]
    search = OthelloSearch()
    exact, best = _solve_zone(search, boards, deadline)
    reviews: list[Review] = []
    todo = [i for i in range(n) if exact[i] is None or exact[i + 1] is None]
    for i, text in enumerate(moves):
        board = boards[i]
        review = Review(i, text, board.to_move(), "unsure", False, None, None)
        reviews.append(review)
        if len(board.legal_moves()) == 1:  # a forced move (a pass, say) is always the best
            review.verdict, review.exact, review.best = "best", True, text
            _outcomes(review, exact[i], exact[i])  # the only move keeps the value
            review.loss = 0.0
            continue
        if exact[i] is not None and exact[i + 1] is not None:
            b, a = exact[i] or 0, -(exact[i + 1] or 0)
            _outcomes(review, b, a)
            review.loss = float(max(0, b - a))
            review.verdict = verdict_of(b, a, review.loss)
            review.exact = True
            best_move = best[i]
            review.best = None if best_move is None else board.move_to_str(best_move)
            continue
        # Before the solver's zone: each move gets an even share of the time left.
        k = todo.index(i)
        share = (deadline - time.perf_counter()) / (len(todo) - k)
        if share > 0.005:
            _estimate(search, board, boards[i + 1], board.parse_move(text), share, review)
    return reviews


def _solve_zone(
    search: OthelloSearch, boards: list[OthelloState], deadline: float
) -> tuple[list[int | None], list[int | None]]:
    """The exact disc difference for the side to move (and a best move) of each position the
    solver finishes: from the end back, stopping at the first it cannot finish. It may use half
    the budget; the search before it shares the rest."""
    exact: list[int | None] = [None] * len(boards)
    best: list[int | None] = [None] * len(boards)
    for i, board in enumerate(boards):
        if board.is_over():
            exact[i] = int(final_score(_u(board.me), _u(board.opp)))
    solve_until = time.perf_counter() + (deadline - time.perf_counter()) / 2
    for i in range(len(boards) - 1, -1, -1):
        board = boards[i]
        if board.is_over():
            continue
        if board.legal_moves() == [PASS] and exact[i + 1] is not None:
            exact[i], best[i] = -(exact[i + 1] or 0), PASS
            continue
        if _empties(board) > SOLVE_FROM:
            break
        left = solve_until - time.perf_counter()
        if left <= 0.01:
            break
        res = minimax_search(search, board, Budget(time=left), 64)
        if not res.exact:
            break
        exact[i], best[i] = int(res.score), int(res.move)
    return exact, best


def _estimate(
    search: OthelloSearch,
    board: OthelloState,
    after: OthelloState,
    move: int,
    share: float,
    review: Review,
) -> None:
    """The search's value of the position and of the move played, at one depth, in `share`
    seconds; the verdict is an estimate (left unsure if the searches do not get deep enough)."""
    stop = time.perf_counter() + share
    root = minimax_search(search, board, Budget(time=share / 2, depth=SEARCH_DEPTH), 0)
    if root.depth < 2:  # the move played needs a search of its own at least 1 deep
        return
    if after.is_over():
        value_after = float(final_score(_u(after.me), _u(after.opp))) * 100
    else:
        left = stop - time.perf_counter()
        if left <= 0.002:
            return
        child = minimax_search(search, after, Budget(time=left, depth=root.depth - 1), 0)
        if child.depth < root.depth - 1:
            return
        value_after = child.score
    lost = 0.0 if root.move == move else max(0.0, root.score - -value_after) / 100
    review.loss = round(lost, 1)
    review.best = board.move_to_str(root.move)
    review.verdict = verdict_of(None, None, lost)


def _u(x: int) -> np.uint64:
    return np.uint64(x)


def _empties(board: OthelloState) -> int:
    return 64 - (board.black | board.white).bit_count()


def _outcomes(review: Review, before: int | None, after: int | None) -> None:
    if before is not None:
        review.outcome_before = OUTCOMES[sign(before)]
    if after is not None:
        review.outcome_after = OUTCOMES[sign(after)]


def verdict_of(before: int | None, after: int | None, lost: float) -> str:
    if before is not None and after is not None and sign(after) < sign(before):
        return "blunder" if after < 0 else "miss"
    if lost <= 0:
        return "best"
    if lost < GOOD_LOSS:
        return "good"
    if before is None and lost >= BLUNDER_LOSS:
        return "blunder"  # by the search's estimate
    return "inaccuracy"
