"""The store under faults: cancellation, injected write failures, one transaction per step."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

import faults
from db.store import Store


@pytest.fixture(autouse=True)
def no_faults() -> object:
    faults.reset()
    yield
    faults.reset()


async def test_a_write_cancelled_while_waiting_for_the_lock_leaves_no_transaction_open(
    tmp_path: Path,
) -> None:
    db = tmp_path / "cancel.db"
    store = await Store.open(db)
    try:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        task = asyncio.ensure_future(store.get_or_create_local("alice"))
        await asyncio.sleep(0.2)  # the store now waits in BEGIN IMMEDIATE (busy timeout)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        other.execute("ROLLBACK")
        other.close()
        # Every later write works: no transaction was left open on the store's connection.
        player = await store.get_or_create_local("bob")
        assert player.display_name == "bob"
        assert (await store.get_or_create_local("alice")).display_name == "alice"
    finally:
        await store.close()
