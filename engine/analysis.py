"""Analysis of a game: for every move the value of the position before and after it, proven by
a solver where one finishes in the budget, and a verdict (best, good, inaccuracy, miss,
blunder, or unsure when nothing was proven); the mover's expected score before and after it;
per player the accuracy (from the expected score each move lost), and the turning point.

How a game's moves are judged is the game's own (its kit's `review`: Connect Four's in
`engine/agents/connect4/analysis.py`, Othello's in `engine/agents/othello/analysis.py`); this
module holds what every game shares: the records, the accuracy, the turning point and the
words. The verdict rules: docs/games.md, "Analysis". Runs in a pool worker; the result is
plain data.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, cast

from engine.accuracy import game_accuracy, move_accuracy, weights
from engine.games import GAMES, new_game
from engine.games.base import GameState
from engine.kits import kit

#: Bumped when the verdicts or the records change: a stored analysis of another version is
#: computed again.
VERSION = 5
VERDICTS = ("best", "good", "inaccuracy", "miss", "blunder", "unsure")
OUTCOMES = {1: "win", 0: "draw", -1: "loss"}
#: The mover's expected score of an exact outcome.
OUTCOME_CHANCE = {"win": 1.0, "draw": 0.5, "loss": 0.0}
#: A move whose chance stays below this (or above 1 minus it), short of certain, is not judged.
DECIDED = 0.02


class AnalysisKit(Protocol):
    """What a game's kit provides for its analysis (engine/kits.py)."""

    #: Seconds an analysis of a whole game may take (on 2 cores, less the pool's overhead).
    ANALYSIS_BUDGET: float
    #: What a move is called in the words of a turning point: "column", "square".
    MOVE_WORD: str

    def split_run(self, text: str) -> list[str]:
        """Moves written together without separators, one by one."""
        ...

    def load_solvers(self) -> None:
        """Load the kernels and tables a solve uses (seconds in a fresh process)."""
        ...

    def review(self, states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
        """Every move judged, by `deadline` (time.perf_counter)."""
        ...


def analysis_kit(game: str) -> AnalysisKit:
    return cast(AnalysisKit, kit(game))


#: The seconds an analysis takes unless told, per game.
BUDGETS = {game: analysis_kit(game).ANALYSIS_BUDGET for game in GAMES}


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
    # Othello: the value in discs for the mover of the best move and of the move played (exact
    # or a search's estimate, as `exact` says), and the discs lost against the best move.
    value_best: float | None = None
    value_played: float | None = None
    loss: float | None = None
    # The mover's expected score (0..1) before and after the move: from the exact outcome (win
    # 1, draw 0.5, loss 0), or Othello's disc value by a logistic curve; None where unknown.
    chance_before: float | None = None
    chance_after: float | None = None
    accuracy: float | None = None  # 0..1 from the expected score lost (`engine.accuracy`);
    # None: not judged (a chance unknown, or a game already decided: `_decided`)
    why: str | None = None  # an unsure move: "time" (the budget stopped the solver or the
    # search) or "variant" (no solver for this board)


@dataclass(slots=True)
class Side:
    """A player's record in one game."""

    judged: int = 0  # moves whose expected score before and after is known
    accuracy: float | None = None  # 0..1 from their accuracies (`engine.accuracy`)
    blunders: int = 0
    misses: int = 0
    inaccuracies: int = 0


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
    budget: float = 0.0  # the seconds it was given

    @property
    def unsure(self) -> int:
        return sum(r.verdict == "unsure" for r in self.moves)

    def to_json(self) -> dict[str, Any]:
        players = [asdict(s) for s in self.players]
        return {
            "game": self.game,
            "variant": self.variant,
            "version": self.version,
            "seconds": round(self.seconds, 3),
            "budget": self.budget,
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
            players = [Side(**p) for p in data["players"]]
            out = cls(
                str(data["game"]),
                data["variant"],
                moves,
                players,
                data["turning_point"],
                data["turning_text"],
                float(data["seconds"]),
                int(data["version"]),
                float(data["budget"]),
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
    return analysis_kit(game).split_run(text)


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
    game_kit = analysis_kit(game)
    game_kit.load_solvers()
    t0 = time.perf_counter()
    seconds = game_kit.ANALYSIS_BUDGET if budget is None else budget
    reviews = game_kit.review(states, moves, t0 + seconds)
    for r in reviews:  # a game that gives no chance of its own: the exact outcome's
        if r.chance_before is None and r.outcome_before is not None:
            r.chance_before = OUTCOME_CHANCE[r.outcome_before]
        if r.chance_after is None and r.outcome_after is not None:
            r.chance_after = OUTCOME_CHANCE[r.outcome_after]
    result = Analysis(game, variant, reviews, budget=seconds)
    judge(result)
    result.turning_point, result.turning_text = _turning_point(game, reviews)
    result.seconds = time.perf_counter() - t0
    return result


def _first(player: int, chance: float) -> float:
    """The first player's chance from the mover's."""
    return chance if player == 0 else 1.0 - chance


def _decided(r: Review) -> bool:
    """The game was as good as decided before the move and still is after it, by a chance
    that is not certain (an Othello estimate far from even): keeping a lost game is no
    accuracy, nor is keeping a game won by far. A certain chance (a proven outcome) is
    judged: keeping a proven win is exact play."""
    before, after = r.chance_before or 0.0, r.chance_after or 0.0
    if before in (0.0, 1.0) or after in (0.0, 1.0):
        return False
    return max(before, after) < DECIDED or min(before, after) > 1.0 - DECIDED


def judge(a: Analysis) -> None:
    """Each judged move's accuracy and each player's, and the players' mistakes."""
    chances: list[float | None] = [None] * (len(a.moves) + 1)  # the first player's
    for r in reversed(a.moves):
        if r.chance_before is not None:
            chances[r.ply] = _first(r.player, r.chance_before)
        if r.chance_after is not None and chances[r.ply + 1] is None:
            chances[r.ply + 1] = _first(r.player, r.chance_after)
    weight = weights(chances)
    judged: list[list[tuple[float, float]]] = [[], []]
    for r in a.moves:
        side = a.players[r.player]
        if r.chance_before is not None and r.chance_after is not None and not _decided(r):
            r.accuracy = move_accuracy(r.chance_before, r.chance_after)
            judged[r.player].append((r.accuracy, weight[r.ply]))
        side.blunders += r.verdict == "blunder"
        side.misses += r.verdict == "miss"
        side.inaccuracies += r.verdict == "inaccuracy"
    for side, moves in zip(a.players, judged, strict=True):
        side.judged, side.accuracy = len(moves), game_accuracy(moves)


def terminal_value(state: GameState) -> int:
    """-1 when the side to move has lost (the last move won), 0 for a draw."""
    outcome = state.outcome()
    return 0 if outcome is None or outcome.winner is None else -1


def sign(x: int) -> int:
    return (x > 0) - (x < 0)


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


def _worse(before: str | None, after: str | None) -> bool:
    """The outcome is known to have got worse for the mover."""
    order = {"loss": 0, "draw": 1, "win": 2}
    return before is not None and after is not None and order[after] < order[before]


def _turning_point(game: str, reviews: list[Review]) -> tuple[int | None, str | None]:
    """The last move that changed the outcome (proven); in Othello without one, the move whose
    estimate lost the most win chance, if it was an inaccuracy or a blunder."""
    proven = [r for r in reviews if r.exact and _worse(r.outcome_before, r.outcome_after)]
    if proven:
        r = proven[-1]
        gap = _unproven_change_after(reviews, r.ply)
        if gap is not None:
            first, last = gap
            return None, (
                f"not found: the outcome changed again somewhere in moves {first}-{last}, "
                "which the analysis could not prove in its time"
            )
    else:
        guesses = [r for r in reviews if not r.exact and r.verdict in ("blunder", "inaccuracy")]
        if not guesses:
            return None, None
        r = max(guesses, key=lambda g: (_drop(g), g.loss or 0.0, -g.ply))
    what = analysis_kit(game).MOVE_WORD
    text = f"move {r.ply + 1} ({what} {r.move})"
    if r.exact:
        text += f" threw away the {r.outcome_before}"
        if r.best is not None:
            if r.best_in is not None and r.outcome_before == "win":
                text += f"; {what} {r.best} won in {r.best_in}"
            else:
                text += f"; {what} {r.best} kept it"
    else:
        text += f" cost the most win chance: about {r.loss:g} discs below {what} {r.best}"
    return r.ply, text


def _drop(r: Review) -> float:
    """The expected score a move lost (0 where unknown)."""
    if r.chance_before is None or r.chance_after is None:
        return 0.0
    return max(0.0, r.chance_before - r.chance_after)


# ---------------------------------------------------------------------------- words

#: Why moves are unsure, in words ({budget}: the seconds the analysis had).
UNSURE_WHY: dict[str | None, str] = {
    "time": "their share of the analysis's {budget:g} s ran out before they were valued",
    "variant": "no solver plays this board",
    None: "their value is not proven",
}


def verdict_word(r: Review) -> str:
    """The verdict as shown: one of `VERDICTS`, as it is."""
    return r.verdict


def _discs(x: float) -> str:
    return f"{x:+g} disc" if abs(x) == 1 else f"{x:+g} discs"


def value_words(r: Review) -> str:
    """A move's value as shown: Othello's disc value of the move played (exact, or "about" for
    an estimate); else the outcome before and after, where known."""
    if r.value_played is not None:
        return f"{_discs(r.value_played)}, exact" if r.exact else f"about {_discs(r.value_played)}"
    if r.outcome_before is None and r.outcome_after is None:
        return ""
    return f"{r.outcome_before or '?'} -> {r.outcome_after or '?'}"


def best_words(r: Review) -> str:
    """The best move where it differs from the one played, with its value where known."""
    if not r.best or r.best == r.move or r.verdict == "best":
        return ""
    if r.value_best is not None:
        return f"{r.best} ({r.value_best:+g})"
    if r.best_in is not None and r.outcome_before != "draw":
        return f"{r.best} ({r.outcome_before} in {r.best_in})"
    return r.best


def table(a: Analysis, names: tuple[str, str]) -> list[str]:
    """One line per move: number, player, move, verdict, value, the best move if it differs."""
    width = max(6, *(len(n) for n in names))
    out = [f"{'#':>3}  {'player':<{width}}  {'move':<5} {'verdict':<11} {'value':<18} best"]
    for r in a.moves:
        out.append(
            f"{r.ply + 1:>3}  {names[r.player]:<{width}}  {r.move:<5} {verdict_word(r):<11} "
            f"{value_words(r):<18} {best_words(r)}".rstrip()
        )
    return out


def _plural(count: int, word: str) -> str:
    plural = {"miss": "misses", "inaccuracy": "inaccuracies"}.get(word, word + "s")
    return f"{count} {word if count == 1 else plural}"


def summary(a: Analysis, names: tuple[str, str]) -> list[str]:
    """Per player their accuracy and mistakes, the turning point, and what was not proven."""
    out = []
    for name, side in zip(names, a.players, strict=True):
        if side.accuracy is None:
            parts = ["no judged moves"]
        else:
            parts = [f"accuracy {100 * side.accuracy:.0f}% over {_plural(side.judged, 'move')}"]
        parts += [
            _plural(side.blunders, "blunder"),
            _plural(side.misses, "miss"),
            _plural(side.inaccuracies, "inaccuracy"),
        ]
        out.append(f"{name}: " + ", ".join(parts))
    if a.turning_text:
        out.append(f"Turning point: {a.turning_text}.")
    else:
        out.append("Turning point: none found (no move proven to change the outcome).")
    unsure = [r for r in a.moves if r.verdict == "unsure"]
    for why, words in UNSURE_WHY.items():
        count = sum(r.why == why for r in unsure)
        if count:
            out.append(
                f"{count} of {len(a.moves)} moves unsure: " + words.format(budget=a.budget) + "."
            )
    if any(r.value_played is not None and not r.exact for r in a.moves):
        out.append("Values with 'about' are a search's estimates; the others are exact.")
    return out
