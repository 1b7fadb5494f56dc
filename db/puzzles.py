"""Puzzles (``store.puzzles``): each player's first answer to each puzzle, their puzzle rating
and streaks per game, each puzzle's own rating, the queue of positions from a player's own
analysed games, and which server was shown which day's puzzle.

A puzzle is named by its id (text: a shipped puzzle's id, or a position of a player's own
match); the store knows nothing of what it is. New ratings and streaks are computed inside the
answer's transaction from the rows as they are then (`record`'s `score`), as a rated match's
finish computes its ratings, so two answers at once never lose one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from .connection import Record, Repository, Tx, query
from .errors import CorruptRowError, PlayerNotFoundError
from .rows import Row, check_game, decodable, nonempty, report_corrupt

__all__ = [
    "Attempt",
    "PuzzleRating",
    "PuzzleScore",
    "Puzzles",
    "QueueItem",
    "Recorded",
    "Scorer",
]


@dataclass(frozen=True, slots=True)
class PuzzleScore:
    """A player's puzzle rating in one game (openskill's mu and sigma), their answers and
    streaks: right answers in a row, and days in a row with the daily puzzle solved."""

    player_id: int
    game: str
    mu: float
    sigma: float
    attempts: int = 0
    solved: int = 0
    streak: int = 0
    best_streak: int = 0
    daily_streak: int = 0
    best_daily: int = 0
    last_daily: str | None = None  # the day (YYYY-MM-DD, UTC) of the last daily answered
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class PuzzleRating:
    """A puzzle's own rating, moved by every first answer to it."""

    puzzle_id: str
    game: str
    mu: float
    sigma: float
    attempts: int = 0
    solved: int = 0


@dataclass(frozen=True, slots=True)
class Attempt:
    """A player's first answer to a puzzle (later ones are not kept)."""

    player_id: int
    puzzle_id: str
    game: str
    move: str
    solved: bool
    rated: bool
    daily: str | None  # the day, if it was that day's daily puzzle
    created_at: float


@dataclass(frozen=True, slots=True)
class QueueItem:
    """A position from one of the player's own analysed matches, waiting to be served."""

    player_id: int
    item: str
    game: str
    match_id: int
    ply: int
    added_at: float


@dataclass(frozen=True, slots=True)
class Recorded:
    """What an answer did: the attempt kept (the earlier one if it was not the first), and
    the player's score and the puzzle's rating before and after (None: none yet)."""

    attempt: Attempt
    first: bool
    before: PuzzleScore | None
    after: PuzzleScore | None
    rating: PuzzleRating | None


#: New rows from the current ones, computed inside the answer's transaction: (score, rating)
#: -> (score, rating); a None it returns is not written.
Scorer: TypeAlias = Callable[
    [PuzzleScore | None, PuzzleRating | None], tuple[PuzzleScore | None, PuzzleRating | None]
]

_SCORE_COLS = (
    "player_id, game, mu, sigma, attempts, solved, streak, best_streak, daily_streak,"
    " best_daily, last_daily, updated_at"
)
_RATING_COLS = "puzzle_id, game, mu, sigma, attempts, solved"
_ATTEMPT_COLS = "player_id, puzzle_id, game, move, solved, rated, daily, created_at"
_QUEUE_COLS = "player_id, item, game, match_id, ply, added_at"


