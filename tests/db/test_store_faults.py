"""The store under faults: cancellation, injected write failures, one transaction per step; on
both backends (`store_target`, tests/conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

import faults
from db import Finish, NewMove, Rating
from db.errors import FullError, TransientError
from db.store import Store
from tests.stores import another_process_writing


@pytest.fixture(autouse=True)
def no_faults() -> object:
    faults.reset()
    yield
    faults.reset()


async def test_a_write_cancelled_while_waiting_for_the_lock_leaves_no_transaction_open(
    store_target: str,
) -> None:
    store = await Store.open(store_target)
    try:
        async with another_process_writing(store_target):
            task = asyncio.ensure_future(store.players.get_or_create_local("alice"))
            await asyncio.sleep(0.2)  # the store now waits for the lock
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        # Every later write works: no transaction was left open on the store's connection.
        player = await store.players.get_or_create_local("bob")
        assert player.display_name == "bob"
        assert (await store.players.get_or_create_local("alice")).display_name == "alice"
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("kind", "error", "text"),
    [
        ("full", FullError, "database or disk is full"),
        ("locked", TransientError, "database is locked"),
        ("x", TransientError, "I/O"),
    ],
)
async def test_an_injected_write_failure_rolls_back_its_whole_step(
    store_target: str, kind: str, error: type[TransientError], text: str
) -> None:
    store = await Store.open(store_target)
    try:
        alice = await store.players.get_or_create_user(1, "alice")
        bob = await store.players.get_or_create_user(2, "bob")
        m = await store.matches.create("connect4", "pvp", alice.id, bob.id, rated=True)
        ratings = [
            Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
            Rating(bob.id, "connect4", 23.0, 8.0, 1, 0, 0, 1),
        ]

        def step() -> Awaitable[object]:
            return store.matches.commit_step(
                m.id,
                0,
                [NewMove("d", alice.id)],
                finish=Finish("finished", "0", "connect", ratings),
                outbox=[("learn", {"match": m.id})],
            )

        # The disk is full (the lock wait runs out, an I/O error) at this step's commit.
        faults.reset(f"fail:write:commit_step:1:{kind}")
        with pytest.raises(error, match=text) as raised:
            await step()
        assert isinstance(raised.value, FullError) == (kind == "full")  # busy is not full
        got = await store.matches.get(m.id)
        assert got is not None and (got.status, got.ply) == ("live", 0)
        assert await store.matches.moves(m.id) == []
        assert await store.outbox.pending() == []
        assert await store.ratings.player_stats(alice.id) == []
        done = await step()  # the retry applies all of it, once
        assert (done.status, done.ply) == ("finished", 1)
        assert len(await store.outbox.pending()) == 1
        assert [s.rating is not None for s in await store.ratings.player_stats(alice.id)] == [True]
    finally:
        await store.close()


async def test_the_kth_write_fails_counting_every_write(store_target: str) -> None:
    store = await Store.open(store_target)
    try:
        faults.reset("fail:write:3:full")
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: store.players.get_or_create_local("a"),
            lambda: store.players.get_or_create_local("b"),
            lambda: store.players.get_or_create_local("c"),
            lambda: store.players.get_or_create_local("d"),
        ]
        outcomes = []
        for write in writes:
            try:
                await write()
                outcomes.append("ok")
            except FullError:
                outcomes.append("failed")
        assert outcomes == ["ok", "ok", "failed", "ok"]
        assert await store.players.find_local("c") is None
    finally:
        await store.close()
