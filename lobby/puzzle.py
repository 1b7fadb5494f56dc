"""Puzzles, the plain part: what a front end shows of a puzzle and of an answer, the rules
that need no store (the rating of an answer, the daily puzzle of a day, the streaks), and the
words both front ends print. `lobby.puzzles` holds the part that reads and writes.

A puzzle is one move to find: a shipped puzzle (`engine.puzzles.pool`: a Connect Four win in N
plies, or an Othello endgame's exact best move) or a position from the player's own analysed
match where they blundered. Its key is the pool's id, or `m<match>.<ply>` for one's own."""

from __future__ import annotations

import datetime
import hashlib
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from db.puzzles import PuzzleRating, PuzzleScore, Scorer
from engine.analysis import Review
from engine.games import new_game
from engine.games.base import GameState, Move
from engine.games.catalog import game_info
from engine.kits import kit
from engine.picture import Picture, PictureKit
from engine.puzzles.pool import Puzzle
from lobby.boards import position_words
from lobby.present import Names, game_title, plain
from lobby.ratings import DEFAULT_MU, DEFAULT_SIGMA, Skill, rate_1v1
from lobby.retry import RetryStep, attempt_line, best_line, goal
from tools.pictures import Replay, frame

#: A shipped puzzle's rating starts at the pool's estimate, held with this sigma (more sure
#: than of a new player: the estimate comes from how deep the proof is).
PUZZLE_SIGMA = DEFAULT_SIGMA / 2
#: A puzzle is chosen at random among this many unanswered ones nearest the player's rating.
NEAREST = 5
#: One's own position's key: the match and the ply of the mistake.
OWN_KEY = re.compile(r"^m([0-9]{1,18})\.([0-9]{1,4})$")


@dataclass(frozen=True, slots=True)
class PuzzleShown:
    """A puzzle as a front end shows it: the position (the player to move) and what to find."""

    key: str
    game: str
    state: GameState
    last: Move | None
    kind: str  # "win" (Connect Four), "best" (Othello) or "own" (one's own blunder)
    plies: int  # "win": plies to the win; "best": empty squares; "own": the mistake's ply
    rating: float | None  # the puzzle's rating now (None: one's own position)
    daily: str | None = None  # the day (YYYY-MM-DD, UTC) it is the daily puzzle of
    step: RetryStep | None = None  # one's own: the mistake, as /retry shows it

    @property
    def seat(self) -> int:
        return self.state.to_move()


@dataclass(frozen=True, slots=True)
class PuzzleVerdict:
    """An answer judged: the move, whether it was right (None: the solver could not tell in
    time; nothing is kept), the answer and the solver's line, and what it did to the player's
    score (a first answer to a shipped puzzle is rated; later ones and one's own are not)."""

    shown: PuzzleShown
    move: str
    solved: bool | None
    first: bool
    earlier: tuple[str, bool] | None  # a later answer: the first one's move and verdict
    answer: str | None
    line: tuple[str, ...] = ()
    value: int | None = None
    before: PuzzleScore | None = None
    after: PuzzleScore | None = None
    tried: Review | None = None  # one's own: the move as the solvers judged it
    best: Review | None = None  # one's own: the best move there


@dataclass(frozen=True, slots=True)
class PuzzleStats:
    """A player's puzzles: their score per game and the positions of their own waiting."""

    name: str
    scores: tuple[PuzzleScore, ...]
    waiting: dict[str, int]
    today: str
    own: dict[str, tuple[int, int]] = field(default_factory=dict)  # game -> (tried, right)


# ---------------------------------------------------------------------------- rules


def day_of(now: float) -> str:
    """The UTC date of a time, as the daily puzzle names it."""
    return datetime.datetime.fromtimestamp(now, datetime.UTC).date().isoformat()


def day_before(day: str) -> str:
    return (datetime.date.fromisoformat(day) - datetime.timedelta(days=1)).isoformat()


def daily_of(pool: Sequence[Puzzle], game: str, day: str) -> Puzzle | None:
    """The day's puzzle of `game`, the same for everyone: the pool in an order shuffled by a
    hash of each id, walked one puzzle a day, so no puzzle comes back before the pool has
    been gone through (None: the pool is empty)."""
    if not pool:
        return None
    ordered = sorted(pool, key=lambda p: hashlib.sha256(f"{game}:{p.id}".encode()).digest())
    return ordered[datetime.date.fromisoformat(day).toordinal() % len(ordered)]


