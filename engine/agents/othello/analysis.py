"""Othello's analysis (`engine.analysis`): every move valued in discs for the mover, the value of
the best move and of the move played. The endgame solver's exact disc difference where it
finishes; before that a fixed-depth search with the pattern evaluation (whose values are disc
differences: an estimate, marked so). The verdict comes from the discs lost, the win chance
from the disc value by a logistic curve (`win_chance`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from engine.agents.base import Budget
from engine.agents.othello.evals import WIN, final_score
from engine.agents.othello.minimax import minimax_search
from engine.agents.othello.search import OthelloSearch, SearchResult
from engine.analysis import OUTCOMES, Review, sign
from engine.games.base import GameState
from engine.games.othello import PASS, OthelloState

#: The fixed depth of the search before the solver's zone, and how many empties the solver is
#: tried from (it stops at the first position it cannot finish in its share).
SEARCH_DEPTH = 8
SOLVE_FROM = 20
#: Discs a move may lose against the best one and still be good; from BLUNDER_LOSS on it is a
#: blunder (in between: an inaccuracy).
GOOD_LOSS = 4.0
BLUNDER_LOSS = 10.0
#: The win chance of a disc value v for the side to move: 1 / (1 + exp(-WIN_SLOPE * v)).
#: Fitted by `python -m tools.winfit --players expert --games 60 --seed 3` (the expert against
#: itself, 0.1 s a move, two random opening plies; each game analysed with the 9 s budget):
#: the slope that makes the results of the 3605 positions most likely, 0.2006 (+5 discs: 73%,
#: +10: 88%). One slope for the whole game: fitted per band of 12 plies it rises from about 0
#: in the opening (where the estimates foretell little of an expert game) through 0.22 around
#: ply 30 to the tool's cap of 1 in the last 12 plies.
WIN_SLOPE = 0.2006


def win_chance(discs: float) -> float:
    """The expected score (0..1) of the side to move whose position is worth `discs`."""
    return 1.0 / (1.0 + math.exp(min(700.0, -WIN_SLOPE * discs)))


def load_solvers() -> None:
    """Load the search's and the solver's kernels (seconds in a fresh process, then nothing)."""
    search, state = _search(), OthelloState.new()
    minimax_search(search, state, Budget(depth=2), 0)
    while _empties(state) > 8 and not state.is_over():  # the solver's: a position near the end
        state = state.play(state.legal_moves()[0])
    if not state.is_over():
        minimax_search(search, state, Budget(time=60.0), 64)


def _search() -> OthelloSearch:
    return OthelloSearch(eval="patterns")


@dataclass(slots=True)
class _Values:
    """A move's two values in discs for the mover, and whether both are exact."""

    best: float
    played: float
    exact: bool
    best_move: int | None


