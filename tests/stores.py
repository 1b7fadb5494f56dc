"""What the store's tests share: the state of a database made behind the store's back, and the
people and matches most tests start from."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from db import Finish, Match, Player, Rating, RatingFn, Store
from db.models import MatchKind, MatchStatus, Result


def postgres(target: str) -> bool:
    """Whether `Store.open` was given a PostgreSQL URL (else a SQLite path)."""
    return target.startswith("postgresql://")


@asynccontextmanager
async def another_process_writing(target: str) -> AsyncIterator[None]:
    """Another connection holds what a new player's write needs until the block ends: SQLite's
    write lock, or PostgreSQL's lock on the players table (reads still pass)."""
    if postgres(target):
        import asyncpg

        other = await asyncpg.connect(target)
        tx = other.transaction()
        await tx.start()
        await other.execute("LOCK TABLE players IN SHARE ROW EXCLUSIVE MODE")
        try:
            yield
        finally:
            await tx.rollback()
            await other.close()
    else:
        raw = sqlite3.connect(target, isolation_level=None)
        raw.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            raw.execute("ROLLBACK")
            raw.close()


async def set_schema_version(target: str, version: int) -> None:
    """Write a schema version behind the store's back (as a newer bot would)."""
    if postgres(target):
        import asyncpg

        conn = await asyncpg.connect(target)
        await conn.execute("UPDATE boardbot_schema SET version = $1", version)
        await conn.close()
    else:
        with sqlite3.connect(target) as raw:
            raw.execute(f"PRAGMA user_version = {version}")
        raw.close()


async def people(store: Store) -> tuple[Player, Player, Player]:
    """Two Discord users and an agent: alice (111), bob (222) and the medium bot."""
    alice = await store.players.get_or_create_user(111, "alice")
    bob = await store.players.get_or_create_user(222, "bob")
    bot = await store.players.get_or_create_agent("connect4:medium", "Medium bot")
    return alice, bob, bot


async def finish_match(
    store: Store,
    match_id: int,
    status: MatchStatus,
    result: Result | None,
    termination: str,
    ratings: list[Rating] | RatingFn | None = None,
    *,
    expected_ply: int | None = None,
) -> Match:
    """End a match as the lobby does: a step with only a finish."""
    finish = Finish(status, result, termination, ratings)
    return await store.matches.commit_step(match_id, expected_ply, (), finish=finish)


async def rating_in(store: Store, player_id: int, game: str) -> Rating | None:
    """The player's rating in `game`, as their stats show it (None: none yet)."""
    return {s.game: s.rating for s in await store.ratings.player_stats(player_id)}.get(game)


def bump(old: Rating | None, pid: int, game: str, mu: float, sigma: float, outcome: str) -> Rating:
    """The rating after one more game ending in `outcome`, with the given mu and sigma."""
    games, wins, draws, losses = (
        (0, 0, 0, 0)
        if old is None
        else (
            old.games,
            old.wins,
            old.draws,
            old.losses,
        )
    )
    return Rating(
        pid,
        game,
        mu,
        sigma,
        games + 1,
        wins + (outcome == "win"),
        draws + (outcome == "draw"),
        losses + (outcome == "loss"),
    )


async def play_rated(
    store: Store,
    p0: Player,
    p1: Player,
    result: Result,
    new: Mapping[int, tuple[float, float]],
    *,
    game: str = "connect4",
    guild_id: int | None = None,
) -> Match:
    """Create, play one move, and finish a rated match, setting the given (mu, sigma)."""
    kind: MatchKind = "pvp" if p0.is_human and p1.is_human else "pve"
    m = await store.matches.create(game, kind, p0.id, p1.id, rated=True, guild_id=guild_id)
    await store.matches.append_move(m.id, 0, "d", p0.id)

    def rate(match: Match, current: Mapping[int, Rating | None]) -> list[Rating]:
        out = []
        for pid, (mu, sigma) in new.items():
            outcome = match.outcome_for(pid)
            assert outcome is not None
            out.append(bump(current[pid], pid, game, mu, sigma, outcome))
        return out

    return await finish_match(store, m.id, "finished", result, "connect", rate)