def rating_now(p: Puzzle, ratings: dict[str, PuzzleRating]) -> float:
    found = ratings.get(p.id)
    return p.rating if found is None else found.mu


def nearest(
    pool: Sequence[Puzzle], ratings: dict[str, PuzzleRating], answered: set[str], mu: float
) -> list[Puzzle]:
    """The unanswered puzzles nearest a rating of `mu`, nearest first (at most NEAREST)."""
    left = [p for p in pool if p.id not in answered]
    left.sort(key=lambda p: (abs(rating_now(p, ratings) - mu), p.id))
    return left[:NEAREST]


def current_daily_streak(score: PuzzleScore, today: str) -> int:
    """The days in a row the player solved the daily puzzle, up to today or yesterday."""
    if score.last_daily in (today, day_before(today)):
        return score.daily_streak
    return 0


def scorer(p: Puzzle, player_id: int, solved: bool, daily: str | None) -> Scorer:
    """What a first answer to `p` does, from the rows as the answer's transaction finds them:
    the player and the puzzle play one rated game (openskill, as matches do: the player wins
    if they solved it), the streak grows or ends, and the daily streak too if `daily` is the
    day whose puzzle it is."""

    def score(
        before: PuzzleScore | None, rating: PuzzleRating | None
    ) -> tuple[PuzzleScore, PuzzleRating]:
        base = before or PuzzleScore(player_id, p.game, DEFAULT_MU, DEFAULT_SIGMA)
        held = rating or PuzzleRating(p.id, p.game, p.rating, PUZZLE_SIGMA)
        me, it = rate_1v1(
            Skill(base.mu, base.sigma), Skill(held.mu, held.sigma), 1.0 if solved else 0.0
        )
        streak = base.streak + 1 if solved else 0
        after = replace(
            base, mu=me.mu, sigma=me.sigma, attempts=base.attempts + 1,
            solved=base.solved + solved, streak=streak, best_streak=max(base.best_streak, streak),
        )  # fmt: skip
        if daily is not None:
            days = base.daily_streak + 1 if base.last_daily == day_before(daily) else 1
            days = days if solved else 0
            after = replace(
                after, daily_streak=days, best_daily=max(base.best_daily, days), last_daily=daily
            )
        new = replace(held, mu=it.mu, sigma=it.sigma, attempts=held.attempts + 1,
                      solved=held.solved + solved)  # fmt: skip
        return after, new

    return score


def position(game: str, moves: Sequence[str]) -> tuple[GameState, Move | None]:
    """The position after `moves` (the game's notation) and the last of them."""
    state, last = new_game(game), None
    for text in moves:
        last = state.parse_move(text)
        state = state.play(last)
    return state, last


# ---------------------------------------------------------------------------- words


def _word(game: str) -> str:
    return "column" if not game_info(game).list_moves else "square"


def _discs(value: int) -> str:
    if value == 0:
        return "level"
    return f"{abs(value)} discs {'ahead' if value > 0 else 'behind'}"


def title(shown: PuzzleShown) -> str:
    what = game_title(shown.game)
    if shown.step is not None:
        return f"{what}: learn from your mistakes"
    if shown.daily is not None:
        return f"Daily {what} puzzle, {shown.daily}"
    return f"{what} puzzle"


def prompt_lines(shown: PuzzleShown, *, name: Names = plain) -> list[str]:
    """What to find, under the board (`name`: how the front end shows a player's name)."""
    piece = game_info(shown.game).pieces[shown.seat]
    step = shown.step
    if step is not None:
        who = name(step.names[step.seat])
        r = step.mistake
        how = "" if r.exact else " by a search's estimate"
        verdict = "a BLUNDER" if r.verdict == "blunder" else f"a {r.verdict}"
        return [
            f"From your match #{step.match_id}, move {r.ply + 1}: {piece} **{who}** to play.",
            f"You played {_word(shown.game)} {r.move} here: {verdict}{how}.",
            goal(r),
        ]
    if shown.kind == "win":
        mine = (shown.plies + 1) // 2
        lines = [
            f"{piece} to play and win in {mine} of your moves ({shown.plies} plies).",
            f"Find the move that wins in {mine}.",
        ]
    else:
        lines = [
            f"{piece} to play, {shown.plies} empty squares.",
            "Find the best move (the endgame solver proved it).",
        ]
    if shown.rating is not None:
        lines.append(f"Puzzle rating {shown.rating:.1f}")
    return lines


