"""Analysis of a game: for every move the value of the position before and after it, proven by
a solver where one finishes in the budget, and a verdict (best, good, inaccuracy, miss,
blunder, or unsure when nothing was proven); per player the accuracy, and the turning point.

Connect Four: the exact score of each position from the solver (the opening book gives the
outcome of the first positions), solved from the last position back so that the later solves
fill the table the earlier ones use. Othello: the endgame solver's exact disc difference where
it finishes, a fixed-depth search before that (its verdicts are estimates, marked so). The
verdict rules: docs/games.md, "Analysis". Runs in a pool worker; the result is plain data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from engine.agents.base import Budget
from engine.agents.connect4 import book, solver
from engine.agents.othello.evals import final_score
from engine.agents.othello.minimax import OthelloSearch, minimax_search
from engine.games import new_game
from engine.games.base import GameState
from engine.games.connect4 import Connect4State
from engine.games.othello import PASS, OthelloState
from engine.hints import from_score

#: Bumped when the verdicts change: a stored analysis of another version is computed again.
VERSION = 1
VERDICTS = ("best", "good", "inaccuracy", "miss", "blunder", "unsure")
OUTCOMES = {1: "win", 0: "draw", -1: "loss"}
#: Budgets in seconds (the issue's limits on 2 cores, less the pool's own overhead).
BUDGETS = {"connect4": 4.5, "othello": 13.5}
#: Othello: the fixed depth of the search before the solver's zone, and how many empties the
#: solver is tried from (it stops at the first position it cannot finish in its share).
SEARCH_DEPTH = 8
SOLVE_FROM = 20
#: Othello verdicts by what a move lost against the best move: discs where proven, before the
#: solver's zone the search's points (its evaluation over 100: an estimate on its own scale).
GOOD_LOSS, BLUNDER_LOSS = 6, 12


@dataclass(slots=True)
class Review:
    """One move: who made it, what it was worth, the verdict."""

    ply: int  # 0-based
    move: str
    player: int  # seat: 0 moved first
    verdict: str
    exact: bool  # the verdict is proven (False: unsure, or an Othello search estimate)
    outcome_before: str | None  # "win", "draw" or "loss" for the mover, exact, or None
    outcome_after: str | None
    best: str | None = None  # a move keeping the best value, where known
    best_in: int | None = None  # Connect Four: the best move's win or loss in N own moves
    loss: float | None = None  # Othello: lost against the best move (exact: discs; else
    # the search's points, a hundredth of its evaluation units: an estimate, not discs)


@dataclass(slots=True)
class Side:
    """A player's record in one game."""

    judged: int = 0  # moves whose outcome before and after is known, or judged by a search
    kept: int = 0  # of those, the moves that kept the outcome (neither blunder nor miss)
    blunders: int = 0
    misses: int = 0
    inaccuracies: int = 0

    @property
    def accuracy(self) -> float | None:
        return None if not self.judged else self.kept / self.judged


