"""Connect Four's analysis (`engine.analysis`): the exact score of each position from the solver
(on 7x6 its opening book and 12-disc database make most positions a matter of milliseconds),
solved from the last position back so that the later solves fill the table the earlier ones
use, and a best move wherever the move played was not one."""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.agents.connect4 import solver
from engine.agents.connect4.score import from_score
from engine.analysis import OUTCOMES, Review, terminal_value
from engine.games.base import GameState
from engine.games.connect4 import Connect4State


def load_solvers() -> None:
    """Load the solver's kernels and tables (seconds in a fresh process, then nothing)."""
    state = Connect4State.new()
    for col in [0, 1, 2, 3, 4, 5, 6] * 3:  # three full rows: a solve of moments
        state = state.play(col)
    solver.best_moves(state)


def review(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    """Every move judged by the solver's exact scores."""
    n = len(moves)
    scores: list[int | None] = [None] * (n + 1)  # Pons' score for the side to move
    outcomes: list[int | None] = [None] * (n + 1)  # -1, 0, 1 for the side to move
    bests: list[list[int] | None] = [None] * (n + 1)  # columns keeping the exact score
    boards = [s for s in states if isinstance(s, Connect4State)]
    try:
        solver.check_variant(boards[0])
        solvable = True
    except solver.UnsupportedVariant:
        solvable = False
    for i, state in enumerate(boards):
        if state.is_over():
            outcomes[i] = terminal_value(state)
            if outcomes[i] == 0:
                scores[i] = 0
            else:  # the winner's disc was the last one played
                scores[i] = -((state.rows * state.cols + 2 - state.ply) // 2)
    if solvable:
        _solve_all(boards, moves, outcomes, scores, bests, deadline)
    reviews = []
    for i, text in enumerate(moves):
        state = boards[i]
        before = outcomes[i]
        after = None if outcomes[i + 1] is None else -(outcomes[i + 1] or 0)
        if after == 1:
            before = after if before is None else before  # a move cannot beat its position
        if before == -1 and after is None:
            after = -1  # nothing saves a lost position
        s_before, s_after = scores[i], None if scores[i + 1] is None else -(scores[i + 1] or 0)
        verdict = verdict_of(before, after, s_before, s_after, len(state.legal_moves()))
        review = Review(
            i,
            text,
            state.to_move(),
            verdict,
            verdict != "unsure",
            None if before is None else OUTCOMES[before],
            None if after is None else OUTCOMES[after],
        )
        if verdict == "unsure":  # every position of a solvable board was given to the solver
            review.why = "time" if solvable else "variant"
        best = bests[i]
        if best:
            centre = min(best, key=lambda c: abs(2 * c - (state.cols - 1)))
            review.best = state.move_to_str(centre)
        if s_before is not None and bests[i]:
            review.best_in = from_score(s_before, state.ply, state.rows * state.cols)[1]
        reviews.append(review)
    return reviews


def _sweep(items: list[int], until: float, solve: Callable[[int, float], None]) -> list[int]:
    """Solve each item with an even share of the time left until `until` (easy ones finish
    early and leave their share to the rest); returns the items not finished."""
    failed: list[int] = []
    for k, i in enumerate(items):
        share = (until - time.perf_counter()) / (len(items) - k)
        if share <= 0.001:
            return failed + items[k:]
        try:
            solve(i, time.perf_counter() + share)
        except solver.BudgetExceeded:
            failed.append(i)
    return failed


def _solve_all(
    boards: list[Connect4State],
    moves: list[str],
    outcomes: list[int | None],
    scores: list[int | None],
    bests: list[list[int] | None],
    deadline: float,
) -> None:
    """Exact scores from the last position back (later solves fill the table the earlier ones
    use), then a best move where the move played lost some of the score: the first column,
    centre first, proven to reach the position's score. A move that kept it is a best move."""
    todo = [i for i in range(len(boards) - 1, -1, -1) if scores[i] is None]

    def exact(i: int, until: float) -> None:
        score = solver.solve(boards[i], deadline=until)
        scores[i], outcomes[i] = score, (score > 0) - (score < 0)

    scores_until = time.perf_counter() + 0.8 * (deadline - time.perf_counter())
    failed = _sweep(todo, scores_until, exact)
    _sweep(failed, scores_until, exact)  # a second chance: the table keeps what was searched
    worse = []
    for i, text in enumerate(moves):
        before, after = scores[i], scores[i + 1]
        if before is not None and after is not None:
            if -after == before:
                bests[i] = [boards[i].parse_move(text)]
            else:
                worse.append(i)

    def best(i: int, until: float) -> None:
        bests[i] = [_a_best_move(boards[i], scores[i] or 0, until)]

    _sweep(worse, deadline, best)


def _a_best_move(state: Connect4State, score: int, until: float) -> int:
    """The centre-most column reaching `score`, the exact score of the position."""
    order = sorted(state.legal_moves(), key=lambda c: abs(2 * c - (state.cols - 1)))
    wins = [c for c in order if c in state.winning_moves()]
    if wins:
        return wins[0]
    if solver.every_move_loses(state):
        return order[0]  # every move loses at once
    safe = set(solver.non_losing_moves(state))
    found = solver.probe(state, [c for c in order if c in safe], score - 1, deadline=until)
    if found.found is None:
        raise solver.BudgetExceeded("no best move proven in time")
    return found.found


def verdict_of(
    before: int | None, after: int | None, s_before: int | None, s_after: int | None, legal: int
) -> str:
    if before is None or after is None:
        return "unsure"
    if after < before:
        return "blunder" if after == -1 else "miss"  # win to draw: the win was missed
    if before == 0 or legal == 1:
        return "best"  # every drawing move is as good as another
    if s_before is None or s_after is None:
        return "unsure"  # the outcome kept, but how fast is not proven
    if s_after == s_before:
        return "best"
    return "good" if before == 1 else "inaccuracy"  # a slower win, or a quicker loss
