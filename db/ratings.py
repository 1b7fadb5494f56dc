"""Ratings: each player's rating per game, written with the finish of a rated match (in its
transaction, `write_ratings`), its history after every rated game, and what is read from them
(the leaderboard, a player's stats)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeAlias

from .connection import Repository, Tx, query
from .errors import StaleRatingError
from .models import LeaderboardEntry, Match, PlayerStats, Rating, RatingPoint
from .players import players_by_id
from .rows import RATING_COLS, decodable, decode_rating, decode_rating_point

__all__ = ["RatingFn", "Ratings", "ratings_for", "write_ratings"]

#: Computes new ratings inside ``commit_step``'s transaction from the current
#: rows (keyed by player id; ``None`` = player has no rating in this game yet).
RatingFn: TypeAlias = Callable[[Match, Mapping[int, Rating | None]], Sequence[Rating]]


class Ratings(Repository):
    """Ratings, their history and the leaderboard (``store.ratings``)."""

    async def history(self, player_id: int, limit: int = 1000) -> list[RatingPoint]:
        """A player's ratings after each rated game, per game, oldest first (the last `limit`
        of each game)."""
        rows = await self._db.fetchall(
            "SELECT player_id, game, match_id, mu, sigma, games, at FROM ("
            " SELECT *, ROW_NUMBER() OVER (PARTITION BY game ORDER BY games DESC) AS n"
            " FROM rating_history WHERE player_id = ?) AS h WHERE n <= ? ORDER BY game, games",
            (player_id, limit),
        )
        return decodable(rows, decode_rating_point)

    async def leaderboard(
        self,
        game: str,
        limit: int = 10,
        guild_id: int | None = None,
        *,
        include_agents: bool = True,
        min_games: int = 1,
    ) -> list[LeaderboardEntry]:
        """Top players of ``game`` by ordinal (mu - 3*sigma), best first.

        With ``guild_id``: only players who played a finished ``game`` match in
        that guild (ratings themselves are global).
        """
        sql = (
            "SELECT r.player_id, r.game, r.mu, r.sigma, r.games, r.wins, r.draws, r.losses,"
            " r.updated_at FROM ratings r JOIN players p ON p.id = r.player_id"
            " WHERE r.game = ? AND r.games >= ?"
        )
        params: list[Any] = [game, min_games]
        if not include_agents:
            sql += " AND p.kind <> 'agent'"
        if guild_id is not None:
            sql += (
                " AND r.player_id IN ("
                " SELECT player0_id FROM matches WHERE guild_id = ? AND game = ?"
                " AND status = 'finished'"
                " UNION SELECT player1_id FROM matches WHERE guild_id = ? AND game = ?"
                " AND status = 'finished')"
            )
            params += [guild_id, game, guild_id, game]
        sql += " ORDER BY r.mu - 3 * r.sigma DESC, r.games DESC, r.player_id LIMIT ?"
        params.append(limit)
        async with self._db.read() as conn:
            ratings = decodable(await query(conn, sql, params), decode_rating)
            players = await players_by_id(conn, (r.player_id for r in ratings))
        # A rating whose player does not decode is left out with it (reported once).
        shown = [r for r in ratings if r.player_id in players]
        return [
            LeaderboardEntry(rank=i, player=players[r.player_id], rating=r)
            for i, r in enumerate(shown, start=1)
        ]

    async def player_stats(self, player_id: int) -> list[PlayerStats]:
        """Per game: W/D/L over all decided matches (rated or not) and the rating."""
        async with self._db.read() as conn:
            rows = await query(
                conn,
                "SELECT game, COUNT(*) AS played,"
                " SUM(CASE WHEN (result = '0' AND player0_id = ?)"
                "   OR (result = '1' AND player1_id = ?) THEN 1 ELSE 0 END) AS wins,"
                " SUM(CASE WHEN result = 'draw' THEN 1 ELSE 0 END) AS draws,"
                " SUM(CASE WHEN (result = '1' AND player0_id = ?)"
                "   OR (result = '0' AND player1_id = ?) THEN 1 ELSE 0 END) AS losses"
                " FROM matches WHERE (player0_id = ? OR player1_id = ?)"
                " AND status <> 'live' AND result IS NOT NULL GROUP BY game",
                (player_id,) * 6,
            )
            rating_rows = await query(
                conn, f"SELECT {RATING_COLS} FROM ratings WHERE player_id = ?", (player_id,)
            )
        ratings = {r.game: r for r in decodable(rating_rows, decode_rating)}
        totals = {
            row["game"]: (row["played"], row["wins"], row["draws"], row["losses"]) for row in rows
        }
        out = []
        for game in sorted(set(totals) | set(ratings)):
            played, wins, draws, losses = totals.get(game, (0, 0, 0, 0))
            out.append(PlayerStats(game, played, wins, draws, losses, ratings.get(game)))
        return out


async def write_ratings(
    conn: Tx,
    m: Match,
    updates: Sequence[Rating] | RatingFn,
    now: float,
) -> None:
    """Write a rated match's new ratings and their history rows (in the caller's
    transaction), from `updates` or computed by it from the current rows."""
    if not m.rated:
        raise ValueError(f"match {m.id} is unrated; it must not change ratings")
    seats = set(m.player_ids)
    # Locks the players (in id order, so two finishes never wait on each other in a
    # circle) before their ratings are read: two processes finishing matches of one
    # player write one rating after the other, never both from the same old row.
    await query(
        conn,
        f"SELECT id FROM players WHERE id IN ({conn.dialect.ids_from_json})"
        f" ORDER BY id{conn.dialect.lock}",
        (json.dumps(sorted(seats)),),
    )
    current = await ratings_for(conn, seats, m.game)
    if callable(updates):
        new = list(updates(m, dict(current)))
        fresh = True
    else:
        new = list(updates)
        fresh = False
    seen: set[int] = set()
    for r in new:
        if r.player_id not in seats:
            raise ValueError(f"rating for player {r.player_id}, who is not in match {m.id}")
        if r.player_id in seen:
            raise ValueError(f"two ratings for player {r.player_id} in match {m.id}")
        seen.add(r.player_id)
        if r.game != m.game:
            raise ValueError(f"rating is for game {r.game!r}, match {m.id} is {m.game!r}")
        old = current.get(r.player_id)
        old_games = old.games if old is not None else 0
        if not fresh and r.games != old_games + 1:
            raise StaleRatingError(r.player_id, r.game, old_games, r.games)
    # Constraint violations (sigma <= 0, counts that do not add up, ...) raise
    # RefusedError (on both backends) here and roll back the whole finish.
    await conn.executemany(
        f"INSERT INTO ratings ({RATING_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (player_id, game) DO UPDATE SET mu = excluded.mu,"
        " sigma = excluded.sigma, games = excluded.games, wins = excluded.wins,"
        " draws = excluded.draws, losses = excluded.losses, updated_at = excluded.updated_at",
        [
            (r.player_id, r.game, r.mu, r.sigma, r.games, r.wins, r.draws, r.losses, now)
            for r in new
        ],
    )
    # The same transaction: a chart never shows a rating the table does not have.
    await conn.executemany(
        "INSERT INTO rating_history (player_id, game, match_id, mu, sigma, games, at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(r.player_id, r.game, m.id, r.mu, r.sigma, r.games, now) for r in new],
    )


async def ratings_for(conn: Tx, player_ids: Collection[int], game: str) -> dict[int, Rating | None]:
    """The current rating of each player in `game` (None: none yet), in the caller's
    transaction."""
    out: dict[int, Rating | None] = dict.fromkeys(player_ids)
    rows = await query(
        conn,
        f"SELECT {RATING_COLS} FROM ratings WHERE game = ?"
        f" AND player_id IN ({conn.dialect.ids_from_json})",
        (game, json.dumps(sorted(player_ids))),
    )
    for r in map(decode_rating, rows):
        out[r.player_id] = r
    return out