@dataclass(slots=True)
class Analysis:
    game: str
    variant: str | None
    moves: list[Review]
    players: list[Side] = field(default_factory=lambda: [Side(), Side()])
    turning_point: int | None = None  # ply of the move that decided the outcome
    turning_text: str | None = None
    seconds: float = 0.0
    version: int = VERSION

    @property
    def unsure(self) -> int:
        return sum(r.verdict == "unsure" for r in self.moves)

    def to_json(self) -> dict[str, Any]:
        players = [dict(asdict(s), accuracy=s.accuracy) for s in self.players]
        return {
            "game": self.game,
            "variant": self.variant,
            "version": self.version,
            "seconds": round(self.seconds, 3),
            "moves": [asdict(r) for r in self.moves],
            "players": players,
            "turning_point": self.turning_point,
            "turning_text": self.turning_text,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Analysis:
        """The analysis `to_json` wrote; ValueError if it is not one."""
        try:
            moves = [Review(**m) for m in data["moves"]]
            players = [
                Side(**{k: v for k, v in p.items() if k != "accuracy"}) for p in data["players"]
            ]
            out = cls(
                str(data["game"]),
                data["variant"],
                moves,
                players,
                data["turning_point"],
                data["turning_text"],
                float(data["seconds"]),
                int(data["version"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not an analysis: {exc}") from None
        if len(players) != 2 or any(r.verdict not in VERDICTS for r in moves):
            raise ValueError("not an analysis: bad players or verdicts")
        return out


def split_moves(game: str, text: str) -> list[str]:
    """Moves in the protocol's notation: separated by spaces or commas, or run together
    (Connect Four: one column character each; Othello: squares like d3, and `pass`)."""
    text = text.strip().lower()
    if re.search(r"[\s,]", text):
        return [t for t in re.split(r"[\s,]+", text) if t]
    if game == "othello":
        parts = re.findall(r"pass|[a-h][1-8]|.", text)
        return parts
    return list(text)


def positions(game: str, variant: str | None, moves: list[str]) -> list[GameState]:
    """Every position of the game, the start first; ValueError names a bad move."""
    states = [new_game(game, variant)]
    for n, text in enumerate(moves, 1):
        state = states[-1]
        if state.is_over():
            raise ValueError(f"move {n} ({text}) comes after the end of the game")
        try:
            move = state.parse_move(text)
        except ValueError as exc:
            raise ValueError(f"move {n} ({text}): {exc}") from None
        if move not in state.legal_moves():
            raise ValueError(f"move {n} ({text}) is not legal there")
        states.append(state.play(move))
    return states


def analyse(
    game: str, moves: list[str], variant: str | None = None, budget: float | None = None
) -> Analysis:
    """Analyse a game given as its moves (as stored), within about `budget` seconds (not
    counting a new process's one-time loading of the solver, which a pool worker has done)."""
    states = positions(game, variant, moves)
    _load_solvers(game)
    t0 = time.perf_counter()
    seconds = BUDGETS.get(game, 5.0) if budget is None else budget
    if game == "connect4":
        reviews = _connect4(states, moves, t0 + seconds)
    elif game == "othello":
        reviews = _othello(states, moves, t0 + seconds)
    else:
        raise ValueError(f"no analysis for {game}")
    result = Analysis(game, variant, reviews)
    for r in reviews:
        side = result.players[r.player]
        known = r.outcome_before is not None and r.outcome_after is not None
        if r.verdict == "unsure" and not known:
            continue
        side.judged += 1  # a move whose outcome change is known, or an Othello estimate
        side.kept += r.verdict not in ("blunder", "miss")
        side.blunders += r.verdict == "blunder"
        side.misses += r.verdict == "miss"
        side.inaccuracies += r.verdict == "inaccuracy"
    result.turning_point, result.turning_text = _turning_point(game, reviews)
    result.seconds = time.perf_counter() - t0
    return result


# ---------------------------------------------------------------------------- Connect Four


def _load_solvers(game: str) -> None:
    """Load the kernels and tables a solve uses (seconds in a fresh process, then nothing)."""
    if game == "connect4":
        state = Connect4State.new()
        for col in [0, 1, 2, 3, 4, 5, 6] * 3:  # three full rows: a solve of moments
            state = state.play(col)
        solver.best_moves(state)
    elif game == "othello":
        board = OthelloState.new()
        minimax_search(OthelloSearch(), board, Budget(depth=2), 0)


def _terminal_value(state: GameState) -> int:
    """-1 when the side to move has lost (the last move won), 0 for a draw."""
    outcome = state.outcome()
    return 0 if outcome is None or outcome.winner is None else -1


def _connect4(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    n = len(moves)
    scores: list[int | None] = [None] * (n + 1)  # Pons' score for the side to move
    outcomes: list[int | None] = [None] * (n + 1)  # -1, 0, 1 for the side to move
    bests: list[list[int] | None] = [None] * (n + 1)  # columns keeping the exact score
    book_cols: list[int | None] = [None] * (n + 1)
    boards = [s for s in states if isinstance(s, Connect4State)]
    try:
        solver.check_variant(boards[0])
        solvable = True
    except solver.UnsupportedVariant:
        solvable = False
    for i, state in enumerate(boards):
        if state.is_over():
            outcomes[i] = _terminal_value(state)
            if outcomes[i] == 0:
                scores[i] = 0
            else:  # the winner's disc was the last one played
                scores[i] = -((state.rows * state.cols + 2 - state.ply) // 2)
        elif solvable and state.ply <= book.MAX_PLY:
            found = book.lookup(state)
            if found is not None:
                outcomes[i], book_cols[i] = found
    if solvable:
        _solve_all(boards, moves, outcomes, scores, bests, book_cols, deadline)
    reviews = []
    for i, text in enumerate(moves):
        state, col = boards[i], boards[i].parse_move(text)
        before = outcomes[i]
        after = None if outcomes[i + 1] is None else -(outcomes[i + 1] or 0)
        if after == 1 or (after is not None and book_cols[i] == col):
            before = after if before is None else before  # a move cannot beat its position
        if before == -1 and after is None:
            after = -1  # nothing saves a lost position
        if after is None and book_cols[i] == col and before is not None:
            after = before  # the book's move keeps the outcome
        s_before, s_after = scores[i], None if scores[i + 1] is None else -(scores[i + 1] or 0)
        verdict = _c4_verdict(before, after, s_before, s_after, len(state.legal_moves()))
        review = Review(
            i,
            text,
            state.to_move(),
            verdict,
            verdict != "unsure",
            None if before is None else OUTCOMES[before],
            None if after is None else OUTCOMES[after],
        )
        book_col = book_cols[i]
        best = bests[i] or ([book_col] if book_col is not None else None)
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
    book_cols: list[int | None],
    deadline: float,
) -> None:
    """Outcomes first (the solver's win/draw/loss search is much faster than the exact score),
    from the last position back: later solves fill the table the earlier ones use. Then exact
    scores and best moves, first where a move changed the outcome (the turning point names
    the move that kept it). The book's positions take minutes to solve: they keep its outcome.
    """
    todo = [i for i in range(len(boards) - 1, -1, -1) if outcomes[i] is None]

    def weak(i: int, until: float) -> None:
        outcomes[i] = solver.solve_weak(boards[i], deadline=until)

    def full(i: int, until: float) -> None:
        scores[i], bests[i] = solver.best_moves(boards[i], deadline=until)
        score = scores[i] or 0
        outcomes[i] = (score > 0) - (score < 0)

    outcomes_until = time.perf_counter() + 0.6 * (deadline - time.perf_counter())
    failed = _sweep(todo, outcomes_until, weak)
    _sweep(failed, outcomes_until, weak)  # a second chance: the table keeps what was searched
    changed = [
        i
        for i in range(len(moves))
        if outcomes[i] is not None
        and outcomes[i + 1] is not None
        and -(outcomes[i + 1] or 0) < (outcomes[i] or 0)
    ]
    rest = [
        i
        for i in range(len(boards) - 1, -1, -1)
        if outcomes[i] is not None and scores[i] is None and not boards[i].is_over()
    ]
    first = [i for i in changed if book_cols[i] is None and scores[i] is None]
    _sweep(first, time.perf_counter() + 0.5 * (deadline - time.perf_counter()), full)
    _sweep([i for i in rest if book_cols[i] is None and i not in first], deadline, full)


def _c4_verdict(
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


# ---------------------------------------------------------------------------- Othello


def _othello(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    n = len(moves)
    boards = [s for s in states if isinstance(s, OthelloState)]
    exact: list[int | None] = [None] * (n + 1)  # disc difference for the side to move
    best: list[int | None] = [None] * (n + 1)
    search = OthelloSearch()
    for i, board in enumerate(boards):
        if board.is_over():
            exact[i] = int(final_score(_u(board.me), _u(board.opp)))
    # The solver's zone, from the end back; it stops at the first position it cannot finish.
    # It may use half the budget; the search before it shares the rest.
    solve_until = time.perf_counter() + (deadline - time.perf_counter()) / 2
    for i in range(n, -1, -1):
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
    reviews: list[Review] = []
    todo = [i for i in range(n) if exact[i] is None or exact[i + 1] is None]
    for i, text in enumerate(moves):
        board, move = boards[i], boards[i].parse_move(text)
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
            review.verdict = _othello_verdict(b, a, review.loss)
            review.exact = True
            best_move = best[i]
            review.best = None if best_move is None else board.move_to_str(best_move)
            continue
        # Before the solver's zone: the search's value of the position and of the move played,
        # at one depth; the verdict is an estimate. Each gets an even share of the time left.
        k = todo.index(i)
        share = (deadline - time.perf_counter()) / (len(todo) - k)
        if share <= 0.005:
            continue
        stop = time.perf_counter() + share
        root = minimax_search(search, board, Budget(time=share / 2, depth=SEARCH_DEPTH), 0)
        if root.depth < 2:  # the move played needs a search of its own at least 1 deep
            continue
        after = boards[i + 1]
        if after.is_over():
            value_after = float(final_score(_u(after.me), _u(after.opp))) * 100
        else:
            left = stop - time.perf_counter()
            if left <= 0.002:
                continue
            child = minimax_search(search, after, Budget(time=left, depth=root.depth - 1), 0)
            if child.depth < root.depth - 1:
                continue
            value_after = child.score
        lost = 0.0 if root.move == move else max(0.0, root.score - -value_after) / 100
        review.loss = round(lost, 1)
        review.best = board.move_to_str(root.move)
        review.verdict = _othello_verdict(None, None, lost)
    return reviews


def _u(x: int) -> np.uint64:
    return np.uint64(x)


def _empties(board: OthelloState) -> int:
    return 64 - (board.black | board.white).bit_count()


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _outcomes(review: Review, before: int | None, after: int | None) -> None:
    if before is not None:
        review.outcome_before = OUTCOMES[_sign(before)]
    if after is not None:
        review.outcome_after = OUTCOMES[_sign(after)]


def _othello_verdict(before: int | None, after: int | None, lost: float) -> str:
    if before is not None and after is not None and _sign(after) < _sign(before):
        return "blunder" if after < 0 else "miss"
    if lost <= 0:
        return "best"
    if lost < GOOD_LOSS:
        return "good"
    if before is None and lost >= BLUNDER_LOSS:
        return "blunder"  # by the search's estimate
    return "inaccuracy"


# ---------------------------------------------------------------------------- turning point


def _first_player_values(reviews: list[Review]) -> list[int | None]:
    """The outcome of each position (after 0, 1, ... moves) for the first player, if known."""
    signs = {v: k for k, v in OUTCOMES.items()}
    values: list[int | None] = [None] * (len(reviews) + 1)
    for r in reviews:
        flip = 1 if r.player == 0 else -1
        if r.outcome_before is not None:
            values[r.ply] = flip * signs[r.outcome_before]
        if r.outcome_after is not None:
            values[r.ply + 1] = flip * signs[r.outcome_after]
    return values


def _unproven_change_after(reviews: list[Review], ply: int) -> tuple[int, int] | None:
    """The moves (1-based, first and last) in which the outcome must have changed after the
    move at `ply` without a proof of where: the outcome after it is not the final one and
    unknown positions lie between. None if the end agrees with it."""
    values = _first_player_values(reviews)
    after, final = values[ply + 1], next((v for v in reversed(values) if v is not None), None)
    if after is None or final is None or after == final:
        return None
    unknown = [i for i in range(ply + 2, len(values)) if values[i] is None]
    if not unknown:
        return None
    return unknown[0], min(len(reviews), unknown[-1] + 1)


def _turning_point(game: str, reviews: list[Review]) -> tuple[int | None, str | None]:
    """The last move that changed the outcome (proven); in Othello without one, the move a
    search found the costliest, if it cost a good move's margin or more."""
    proven = [r for r in reviews if r.exact and r.verdict in ("blunder", "miss")]
    if proven:
        r = proven[-1]
        gap = _unproven_change_after(reviews, r.ply)
        if gap is not None:
            first, last = gap
            return None, (
                f"not found: the outcome changed again somewhere in moves {first}-{last}, "
                "which the solver could not finish in time"
            )
    else:
        guesses = [r for r in reviews if not r.exact and (r.loss or 0.0) >= GOOD_LOSS]
        if not guesses:
            return None, None
        r = max(guesses, key=lambda g: (g.loss or 0.0, -g.ply))
    what = "column" if game == "connect4" else "square"
    text = f"move {r.ply + 1} ({what} {r.move})"
    if r.exact:
        text += f" threw away the {r.outcome_before}"
        if r.best is not None:
            if game == "connect4" and r.best_in is not None and r.outcome_before == "win":
                text += f"; {what} {r.best} won in {r.best_in}"
            else:
                text += f"; {what} {r.best} kept it"
    else:
        text += f" was the costliest: {r.loss:g} points below {r.best} by a search's estimate"
    return r.ply, text


# ---------------------------------------------------------------------------- words

WORDS = {
    "best": "best",
    "good": "good",
    "inaccuracy": "inaccuracy",
    "miss": "miss",
    "blunder": "BLUNDER",
    "unsure": "unsure",
}


def verdict_word(r: Review) -> str:
    """The verdict as shown; an unsure move whose outcome is known to be kept says so."""
    if r.verdict == "unsure" and r.outcome_before and r.outcome_before == r.outcome_after:
        return f"kept ({r.outcome_before})"
    word = WORDS[r.verdict]
    return word if r.exact or r.verdict == "unsure" else f"{word}?"  # ?: a search's estimate


def _value(r: Review, game: str) -> str:
    if game == "othello" and r.loss is not None and r.verdict not in ("best", "unsure"):
        return f"-{r.loss:g} {'discs' if r.exact else 'points'}"
    if r.outcome_before is None and r.outcome_after is None:
        return ""
    return f"{r.outcome_before or '?'} -> {r.outcome_after or '?'}"


def table(a: Analysis, names: tuple[str, str]) -> list[str]:
    """One line per move: number, player, move, verdict, value, the best move if it differs."""
    width = max(6, *(len(n) for n in names))
    out = [f"{'#':>3}  {'player':<{width}}  {'move':<5} {'verdict':<14} {'value':<16} best"]
    for r in a.moves:
        best = r.best if r.best and r.best != r.move and r.verdict != "best" else ""
        if best and a.game == "connect4" and r.best_in is not None and r.outcome_before != "draw":
            best += f" ({r.outcome_before} in {r.best_in})"
        out.append(
            f"{r.ply + 1:>3}  {names[r.player]:<{width}}  {r.move:<5} {verdict_word(r):<14} "
            f"{_value(r, a.game):<16} {best}".rstrip()
        )
    return out


def _percent(x: float | None) -> str:
    return "no judged moves" if x is None else f"accuracy {100 * x:.0f}%"


def summary(a: Analysis, names: tuple[str, str]) -> list[str]:
    """Per player their accuracy and mistakes, the turning point, and what was not proven."""
    out = []
    for name, side in zip(names, a.players, strict=True):
        moves = "move" if side.judged == 1 else "moves"
        parts = [_percent(side.accuracy) + f" ({side.kept} of {side.judged} {moves} kept it)"]
        for count, word in (
            (side.blunders, "blunder"),
            (side.misses, "miss"),
            (side.inaccuracies, "inaccuracy"),
        ):
            plural = {"miss": "misses", "inaccuracy": "inaccuracies"}.get(word, word + "s")
            parts.append(f"{count} {word if count == 1 else plural}")
        out.append(f"{name}: " + ", ".join(parts))
    if a.turning_text:
        out.append(f"Turning point: {a.turning_text}.")
    else:
        out.append("Turning point: none found (no move proven to change the outcome).")
    unsure = a.unsure
    if unsure:
        out.append(
            f"{unsure} of {len(a.moves)} moves unsure: the solver could not finish them in the "
            "time an analysis has."
        )
    if a.game == "othello" and any(not r.exact and r.verdict != "unsure" for r in a.moves):
        out.append("A ? marks a search's estimate; without it the value is proven to the end.")
    return out