class Puzzles(Repository):
    """The puzzle tables (migration 11)."""

    async def score(self, player_id: int, game: str) -> PuzzleScore | None:
        """The player's puzzle score in `game` (None: no answer yet, or a row set aside)."""
        rows = await self._db.fetchall(
            f"SELECT {_SCORE_COLS} FROM puzzle_scores WHERE player_id = ? AND game = ?",
            (player_id, game),
        )
        found = decodable(rows, _decode_score)
        return found[0] if found else None

    async def scores(self, player_id: int) -> list[PuzzleScore]:
        """The player's puzzle scores, one per game they answered puzzles of, by game."""
        rows = await self._db.fetchall(
            f"SELECT {_SCORE_COLS} FROM puzzle_scores WHERE player_id = ? ORDER BY game",
            (player_id,),
        )
        return decodable(rows, _decode_score)

    async def ratings(self, game: str) -> dict[str, PuzzleRating]:
        """The puzzles of `game` answered so far, by id, with their ratings."""
        rows = await self._db.fetchall(
            f"SELECT {_RATING_COLS} FROM puzzle_ratings WHERE game = ?", (game,)
        )
        return {r.puzzle_id: r for r in decodable(rows, _decode_rating)}

    async def rating(self, puzzle_id: str) -> PuzzleRating | None:
        """One puzzle's rating (None: nobody answered it yet, or its row was set aside)."""
        rows = await self._db.fetchall(
            f"SELECT {_RATING_COLS} FROM puzzle_ratings WHERE puzzle_id = ?", (puzzle_id,)
        )
        found = decodable(rows, _decode_rating)
        return found[0] if found else None

    async def answered(self, player_id: int, game: str) -> set[str]:
        """The ids of the puzzles of `game` the player answered."""
        rows = await self._db.fetchall(
            "SELECT puzzle_id FROM puzzle_attempts WHERE player_id = ? AND game = ?",
            (player_id, game),
        )
        return {str(r["puzzle_id"]) for r in rows}

    async def attempt(self, player_id: int, puzzle_id: str) -> Attempt | None:
        """The player's first answer to the puzzle, if any."""
        rows = await self._db.fetchall(
            f"SELECT {_ATTEMPT_COLS} FROM puzzle_attempts WHERE player_id = ? AND puzzle_id = ?",
            (player_id, puzzle_id),
        )
        found = decodable(rows, _decode_attempt)
        return found[0] if found else None

    async def record(
        self,
        player_id: int,
        game: str,
        puzzle_id: str,
        move: str,
        solved: bool,
        *,
        daily: str | None = None,
        score: Scorer | None = None,
    ) -> Recorded:
        """Keep a player's answer, in one transaction: the first answer to a puzzle is kept
        with the score and rating `score` computes from the current rows (rated if it is
        given); a later one writes nothing and gives the first back. A waiting queue item of
        the same id is served by it."""
        check_game(game)
        puzzle_id, move = nonempty("puzzle_id", puzzle_id), nonempty("move", move)
        async with self._db.write("record_puzzle") as conn:
            if not await query(conn, "SELECT 1 FROM players WHERE id = ?", (player_id,)):
                raise PlayerNotFoundError(player_id)
            earlier = await _attempt_in(conn, player_id, puzzle_id)
            if earlier is not None:
                return Recorded(earlier, False, None, None, None)
            before = await _score_in(conn, player_id, game)
            rating = await _rating_in(conn, puzzle_id)
            after, new_rating = (None, None) if score is None else score(before, rating)
            now = self._db.now()
            if after is not None:
                after = replace(after, updated_at=now)
                await _put_score(conn, after, now)
            if new_rating is not None:
                await _put_rating(conn, new_rating, now)
            kept = Attempt(player_id, puzzle_id, game, move, solved, score is not None, daily, now)
            await conn.execute(
                f"INSERT INTO puzzle_attempts ({_ATTEMPT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (player_id, puzzle_id, game, move, int(solved), int(kept.rated), daily, now),
            )
            await conn.execute(
                "UPDATE puzzle_queue SET served_at = ? WHERE player_id = ? AND item = ?"
                " AND served_at IS NULL",
                (now, player_id, puzzle_id),
            )
        return Recorded(kept, True, before, after or before, new_rating or rating)

    async def unrated(self, player_id: int) -> dict[str, tuple[int, int]]:
        """The player's unrated first answers (their own blunders tried again) per game: how
        many, and how many were right."""
        rows = await self._db.fetchall(
            "SELECT game, count(*) AS n, COALESCE(SUM(solved), 0) AS right_ones"
            " FROM puzzle_attempts WHERE player_id = ? AND rated = 0 GROUP BY game",
            (player_id,),
        )
        return {str(r["game"]): (int(r["n"]), int(r["right_ones"])) for r in rows}

    # ------------------------------------------------------------------ the queue

    async def enqueue(
        self, player_id: int, game: str, items: Sequence[tuple[str, int, int]]
    ) -> int:
        """Queue positions of the player's own matches, (item, match id, ply) each; one
        queued before (served or not) is not queued again. How many were new."""
        check_game(game)
        rows = await self._db.fetchall(
            "SELECT item FROM puzzle_queue WHERE player_id = ? AND game = ?", (player_id, game)
        )
        known = {r["item"] for r in rows}
        items = [i for i in items if i[0] not in known]
        if not items:  # nothing new: no write (this runs at every request for a puzzle)
            return 0
        added = 0
        async with self._db.write("enqueue_puzzles") as conn:
            now = self._db.now()
            for item, match_id, ply in items:
                added += await conn.execute(
                    f"INSERT INTO puzzle_queue ({_QUEUE_COLS}) VALUES (?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (player_id, item) DO NOTHING",
                    (player_id, nonempty("item", item), game, match_id, ply, now),
                )
        return added

    async def take(self, player_id: int, game: str) -> QueueItem | None:
        """The oldest waiting item of the player's queue in `game`, served (it is not given
        again); None if none waits."""
        if not (await self.waiting(player_id)).get(game):  # the usual case: no write
            return None
        async with self._db.write("take_puzzle") as conn:
            rows = await query(
                conn,
                f"SELECT {_QUEUE_COLS} FROM puzzle_queue WHERE player_id = ? AND game = ?"
                " AND served_at IS NULL ORDER BY added_at, item"
                f" LIMIT 20{conn.dialect.lock}",
                (player_id, game),
            )
            for row in rows:  # a row that does not decode is served (skipped) with a warning
                await conn.execute(
                    "UPDATE puzzle_queue SET served_at = ? WHERE player_id = ? AND item = ?",
                    (self._db.now(), player_id, row["item"]),
                )
                found = decodable([row], _decode_queue)
                if found:
                    return found[0]
        return None

    async def waiting(self, player_id: int) -> dict[str, int]:
        """How many queue items wait, per game."""
        rows = await self._db.fetchall(
            "SELECT game, count(*) AS n FROM puzzle_queue WHERE player_id = ?"
            " AND served_at IS NULL GROUP BY game",
            (player_id,),
        )
        return {str(r["game"]): int(r["n"]) for r in rows}

    async def analysed(
        self, player_id: int, game: str, version: int, limit: int = 10
    ) -> list[tuple[int, int, dict[str, Any]]]:
        """The player's finished matches of `game` with an analysis by analyser `version`,
        newest first: (match id, the player's seat, the analysis). An analysis that does not
        decode is set aside with a warning."""
        rows = await self._db.fetchall(
            "SELECT a.match_id, m.player0_id, a.data FROM analyses a"
            " JOIN matches m ON m.id = a.match_id"
            " WHERE a.version = ? AND m.game = ? AND m.status = 'finished'"
            " AND (m.player0_id = ? OR m.player1_id = ?) ORDER BY a.match_id DESC LIMIT ?",
            (version, game, player_id, player_id, limit),
        )
        out = []
        for row in rows:
            match_id = int(row["match_id"])
            try:
                data = json.loads(row["data"])
                if not isinstance(data, dict):
                    raise ValueError("not an object")
            except (TypeError, ValueError) as exc:
                report_corrupt(CorruptRowError("analyses", f"match {match_id}", "data", str(exc)))
                continue
            out.append((match_id, 0 if row["player0_id"] == player_id else 1, data))
        return out

    # ------------------------------------------------------------------ the daily puzzle

    async def claim_post(self, guild_id: int, game: str, day: str) -> bool:
        """Whether this call is the first to show `day`'s puzzle of `game` in the server's
        announcement channel (once per server, game and day, whichever process asks)."""
        check_game(game)
        async with self._db.write("claim_puzzle_post") as conn:
            added = await conn.execute(
                "INSERT INTO puzzle_posts (guild_id, game, day, posted_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (guild_id, game, day) DO NOTHING",
                (guild_id, game, nonempty("day", day), self._db.now()),
            )
        return added == 1