def review(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    """Every move judged: exactly in the solver's zone, by a search's estimate before it."""
    n = len(moves)
    boards = [s for s in states if isinstance(s, OthelloState)]
    search = _search()
    exact, best = _solve_zone(search, boards, deadline)
    values: list[_Values | None] = [None] * n
    todo = [i for i in range(n) if exact[i] is None or exact[i + 1] is None]
    for i in range(n):
        if exact[i] is not None and exact[i + 1] is not None:
            b, a = exact[i] or 0, -(exact[i + 1] or 0)
            values[i] = _Values(float(b), float(a), True, best[i])
        elif len(boards[i].legal_moves()) > 1:
            # Before the solver's zone: each move gets an even share of the time left.
            k = todo.index(i)
            share = (deadline - time.perf_counter()) / (len(todo) - k)
            if share > 0.005:
                values[i] = _estimate(search, boards[i], boards[i + 1], moves[i], share, deadline)
    for i in range(n - 1, -1, -1):  # a forced move (a pass) keeps the value of what follows
        if values[i] is None and len(boards[i].legal_moves()) == 1:
            after = values[i + 1] if i + 1 < n else None
            if after is not None:
                v = -after.best
                values[i] = _Values(v, v, after.exact, boards[i].legal_moves()[0])
    return [_review(i, moves[i], boards[i], values[i]) for i in range(n)]


def _review(i: int, text: str, board: OthelloState, v: _Values | None) -> Review:
    review = Review(i, text, board.to_move(), "unsure", False, None, None)
    forced = len(board.legal_moves()) == 1
    if forced:  # the only move is the best, whatever it is worth
        review.verdict, review.exact, review.best, review.loss = "best", True, text, 0.0
    if v is None:
        review.why = None if forced else "time"  # the search's share was too short
        return review
    best, played = round(v.best, 1), round(v.played, 1)  # as shown: a tenth of a disc
    review.value_best, review.value_played = best, played
    review.chance_before, review.chance_after = win_chance(best), win_chance(played)
    lost = max(0.0, round(best - played, 1))
    review.loss = lost
    if v.exact:
        review.outcome_before = OUTCOMES[sign(round(v.best))]
        review.outcome_after = OUTCOMES[sign(round(v.played))]
    review.exact = v.exact  # a forced move's verdict is sure, its value may be an estimate
    if forced:
        return review
    if v.best_move is not None:
        review.best = board.move_to_str(v.best_move)
    review.verdict = verdict_of(best if v.exact else None, played if v.exact else None, lost)
    return review


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


def discs(result: SearchResult) -> float:
    """A search's score in discs for the side to move: exact, a forced end's disc difference,
    or the pattern evaluation's hundredths of a disc."""
    score = result.score
    if result.exact:
        return score
    if abs(score) >= WIN:
        return score - WIN if score > 0 else score + WIN
    return max(-64.0, min(64.0, score / 100))


def _estimate(
    search: OthelloSearch,
    board: OthelloState,
    after: OthelloState,
    text: str,
    share: float,
    deadline: float,
) -> _Values | None:
    """The search's value of the position and of the move played, at one depth, in `share`
    seconds (None if the searches do not get deep enough)."""
    stop = time.perf_counter() + share
    move = board.parse_move(text)
    root = minimax_search(search, board, Budget(time=share / 2, depth=SEARCH_DEPTH), 0)
    if root.depth < 2:  # the move played needs a search of its own at least 1 deep
        return None
    if after.is_over():
        played = -float(final_score(_u(after.me), _u(after.opp)))
    else:
        # One ply less deep than the root's last search (two if the reply is a forced pass,
        # which the root's search counted as a ply). Its time is generous: a search with little
        # time left stops before a depth it expects not to finish, and this one is cheaper than
        # the root's last; the moves after it make up what it takes over the share.
        depth, side, nxt = root.depth - 1, -1.0, after
        if after.legal_moves() == [PASS]:
            depth, side, nxt = max(1, root.depth - 2), 1.0, after.play(PASS)
        now = time.perf_counter()
        left = min(max(stop - now, 2 * share), deadline - now)
        if left <= 0.002:
            return None
        child = minimax_search(search, nxt, Budget(time=left, depth=depth), 0)
        if child.depth < depth:
            return None
        played = side * discs(child)
    if root.move == move:
        return _Values(played, played, False, root.move)
    best = max(discs(root), played)
    return _Values(best, played, False, root.move if best > played else move)


def _u(x: int) -> np.uint64:
    return np.uint64(x)


def _empties(board: OthelloState) -> int:
    return 64 - (board.black | board.white).bit_count()


def verdict_of(before: float | None, after: float | None, lost: float) -> str:
    """The verdict of a move that lost `lost` discs; `before` and `after` where exact."""
    if before is not None and after is not None and sign(round(after)) < sign(round(before)):
        if after < 0 or lost >= BLUNDER_LOSS:
            return "blunder"
        return "miss"  # a win thrown to a draw
    if lost <= 0:
        return "best"
    if lost < GOOD_LOSS:
        return "good"
    if lost >= BLUNDER_LOSS:
        return "blunder"
    return "inaccuracy"
