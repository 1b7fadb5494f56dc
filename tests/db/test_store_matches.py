"""Tests for the store's players and matches (`store.players`, `store.matches`): a match from
its start to its end, concurrent moves, the clock's queries, and the SQL each backend spells its
own way. Each against both backends (tests/conftest.py's `store_target`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from db import (
    Finish,
    MatchNotFoundError,
    MatchNotLiveError,
    MemoryWrite,
    Rating,
    StaleMoveError,
    Store,
)
from tests.stores import finish_match, people, rating_in


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


async def test_players_get_or_create(store: Store) -> None:
    a1 = await store.players.get_or_create_user(123456789012345678, "alice")
    a2 = await store.players.get_or_create_user(123456789012345678, "alice")
    assert a1 == a2 and a1.kind == "user" and a1.discord_id == 123456789012345678
    renamed = await store.players.get_or_create_user(123456789012345678, "Alice W")
    assert renamed.id == a1.id and renamed.display_name == "Alice W"
    agent = await store.players.get_or_create_agent("bob", "Bob the bot")
    local = await store.players.get_or_create_local("bob")
    assert len({a1.id, agent.id, local.id}) == 3
    assert (agent.kind, local.kind, local.display_name) == ("agent", "local", "bob")
    assert (await store.players.get_or_create_local("bob")).id == local.id
    assert await store.players.get_many([a1.id, local.id, 999]) == {a1.id: renamed, local.id: local}


async def test_match_lifecycle(store: Store) -> None:
    alice, _, bot = await people(store)
    m = await store.matches.create(
        "connect4",
        "pve",
        alice.id,
        bot.id,
        rated=True,
        turn_seconds=60,
        options={"level": "medium", "budget_ms": 200},
    )
    assert (m.status, m.ply, m.result, m.message_id) == ("live", 0, None, None)
    assert m.turn_deadline is not None and m.turn_deadline > time.time() + 50
    assert m.options == {"level": "medium", "budget_ms": 200}
    with pytest.raises(ValueError, match="agent"):
        await store.matches.create("connect4", "pvp", alice.id, bot.id)

    m = await store.matches.set_message(m.id, 1, 2, 3)
    assert (m.guild_id, m.channel_id, m.message_id) == (1, 2, 3)
    assert await store.matches.live(alice.id) == [m]
    assert [x.id for x in await store.matches.live()] == [m.id]

    assert await store.matches.append_move(m.id, 0, "d", alice.id, think_ms=1500) == 1
    assert (
        await store.matches.append_move(m.id, 1, "c", bot.id, turn_deadline=123.0, think_ms=20) == 2
    )
    with pytest.raises(StaleMoveError) as stale:
        await store.matches.append_move(m.id, 1, "e", alice.id)
    assert stale.value.actual_ply == 2
    with pytest.raises(ValueError, match="not playing"):
        await store.matches.append_move(m.id, 2, "e", 999)
    got = await store.matches.get(m.id)
    assert got is not None and got.ply == 2 and got.turn_deadline == 123.0
    mv = await store.matches.moves(m.id)
    assert [(x.ply, x.move, x.player_id, x.think_ms) for x in mv] == [
        (0, "d", alice.id, 1500),
        (1, "c", bot.id, 20),
    ]

    done = await finish_match(
        store,
        m.id,
        "finished",
        "0",
        "resign",
        [
            Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
            Rating(bot.id, "connect4", 23.0, 8.0, 1, 0, 0, 1),
        ],
    )
    assert (done.status, done.result, done.termination) == ("finished", "0", "resign")
    assert done.finished_at is not None and done.turn_deadline is None
    assert done.winner_id == alice.id and done.outcome_for(bot.id) == "loss"
    r = await rating_in(store, alice.id, "connect4")
    assert r is not None and (r.mu, r.games, r.wins) == (27.0, 1, 1)

    with pytest.raises(MatchNotLiveError):
        await store.matches.append_move(m.id, 2, "e", alice.id)
    with pytest.raises(MatchNotLiveError):
        await finish_match(store, m.id, "abandoned", None, "abandon")
    with pytest.raises(MatchNotFoundError):
        await finish_match(store, 424242, "abandoned", None, "abandon")
    assert await store.matches.live() == []
    assert await store.matches.live(alice.id) == []


async def test_concurrent_append_move_applies_exactly_once(store: Store) -> None:
    alice, bob, _ = await people(store)
    m = await store.matches.create("othello", "pvp", alice.id, bob.id)
    results = await asyncio.gather(
        *(store.matches.append_move(m.id, 0, f"m{i}", alice.id) for i in range(20)),
        return_exceptions=True,
    )
    assert results.count(1) == 1
    assert all(isinstance(r, StaleMoveError) for r in results if r != 1)
    assert len(await store.matches.moves(m.id)) == 1
    got = await store.matches.get(m.id)
    assert got is not None and got.ply == 1


async def test_cancelled_write_leaves_no_open_transaction(store: Store) -> None:
    alice, bob, _ = await people(store)
    m = await store.matches.create("connect4", "pvp", alice.id, bob.id)
    tasks = [
        asyncio.create_task(store.matches.append_move(m.id, i, "a", alice.id)) for i in range(5)
    ]
    await asyncio.sleep(0)
    for t in tasks[1:]:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    # The store is usable afterwards and the match is consistent with its moves.
    got = await store.matches.get(m.id)
    assert got is not None and got.ply == len(await store.matches.moves(m.id))
    assert await store.matches.append_move(m.id, got.ply, "b", bob.id) == got.ply + 1


async def test_expired_turns(store: Store) -> None:
    alice, bob, bot = await people(store)
    m1 = await store.matches.create("connect4", "pvp", alice.id, bob.id, turn_deadline=100.0)
    m2 = await store.matches.create("connect4", "pve", alice.id, bot.id, turn_deadline=50.0)
    await store.matches.create("connect4", "pve", alice.id, bot.id, turn_deadline=None)
    m4 = await store.matches.create("othello", "pvp", bob.id, alice.id, turn_deadline=10.0)
    await finish_match(store, m4.id, "finished", "1", "resign")
    assert await store.matches.expired_turn_ids(now=101.0) == [m2.id, m1.id]
    assert await store.matches.expired_turn_ids(now=60.0) == [m2.id]
    await store.matches.set_turn_deadline(m2.id, 500.0)
    assert await store.matches.expired_turn_ids(now=60.0) == []


async def test_hints_starters_counters_and_the_outbox_read_the_same_on_both(store: Store) -> None:
    """The SQL each backend writes its own way (JSON in a column, the larger of two values,
    ids given as a JSON array) gives the same answers."""
    alice, bob, bot = await people(store)
    m = await store.matches.create(
        "connect4", "pve", alice.id, bot.id, rated=True, options={"starter": {"ident": 111}}
    )
    await store.matches.create(
        "connect4", "pve", bob.id, bot.id, options={"starter": {"ident": "111"}}
    )
    assert await store.matches.count_live("pve", starter=111) == 1  # a number is not its text
    assert await store.matches.count_live("pve", starter="111") == 1
    assert await store.matches.count_live("pve", starter=222) == 0
    hinted = await store.matches.use_hint(m.id)
    hinted = await store.matches.use_hint(m.id)
    assert hinted.options == {"starter": {"ident": 111}, "hints": 2} and not hinted.rated

    await store.memory.apply([MemoryWrite("q", "n", {b"k": b"1"}, 3, "matches")])
    await store.memory.apply([MemoryWrite("q", "n", {b"k": b"2"}, 2, "matches")])
    await store.memory.apply([MemoryWrite("q", "n", {}, 4, "trained")])
    info = await store.memory.info("q", "n")
    assert info is not None and (info.games_trained, info.meta) == (9, {"matches": 5, "trained": 4})
    assert await store.memory.get("q", "n") == {b"k": b"2"}

    done = await store.matches.commit_step(
        m.id, 0, (), finish=Finish("abandoned", None, "stopped"), outbox=[("a", {}), ("b", {})]
    )
    first, second = await store.outbox.pending()
    await store.outbox.failed(first.id, "once")
    await store.outbox.failed(second.id, "for good", final=True)
    [left] = await store.outbox.pending()
    assert (left.id, left.attempts, left.last_error, left.match_id) == (
        first.id,
        1,
        "once",
        done.id,
    )
    assert await store.memory.apply([], outbox_id=second.id)
    assert not await store.memory.apply([], outbox_id=second.id)  # once only
    assert await store.outbox.done(first.id) and not await store.outbox.done(first.id)
    assert await store.outbox.pending(max_attempts=100) == []


async def test_ended_ids_lists_a_game_s_ended_matches_with_their_boards(store: Store) -> None:
    alice, bob, _ = await people(store)
    await store.matches.create("connect4", "pvp", alice.id, bob.id, variant="7x6k4")  # live
    small = await store.matches.create("connect4", "pvp", alice.id, bob.id, variant="6x5k4")
    othello = await store.matches.create("othello", "pvp", alice.id, bob.id, variant="8x8")
    await finish_match(store, small.id, "finished", "0", "resign")
    await finish_match(store, othello.id, "abandoned", None, "abandon")
    assert await store.matches.ended_ids("connect4") == [(small.id, "6x5k4")]
    assert await store.matches.ended_ids("othello") == [(othello.id, "8x8")]