# ---------------------------------------------------------------------- inside a transaction


async def _attempt_in(conn: Tx, player_id: int, puzzle_id: str) -> Attempt | None:
    rows = await query(
        conn,
        f"SELECT {_ATTEMPT_COLS} FROM puzzle_attempts WHERE player_id = ? AND puzzle_id = ?",
        (player_id, puzzle_id),
    )
    return _decode_attempt(rows[0]) if rows else None


async def _score_in(conn: Tx, player_id: int, game: str) -> PuzzleScore | None:
    rows = await query(
        conn,
        f"SELECT {_SCORE_COLS} FROM puzzle_scores WHERE player_id = ? AND game = ?"
        f"{conn.dialect.lock}",
        (player_id, game),
    )
    found = decodable(rows, _decode_score)  # one that does not decode is written anew
    return found[0] if found else None


async def _rating_in(conn: Tx, puzzle_id: str) -> PuzzleRating | None:
    rows = await query(
        conn,
        f"SELECT {_RATING_COLS} FROM puzzle_ratings WHERE puzzle_id = ?{conn.dialect.lock}",
        (puzzle_id,),
    )
    found = decodable(rows, _decode_rating)
    return found[0] if found else None


async def _put_score(conn: Tx, s: PuzzleScore, now: float) -> None:
    await conn.execute(
        f"INSERT INTO puzzle_scores ({_SCORE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (player_id, game) DO UPDATE SET mu = excluded.mu,"
        " sigma = excluded.sigma, attempts = excluded.attempts, solved = excluded.solved,"
        " streak = excluded.streak, best_streak = excluded.best_streak,"
        " daily_streak = excluded.daily_streak, best_daily = excluded.best_daily,"
        " last_daily = excluded.last_daily, updated_at = excluded.updated_at",
        (s.player_id, s.game, s.mu, s.sigma, s.attempts, s.solved, s.streak, s.best_streak,
         s.daily_streak, s.best_daily, s.last_daily, now),
    )  # fmt: skip


