"""The store under faults: cancellation, injected write failures, one transaction per step; on
both backends (`store_target`, tests/conftest.py)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

import faults
from db import Finish, NewMove, Rating
from db.store import Store


@pytest.fixture(autouse=True)
def no_faults() -> object:
    faults.reset()
    yield
    faults.reset()


@asynccontextmanager
async def _another_process_writing(target: str) -> AsyncIterator[None]:
    """Another connection holds what a new player's write needs until the block ends: SQLite's
    write lock, or PostgreSQL's lock on the players table (reads still pass)."""
    if target.startswith("postgresql://"):
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


async def test_a_write_cancelled_while_waiting_for_the_lock_leaves_no_transaction_open(
    store_target: str,
) -> None:
    store = await Store.open(store_target)
    try:
        async with _another_process_writing(store_target):
            task = asyncio.ensure_future(store.get_or_create_local("alice"))
            await asyncio.sleep(0.2)  # the store now waits for the lock
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        # Every later write works: no transaction was left open on the store's connection.
        player = await store.get_or_create_local("bob")
        assert player.display_name == "bob"
        assert (await store.get_or_create_local("alice")).display_name == "alice"
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("kind", "text"),
    [("full", "database or disk is full"), ("locked", "database is locked"), ("x", "I/O")],
)
async def test_an_injected_write_failure_rolls_back_its_whole_step(
    store_target: str, kind: str, text: str
) -> None:
    store = await Store.open(store_target)
    try:
        alice = await store.get_or_create_user(1, "alice")
        bob = await store.get_or_create_user(2, "bob")
        m = await store.create_match("connect4", "pvp", alice.id, bob.id, rated=True)
        ratings = [
            Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
            Rating(bob.id, "connect4", 23.0, 8.0, 1, 0, 0, 1),
        ]

        def step() -> Awaitable[object]:
            return store.commit_step(
                m.id,
                0,
                [NewMove("d", alice.id)],
                finish=Finish("finished", "0", "connect", ratings),
                outbox=[("learn", {"match": m.id})],
            )

        # The disk is full (the lock wait runs out, an I/O error) at this step's commit.
        faults.reset(f"fail:write:commit_step:1:{kind}")
        with pytest.raises(sqlite3.OperationalError, match=text):
            await step()
        got = await store.get_match(m.id)
        assert got is not None and (got.status, got.ply) == ("live", 0)
        assert await store.moves(m.id) == []
        assert await store.outbox_pending() == []
        assert await store.player_stats(alice.id) == []
        done = await step()  # the retry applies all of it, once
        assert (done.status, done.ply) == ("finished", 1)
        assert len(await store.outbox_pending()) == 1
        assert [s.rating is not None for s in await store.player_stats(alice.id)] == [True]
    finally:
        await store.close()


async def test_the_kth_write_fails_counting_every_write(store_target: str) -> None:
    store = await Store.open(store_target)
    try:
        faults.reset("fail:write:3:full")
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: store.get_or_create_local("a"),
            lambda: store.get_or_create_local("b"),
            lambda: store.get_or_create_local("c"),
            lambda: store.get_or_create_local("d"),
        ]
        outcomes = []
        for write in writes:
            try:
                await write()
                outcomes.append("ok")
            except sqlite3.OperationalError:
                outcomes.append("failed")
        assert outcomes == ["ok", "ok", "failed", "ok"]
        assert await store.find_local("c") is None
    finally:
        await store.close()
