"""Challenges: one person asks another to a match; the answer comes once (accepted, declined,
withdrawn or expired). Accepting is part of creating the match (`Matches.create(accepts=)`),
so `answer_challenge` works inside its caller's transaction.
"""

from __future__ import annotations

from typing import Any, Literal

from .connection import Repository, Tx, query
from .errors import ChallengeClosedError
from .models import Challenge
from .rows import CHALLENGE_COLS, check_game, decodable, decode_challenge


class Challenges(Repository):
    """Challenges between two people (``store.challenges``)."""

    async def add(
        self,
        game: str,
        challenger_id: int,
        opponent_id: int,
        expires_at: float,
        *,
        guild_id: int | None = None,
        channel_id: int | None = None,
    ) -> Challenge:
        check_game(game)
        if challenger_id == opponent_id:
            raise ValueError("a player cannot challenge themselves")
        async with self._db.write("create_challenge") as conn:
            rows = await query(
                conn,
                "INSERT INTO challenges (game, challenger_id, opponent_id, guild_id, channel_id,"
                " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                f" RETURNING {CHALLENGE_COLS}",
                (
                    game,
                    challenger_id,
                    opponent_id,
                    guild_id,
                    channel_id,
                    self._db.now(),
                    expires_at,
                ),
            )
            return decode_challenge(rows[0])

    async def get(self, challenge_id: int) -> Challenge | None:
        rows = await self._db.fetchall(
            f"SELECT {CHALLENGE_COLS} FROM challenges WHERE id = ?", (challenge_id,)
        )
        return decode_challenge(rows[0]) if rows else None

    async def set_message(self, challenge_id: int, message_id: int) -> None:
        async with self._db.write("set_challenge_message") as conn:
            await conn.execute(
                "UPDATE challenges SET message_id = ? WHERE id = ?", (message_id, challenge_id)
            )

    async def close(self, challenge_id: int, status: Literal["declined", "withdrawn"]) -> Challenge:
        """Decline or withdraw a pending challenge (ChallengeClosedError if it is not)."""
        async with self._db.write("close_challenge") as conn:
            await answer_challenge(conn, challenge_id, status, self._db.now(), None)
            rows = await query(
                conn, f"SELECT {CHALLENGE_COLS} FROM challenges WHERE id = ?", (challenge_id,)
            )
            return decode_challenge(rows[0])

    async def expire(self, now: float) -> list[Challenge]:
        """Mark every pending challenge whose time is up as expired; those challenges."""
        due = await self._db.fetchall(
            "SELECT 1 FROM challenges WHERE status = 'pending' AND expires_at <= ?"
            f" AND {self._db.shards.where()} LIMIT 1",
            (now,),
        )
        if not due:  # the clock asks every second: no write (and no fsync) for nothing
            return []
        async with self._db.write("expire_challenges") as conn:
            rows = await query(
                conn,
                "UPDATE challenges SET status = 'expired', answered_at = ?"
                f" WHERE status = 'pending' AND expires_at <= ? AND {self._db.shards.where()}"
                f" RETURNING {CHALLENGE_COLS}",
                (now, now),
            )
            # A row that does not decode is expired with the others (so it is never read
            # again here) and reported once; it is not announced.
            return decodable(rows, decode_challenge)

    async def pending(
        self, challenger_id: int | None = None, opponent_id: int | None = None
    ) -> list[Challenge]:
        sql = f"SELECT {CHALLENGE_COLS} FROM challenges WHERE status = 'pending'"
        params: list[Any] = []
        if challenger_id is not None:
            sql += " AND challenger_id = ?"
            params.append(challenger_id)
        if opponent_id is not None:
            sql += " AND opponent_id = ?"
            params.append(opponent_id)
        rows = await self._db.fetchall(sql + " ORDER BY id", params)
        return decodable(rows, decode_challenge)

    async def last_between(self, a: int, b: int) -> Challenge | None:
        """The newest challenge between two players, either way round."""
        rows = await self._db.fetchall(
            f"SELECT {CHALLENGE_COLS} FROM challenges WHERE (challenger_id = ? AND"
            " opponent_id = ?) OR (challenger_id = ? AND opponent_id = ?)"
            " ORDER BY created_at DESC, id DESC LIMIT 1",
            (a, b, b, a),
        )
        return decode_challenge(rows[0]) if rows else None


async def answer_challenge(
    conn: Tx, challenge_id: int, status: str, now: float, match_id: int | None
) -> None:
    """Answer a pending, unexpired challenge (in the caller's transaction)."""
    rows = await query(
        conn,
        f"SELECT status, expires_at FROM challenges WHERE id = ?{conn.dialect.lock}",
        (challenge_id,),
    )
    if not rows:
        raise ChallengeClosedError(challenge_id, "unknown")
    current, expires_at = rows[0][0], rows[0][1]
    if current != "pending":
        raise ChallengeClosedError(challenge_id, str(current))
    if status == "accepted" and expires_at <= now:
        await conn.execute(
            "UPDATE challenges SET status = 'expired', answered_at = ? WHERE id = ?",
            (now, challenge_id),
        )
        raise ChallengeClosedError(challenge_id, "expired")
    await conn.execute(
        "UPDATE challenges SET status = ?, answered_at = ?, match_id = ? WHERE id = ?",
        (status, now, match_id, challenge_id),
    )
