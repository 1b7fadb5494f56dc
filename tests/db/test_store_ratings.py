"""Tests for the store's ratings (`store.ratings`): written with a finish in its transaction,
the leaderboard, a player's history and stats, the rating history. Each against both backends
(tests/conftest.py's `store_target`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from db import (
    Rating,
    StaleMoveError,
    StaleRatingError,
    Store,
)
from db.errors import RefusedError
from tests.stores import finish_match, people, play_rated, rating_in


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


async def test_finish_match_is_atomic_with_ratings(store: Store) -> None:
    alice, bob, _ = await people(store)
    m = await store.matches.create("connect4", "pvp", alice.id, bob.id, rated=True)
    bad = [
        Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
        Rating(bob.id, "connect4", 23.0, -1.0, 1, 0, 0, 1),  # sigma <= 0: CHECK fails
    ]
    with pytest.raises(RefusedError):
        await finish_match(store, m.id, "finished", "0", "connect", bad)
    # Neither the match outcome nor the first (valid) rating was kept.
    got = await store.matches.get(m.id)
    assert got is not None and got.status == "live" and got.result is None
    assert await rating_in(store, alice.id, "connect4") is None

    stale = [Rating(alice.id, "connect4", 27.0, 8.0, 5, 5, 0, 0)]
    with pytest.raises(StaleRatingError):
        await finish_match(store, m.id, "finished", "0", "connect", stale)

    with pytest.raises(StaleMoveError):  # a time forfeit racing a move must not apply
        await finish_match(store, m.id, "finished", "1", "time", None, expected_ply=3)

    good = [bad[0], Rating(bob.id, "connect4", 23.0, 8.0, 1, 0, 0, 1)]
    await finish_match(store, m.id, "finished", "0", "connect", good, expected_ply=0)
    assert (await rating_in(store, bob.id, "connect4")) is not None

    casual = await store.matches.create("connect4", "pvp", alice.id, bob.id)
    with pytest.raises(ValueError, match="unrated"):
        await finish_match(store, casual.id, "finished", "draw", "board_full", good)


async def test_leaderboard_orders_by_ordinal_and_scopes_by_guild(store: Store) -> None:
    alice, bob, bot = await people(store)
    carol = await store.players.get_or_create_user(333, "carol")
    # bob has the highest mu but is very uncertain: ordinal 35 - 12 = 23
    await play_rated(
        store, alice, bob, "1", {alice.id: (30.0, 1.0), bob.id: (35.0, 4.0)}, guild_id=1
    )
    # carol: 25 - 1.5 = 23.5; bot: 20 - 3 = 17
    await play_rated(
        store, carol, bot, "0", {carol.id: (25.0, 0.5), bot.id: (20.0, 1.0)}, guild_id=2
    )

    board = await store.ratings.leaderboard("connect4")
    assert [e.player.id for e in board] == [alice.id, carol.id, bob.id, bot.id]
    assert [e.rank for e in board] == [1, 2, 3, 4]
    assert board[0].rating.ordinal == pytest.approx(27.0)

    assert [e.player.id for e in await store.ratings.leaderboard("connect4", guild_id=1)] == [
        alice.id,
        bob.id,
    ]
    assert [e.player.id for e in await store.ratings.leaderboard("connect4", guild_id=2)] == [
        carol.id,
        bot.id,
    ]
    humans = await store.ratings.leaderboard("connect4", include_agents=False, limit=2)
    assert [e.player.id for e in humans] == [alice.id, carol.id]
    assert await store.ratings.leaderboard("othello") == []


async def test_history_and_stats(store: Store) -> None:
    alice, bob, bot = await people(store)
    await play_rated(store, alice, bob, "0", {alice.id: (26.0, 8.0), bob.id: (24.0, 8.0)})
    await play_rated(store, bob, alice, "draw", {alice.id: (26.0, 7.0), bob.id: (24.0, 7.0)})
    oth = await store.matches.create("othello", "pve", bot.id, alice.id)  # unrated
    await finish_match(store, oth.id, "finished", "0", "no_moves")
    voided = await store.matches.create("othello", "pvp", alice.id, bob.id)
    await finish_match(store, voided.id, "abandoned", None, "stopped")
    await store.matches.create("connect4", "pvp", alice.id, bob.id)  # still live: not history

    hist = await store.matches.history(alice.id)
    assert [(h.opponent.display_name, h.seat, h.outcome) for h in hist] == [
        ("bob", 0, None),
        ("Medium bot", 1, "loss"),
        ("bob", 1, "draw"),
        ("bob", 0, "win"),
    ]
    assert len(await store.matches.history(alice.id, limit=2)) == 2
    assert len(await store.matches.history(alice.id, game="othello")) == 2

    stats = {s.game: s for s in await store.ratings.player_stats(alice.id)}
    c4, oth_stats = stats["connect4"], stats["othello"]
    assert (c4.played, c4.wins, c4.draws, c4.losses) == (2, 1, 1, 0)
    assert c4.rating is not None and (c4.rating.games, c4.rating.wins, c4.rating.draws) == (2, 1, 1)
    assert (oth_stats.played, oth_stats.losses, oth_stats.rating) == (1, 1, None)


async def test_each_rated_finish_adds_to_the_rating_history_in_its_transaction(
    store: Store,
) -> None:
    alice, bob, _ = await people(store)
    assert await store.ratings.history(alice.id) == []
    m = await store.matches.create("connect4", "pvp", alice.id, bob.id, rated=True)
    bad = [
        Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
        Rating(bob.id, "connect4", 23.0, -1.0, 1, 0, 0, 1),  # rolls the whole finish back
    ]
    with pytest.raises(RefusedError):
        await finish_match(store, m.id, "finished", "0", "connect", bad)
    assert await store.ratings.history(alice.id) == []  # no history without its rating
    good = [bad[0], Rating(bob.id, "connect4", 23.0, 8.0, 1, 0, 0, 1)]
    await finish_match(store, m.id, "finished", "0", "connect", good)
    m2 = await store.matches.create("connect4", "pvp", alice.id, bob.id, rated=True)
    again = [
        Rating(alice.id, "connect4", 28.0, 7.0, 2, 2, 0, 0),
        Rating(bob.id, "connect4", 22.0, 7.0, 2, 0, 0, 2),
    ]
    await finish_match(store, m2.id, "finished", "0", "connect", again)
    casual = await store.matches.create("othello", "pvp", alice.id, bob.id)
    await finish_match(store, casual.id, "finished", "draw", "no_moves")  # unrated: no history
    points = await store.ratings.history(alice.id)
    assert [(p.game, p.match_id, p.games, p.mu) for p in points] == [
        ("connect4", m.id, 1, 27.0),
        ("connect4", m2.id, 2, 28.0),
    ]
    assert points[-1].ordinal == 28.0 - 21.0
    assert [p.games for p in await store.ratings.history(alice.id, limit=1)] == [2]
