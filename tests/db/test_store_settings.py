"""Each server's settings in the store (``store.settings``) on both backends: kept as one
object per server with who changed it last, every change logged with who made it, checked
before anything is written, two processes' changes both kept (PostgreSQL), a row that does not
decode read as none set."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import PlayerNotFoundError, Store
from db.errors import BadValueError
from db.migrations import MIGRATIONS
from tests.pg import PgServer
from tests.stores import postgres

#: The schema version every store is brought to.
LATEST = MIGRATIONS[-1][0]


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


async def test_changes_are_kept_per_server_with_who_made_them(store_target: str) -> None:
    async with Store.open(store_target) as s:
        ann = await s.players.get_or_create_user(1, "ann")
        bob = await s.players.get_or_create_user(2, "bob")
        assert (await s.settings.get(5)).values == {}
        await s.settings.change(5, ann.id, {"turn_seconds": 90, "games": ["othello"]})
        await s.settings.change(5, bob.id, {"turn_seconds": None, "channels": [7, 8]})
        await s.settings.change(5, bob.id, {"channels": [7, 8]})  # no change: no log row
        await s.settings.change(0, ann.id, {"levels": ["easy"]})
    async with Store.open(store_target) as s:
        found = await s.settings.get(5)
        assert found.values == {"games": ["othello"], "channels": [7, 8]}
        assert found.updated_by == bob.id and found.updated_at is not None
        assert (await s.settings.get(0)).values == {"levels": ["easy"]}
        newest, first = await s.settings.history(5)
        assert (first.player_id, first.changes) == (
            ann.id,
            {"turn_seconds": (None, 90), "games": (None, ["othello"])},
        )
        assert (newest.player_id, newest.changes) == (
            bob.id,
            {"turn_seconds": (90, None), "channels": (None, [7, 8])},
        )


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"Bad Key": 1}, "setting: 'Bad Key' is not a setting's name"),
        ({"": 1}, "is not a setting's name"),
        ({"turn_seconds": float("nan")}, "turn_seconds: nan is not a plain value"),
        ({"turn_seconds": float("inf")}, "not a plain value"),
        ({"x": {1, 2}}, "not a plain value"),
        ({"x": "y" * 9000}, "settings: '9"),
    ],
)
async def test_bad_keys_and_values_are_refused_and_nothing_written(
    store: Store, changes: dict[str, Any], words: str
) -> None:
    ann = await store.players.get_or_create_user(1, "ann")
    with pytest.raises(BadValueError, match=words[:30].replace("(", r"\(")):
        await store.settings.change(5, ann.id, {"games": ["othello"], **changes})
    with pytest.raises(PlayerNotFoundError):
        await store.settings.change(5, ann.id + 50, {"games": ["othello"]})
    with pytest.raises(BadValueError, match="guild"):
        await store.settings.change(-1, ann.id, {"games": ["othello"]})
    assert (await store.settings.get(5)).values == {} and await store.settings.history(5) == []


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=20)),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=10,
    )
)
async def test_any_plain_value_reads_back_as_written(store: Store, value: Any) -> None:
    ann = await store.players.get_or_create_user(1, "ann")
    await store.settings.change(9, ann.id, {"k": value})
    assert (await store.settings.get(9)).values.get("k") == value  # None: the key removed


async def test_two_processes_first_changes_are_both_kept(pg_server: PgServer) -> None:
    url = await pg_server.fresh_database()
    async with Store.open(url) as a, Store.open(url) as b:
        ann = await a.players.get_or_create_user(1, "ann")
        for guild in range(10, 15):
            await asyncio.gather(
                a.settings.change(guild, ann.id, {"turn_seconds": 60}),
                b.settings.change(guild, ann.id, {"games": ["othello"]}),
            )
            found = await a.settings.get(guild)
            assert found.values == {"turn_seconds": 60, "games": ["othello"]}


async def test_a_row_that_does_not_decode_is_read_as_none_set(store_target: str) -> None:
    async with Store.open(store_target) as s:
        ann = await s.players.get_or_create_user(1, "ann")
        await s.settings.change(5, ann.id, {"turn_seconds": 60})
    sql = "UPDATE guild_settings SET settings = '[1, 2]' WHERE guild_id = 5"
    if postgres(store_target):
        import asyncpg

        conn = await asyncpg.connect(store_target)
        await conn.execute(sql)
        await conn.close()
    else:
        with sqlite3.connect(store_target) as raw:
            raw.execute(sql)
        raw.close()
    async with Store.open(store_target) as s:
        assert (await s.settings.get(5)).values == {}


async def test_a_database_of_version_7_is_brought_to_the_latest_keeping_its_settings(
    store_target: str,
) -> None:
    """Every migration from 8 on, run on a database an older bot wrote: its server settings
    row (version 1's table) reads back, with nobody named as its last changer, and the new
    tables work."""
    row = (
        "INSERT INTO guild_settings (guild_id, settings, updated_at)"
        """ VALUES (5, '{"turn_seconds": 90}', 1)"""
    )
    if postgres(store_target):
        import asyncpg

        from db.pg_migrations import PG_MIGRATIONS, apply_pg_migrations

        conn = await asyncpg.connect(store_target)
        assert await apply_pg_migrations(conn, "old", PG_MIGRATIONS[:7]) == 7
        await conn.execute(row)
        await conn.close()
    else:
        import aiosqlite

        from db.migrations import MIGRATIONS, apply_migrations

        Path(store_target).parent.mkdir(parents=True)
        async with aiosqlite.connect(store_target, isolation_level=None) as lite:
            assert await apply_migrations(lite, store_target, MIGRATIONS[:7]) == 7
            await lite.execute(row)
    async with Store.open(store_target) as s:
        assert await s.backend.schema_version() == LATEST
        found = await s.settings.get(5)
        assert found.values == {"turn_seconds": 90} and found.updated_by is None
        ann = await s.players.get_or_create_user(1, "ann")
        await s.settings.change(5, ann.id, {"games": ["othello"]})
        await s.prefs.set_board(ann.id, "image")
        assert (await s.settings.get(5)).values == {"turn_seconds": 90, "games": ["othello"]}
        assert [c.changes for c in await s.settings.history(5)] == [{"games": (None, ["othello"])}]
