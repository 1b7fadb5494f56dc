"""Learning from one's mistakes in an analysed match: the positions before a player's worst
moves, worst first; a new move tried there, judged by the same solvers and rules as the
analysis (`engine.analysis`); and the words both front ends show.

`judge` runs in a pool worker (module level, plain data in and out); the rest is plain data.
A retry keeps no state of its own: a step is found again from the match, the ply of the
mistake and the stored analysis, so the front ends carry only those (Discord in its custom
ids) and a retry goes on after a restart."""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.analysis import Review, analysis_kit, positions
from engine.games.base import GameState, Move
from engine.games.catalog import game_info

#: The verdicts worth trying again, and their order when two cost the same.
MISTAKES = {"blunder": 0, "miss": 1, "inaccuracy": 2}
#: A tried move that is judged one of these holds.
HOLDS = ("best", "good")
#: What an outcome is called for the player to move.
OUTCOME_WORDS = {"win": "a win", "draw": "a draw", "loss": "a loss"}


@dataclass(frozen=True, slots=True)
class RetryStep:
    """One position to try again: the move played there as the analysis judged it, the
    position before it, and where it stands among the player's mistakes."""

    match_id: int
    game: str
    names: tuple[str, str]
    mistake: Review
    state: GameState  # the position before the mistake (the player is to move)
    last: Move | None  # the opponent's move just before, marked on the board
    index: int  # 0-based, worst first
    count: int

    @property
    def ply(self) -> int:
        return self.mistake.ply

    @property
    def seat(self) -> int:
        return self.mistake.player


def _cost(r: Review) -> float:
    """How much a move threw away: the win chance it lost where the analysis says, else what
    it lost against the best move."""
    if r.chance_before is not None and r.chance_after is not None:
        return r.chance_before - r.chance_after
    return r.loss or 0.0


def mistakes(reviews: list[Review], seat: int) -> list[Review]:
    """The seat's moves worth trying again: blunders first, then misses and inaccuracies, each
    group worst first (earlier first when two cost the same)."""
    found = [r for r in reviews if r.player == seat and r.verdict in MISTAKES]
    return sorted(
        found, key=lambda r: (r.verdict != "blunder", -_cost(r), MISTAKES[r.verdict], r.ply)
    )


def judge(game: str, variant: str | None, moves: list[str], move: str, seconds: float) -> Review:
    """`move` tried after `moves` (as stored), judged as the analysis judges a move, within
    about `seconds` (runs in a pool worker). ValueError if a move is not legal."""
    states = positions(game, variant, [*moves, move])
    kit = analysis_kit(game)
    kit.load_solvers()
    [review] = kit.review(states[-2:], [move], time.perf_counter() + seconds)
    review.ply = len(moves)
    return review


def holds(r: Review) -> bool | None:
    """Whether a tried move holds: it keeps the best outcome (and, where that is proven, the
    best value within a good move's margin); None when the solvers could not tell."""
    if r.verdict in HOLDS:
        return True
    if r.verdict in MISTAKES:
        return False
    if r.outcome_before is not None and r.outcome_before == r.outcome_after:
        return True  # the outcome is kept; how fast was not proven in time
    return None


# ---------------------------------------------------------------------------- words


def _move_word(game: str) -> str:
    return str(analysis_kit(game).MOVE_WORD)


def _discs(value: float, exact: bool) -> str:
    """A disc value for the mover, as words."""
    about = "" if exact else "about "
    if value == 0:
        return f"{about}level with best play"
    side = "ahead" if value > 0 else "behind"
    return f"{about}{abs(value):g} discs {side} with best play"


def _what(r: Review) -> str:
    """What a move was worth: the outcome with best play after it (Connect Four; an exact
    Othello end too), the disc value after it and the discs it lost against the best move
    (Othello; "about" for a search's estimate)."""
    parts = []
    if r.outcome_before and r.outcome_after and r.outcome_before != r.outcome_after:
        parts.append(f"{r.outcome_before} -> {r.outcome_after}")
    elif r.outcome_after:
        parts.append(f"still {OUTCOME_WORDS[r.outcome_after]}")
        if r.verdict == "inaccuracy" and r.outcome_after == "loss":
            parts[-1] += ", but sooner than with the best defence"
        elif r.verdict == "good" and r.outcome_after == "win":
            parts[-1] += ", though slower than the best move"
    if r.value_played is not None:
        parts.append(_discs(r.value_played, r.exact))
    if r.loss:
        about = "" if r.exact else "about "
        parts.append(f"{about}{r.loss:g} discs below the best move")
    elif r.loss is not None:
        parts.append("as good as the best move")
    return ", ".join(parts) or "not proven"


def goal(r: Review) -> str:
    """What the player should look for instead of the mistake."""
    if r.outcome_before == "win":
        return "Find a move that keeps the win."
    if r.outcome_before == "draw":
        return "Find a move that keeps the draw."
    if r.outcome_before == "loss":
        return "Find the move that holds out longest."
    if r.value_best is not None:
        return f"Find a better move: the best one leaves you {_discs(r.value_best, r.exact)}."
    return "Find a better move."


def step_lines(step: RetryStep, names: tuple[str, str] | None = None) -> list[str]:
    """The lines under the board: which mistake this is, what was played and what to find
    (`names`: the players' names as the front end shows them)."""
    r = step.mistake
    who = (names or step.names)[step.seat]
    piece = game_info(step.game).pieces[step.seat]
    word = _move_word(step.game)
    verdict = "a BLUNDER" if r.verdict == "blunder" else f"a {r.verdict}"
    how = "" if r.exact else " by a search's estimate"
    return [
        f"Mistake {step.index + 1} of {step.count} · move {r.ply + 1} · {piece} **{who}** to play",
        f"You played {word} {r.move} here: {verdict}{how} ({_what(r)}).",
        goal(r),
    ]


def attempt_line(game: str, r: Review) -> str:
    """The verdict on a tried move, without naming the best one."""
    move = f"{_move_word(game).capitalize()} {r.move}"
    held = holds(r)
    if held is None:
        known = f" ({OUTCOME_WORDS[r.outcome_after]} at least)" if r.outcome_after else ""
        return (
            f"{move}: the solver could not finish this position in the time it has{known}. "
            "Try another move, or show the best one."
        )
    proven = r.exact or (r.outcome_before is not None and r.outcome_after is not None)
    how = "proven" if proven else "a search's estimate"
    if held:
        return f"{move} holds: {_what(r)} ({how})."
    return f"{move} does not hold: {_what(r)} ({how}). Try again."


def best_line(game: str, r: Review) -> str:
    """The best move at a mistake's position, once asked for."""
    word = _move_word(game)
    if r.best is None:
        return "The best move here is not known: the solver could not finish this position."
    line = f"The best move was {word} {r.best}"
    if r.best_in is not None and r.outcome_before in ("win", "loss"):
        line += f" ({r.outcome_before} in {r.best_in} of your moves)"
    elif r.value_best is not None:
        line += f" ({_discs(r.value_best, r.exact)})"
    elif r.outcome_before:
        line += f" ({OUTCOME_WORDS[r.outcome_before]} with best play)"
    return line + ("." if r.exact else ", by a search's estimate.")