def verdict_lines(v: PuzzleVerdict) -> list[str]:
    """The verdict on an answer, the answer and the solver's line, and the player's score."""
    shown, word = v.shown, _word(v.shown.game)
    if shown.step is not None:
        lines = [] if v.tried is None else [attempt_line(shown.game, v.tried)]
        if v.best is not None:
            lines.append(best_line(shown.game, v.best))
        return lines
    move = f"{word.capitalize()} {v.move}"
    if v.solved:
        lines = [f"✅ {move} is right."]
    else:
        lines = [f"❌ {move} is not it: the answer was {word} {v.answer}."]
    piece = game_info(shown.game).pieces[shown.seat]
    if shown.kind == "win":
        outcome = f"{piece} wins in {shown.plies} plies"
    else:
        outcome = f"{piece} ends {_discs(v.value or 0)} with best play"
    lines.append(f"The solver's line: {' '.join(v.line)} ({outcome}).")
    if not v.first and v.earlier is not None:
        said, right = v.earlier
        lines.append(
            f"You answered this puzzle before ({word} {said}: {'right' if right else 'not it'}):"
            " this answer is not rated."
        )
    elif v.after is not None:
        mu = v.before.mu if v.before is not None else DEFAULT_MU
        line = f"Your puzzle rating: {v.after.mu:.1f} ({v.after.mu - mu:+.1f})"
        line += f" · streak {v.after.streak}"
        if shown.daily is not None:
            line += f" · daily streak {v.after.daily_streak}"
        lines.append(line)
    return lines


def stats_lines(stats: PuzzleStats, *, name: Names = plain) -> list[str]:
    """A player's puzzles, one line a game."""
    lines = [f"Puzzles of {name(stats.name)}"]
    for s in stats.scores:
        daily = current_daily_streak(s, stats.today)
        lines.append(
            f"{game_title(s.game)}: rating {s.mu:.1f} (±{s.sigma:.1f}) · {s.solved} of"
            f" {s.attempts} solved · streak {s.streak} (best {s.best_streak}) · daily streak"
            f" {daily} (best {s.best_daily})"
        )
    for game, (tried, right) in sorted(stats.own.items()):
        lines.append(f"{game_title(game)}: {right} of {tried} of your own blunders put right")
    for game, n in sorted(stats.waiting.items()):
        lines.append(f"{game_title(game)}: {n} of your own blunders waiting in /puzzle play")
    if len(lines) == 1:
        lines.append("No puzzles answered yet.")
    return lines


def puzzle_words(shown: PuzzleShown) -> str:
    """The puzzle's position in words (an emoji board's field, a picture's alt text)."""
    pic = kit_picture(shown)
    piece = pic.pieces[shown.seat]
    legal = [shown.state.move_to_str(m) for m in shown.state.legal_moves()]
    parts = [f"{title(shown)}: {piece} to play."]
    if shown.last is not None:
        parts.append(f"Last move: {shown.state.move_to_str(shown.last)}.")
    parts.append(f"Legal moves: {', '.join(sorted(legal) if pic.row_labels else legal)}.")
    parts.append(f"Position: {position_words(pic)}.")
    text = " ".join(parts)
    return text if len(text) <= 1024 else text[:1023] + "…"


def kit_picture(shown: PuzzleShown) -> Picture:
    return cast(PictureKit, kit(shown.game)).picture(shown.state, shown.last)


def puzzle_png(shown: PuzzleShown) -> bytes:
    """The puzzle's position as a PNG (the replay's picture), the side to play named."""
    names = ("you", "opponent") if shown.seat == 0 else ("opponent", "you")
    caption = f"{title(shown)}: {game_info(shown.game).pieces[shown.seat]} to play"
    replay = Replay(0, shown.game, None, names, (), "")
    buf = io.BytesIO()
    frame(replay, shown.state, shown.last, caption).save(buf, format="PNG")
    return buf.getvalue()
