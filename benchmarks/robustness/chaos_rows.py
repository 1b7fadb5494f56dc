"""Undecodable rows the chaos run plants in the bot's database while the bot is down.

One in each table a start, a clock pass or a listing reads: a player, a rating, a point of
rating history, a pending challenge already due (expired at the start), three live matches
(one whose stored ply disagrees with its moves, one with a move that is not a move, one whose
options are not a JSON object: each set aside at the start), a learning job in the outbox
whose payload is not a JSON object and (SQLite) a running tournament whose round is not a
number. The bot must start, set each aside (a WARNING; a match
set aside is an ERROR naming it) and still answer the leaderboard, stats and history.

SQLite stores any value in any column, so there a number column holds text (what `db/rows.py`
refuses to decode). PostgreSQL's columns are typed and checked: there the corrupt values are
those its types allow (a game the bot does not know, a JSON array for an object, a ply that
disagrees with the moves, a move that does not parse); a player cannot be made undecodable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Execute = Callable[[str, tuple[Any, ...]], Awaitable[list[tuple[Any, ...]]]]


@dataclass
class Planted:
    """What was planted (left out of the run's checks of the bot's own rows)."""

    players: set[int] = field(default_factory=set)
    matches: set[int] = field(default_factory=set)
    outbox: set[int] = field(default_factory=set)
    tournaments: set[int] = field(default_factory=set)
    rows: int = 0


async def plant(execute: Execute, postgres: bool, base: int, now: float, into: Planted) -> None:
    """Plant one round of corrupt rows (all in the caller's transaction)."""
    insert = (
        "INSERT INTO players (kind, discord_id, display_name, created_at, updated_at)"
        " VALUES ('user', ?, 'planted', ?, ?) RETURNING id"
    )
    [(good,)] = await execute(insert, (base, now, now))
    # SQLite: a player that does not decode; PostgreSQL: a second good one.
    [(bad,)] = await execute(insert, (base + 1, now if postgres else "long ago", now))
    into.players |= {good, bad}
    rating = (
        "INSERT INTO ratings (player_id, game, mu, sigma, games, wins, updated_at)"
        " VALUES (?, ?, ?, 1, 1, 1, ?)"
    )
    await execute(
        rating, (good, "chess" if postgres else "connect4", 30.0 if postgres else "high", now)
    )
    if not postgres:
        await execute(rating, (bad, "connect4", 30.0, now))  # its player does not decode
    matches = await _matches(execute, postgres, good, bad, now)
    into.matches |= set(matches)
    await execute(
        "INSERT INTO rating_history (player_id, game, match_id, mu, sigma, games, at)"
        " VALUES (?, ?, ?, 25, 8, 1, ?)",
        (good, "chess" if postgres else "connect4", matches[0], now if postgres else "then"),
    )
    await execute(
        "INSERT INTO challenges (game, challenger_id, opponent_id, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?)",
        ("chess" if postgres else "connect4", good, bad, now if postgres else "yesterday", now - 1),
    )
    [(job,)] = await execute(
        "INSERT INTO outbox (kind, match_id, payload, created_at) VALUES ('learn', ?, '[]', ?)"
        " RETURNING id",
        (matches[0], now),
    )
    into.outbox.add(job)
    into.rows += 7 + len(matches) + (0 if postgres else 2)
    if not postgres:  # a running tournament whose round is not a number (its columns are typed)
        [(tournament,)] = await execute(
            "INSERT INTO tournaments (game, format, status, round, creator_id, created_at,"
            " updated_at) VALUES ('connect4', 'swiss', 'running', 'second', ?, ?, ?) RETURNING id",
            (good, now, now),
        )
        into.tournaments.add(tournament)
        into.rows += 1


async def _matches(execute: Execute, postgres: bool, a: int, b: int, now: float) -> list[int]:
    """Three live matches that cannot be taken up again (a move row each for two)."""
    insert = (
        "INSERT INTO matches (game, variant, kind, player0_id, player1_id, created_at,"
        " updated_at, turn_deadline, turn_seconds, options) VALUES ('connect4', '7x6k4',"
        " 'pvp', ?, ?, ?, ?, ?, 600, ?) RETURNING id"
    )
    later = now + 3600  # no clock pass ends them before the start sets them aside
    ids = []
    for options in ("{}", "{}", "[]"):
        [(mid,)] = await execute(insert, (a, b, now, now, later, options))
        ids.append(mid)
    move = "INSERT INTO moves (match_id, ply, move, player_id, created_at) VALUES (?, 0, ?, ?, ?)"
    await execute(move, (ids[0], "4", a, now))
    await execute("UPDATE matches SET ply = 3 WHERE id = ?", (ids[0],))  # one move stored
    await execute(move, (ids[1], "not a move", a, now))
    await execute("UPDATE matches SET ply = 1 WHERE id = ?", (ids[1],))
    return ids