async def _put_rating(conn: Tx, r: PuzzleRating, now: float) -> None:
    await conn.execute(
        f"INSERT INTO puzzle_ratings ({_RATING_COLS}, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (puzzle_id) DO UPDATE SET mu = excluded.mu, sigma = excluded.sigma,"
        " attempts = excluded.attempts, solved = excluded.solved,"
        " updated_at = excluded.updated_at",
        (r.puzzle_id, r.game, r.mu, r.sigma, r.attempts, r.solved, now),
    )


# ---------------------------------------------------------------------- decoding


def _decode_score(row: Record) -> PuzzleScore:
    r = Row("puzzle_scores", row, ("player_id", "game"))
    return PuzzleScore(
        player_id=r.get_int("player_id"),
        game=r.get_str("game"),
        mu=r.get_float("mu"),
        sigma=r.get_float("sigma"),
        attempts=r.get_int("attempts"),
        solved=r.get_int("solved"),
        streak=r.get_int("streak"),
        best_streak=r.get_int("best_streak"),
        daily_streak=r.get_int("daily_streak"),
        best_daily=r.get_int("best_daily"),
        last_daily=r.opt_str("last_daily"),
        updated_at=r.get_float("updated_at"),
    )


def _decode_rating(row: Record) -> PuzzleRating:
    r = Row("puzzle_ratings", row, ("puzzle_id",))
    return PuzzleRating(
        puzzle_id=r.get_str("puzzle_id"),
        game=r.get_str("game"),
        mu=r.get_float("mu"),
        sigma=r.get_float("sigma"),
        attempts=r.get_int("attempts"),
        solved=r.get_int("solved"),
    )


def _decode_attempt(row: Record) -> Attempt:
    r = Row("puzzle_attempts", row, ("player_id", "puzzle_id"))
    return Attempt(
        player_id=r.get_int("player_id"),
        puzzle_id=r.get_str("puzzle_id"),
        game=r.get_str("game"),
        move=r.get_str("move"),
        solved=r.get_bool("solved"),
        rated=r.get_bool("rated"),
        daily=r.opt_str("daily"),
        created_at=r.get_float("created_at"),
    )


def _decode_queue(row: Record) -> QueueItem:
    r = Row("puzzle_queue", row, ("player_id", "item"))
    return QueueItem(
        player_id=r.get_int("player_id"),
        item=r.get_str("item"),
        game=r.get_str("game"),
        match_id=r.get_int("match_id"),
        ply=r.get_int("ply"),
        added_at=r.get_float("added_at"),
    )
