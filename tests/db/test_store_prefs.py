"""The store's preferences of each person (``store.prefs``) on both backends: kept across a
reopen, one row per player, checked before anything is written, a row that does not decode
set aside."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import PlayerNotFoundError, Store
from db.errors import BadValueError
from db.prefs import BOARD_STYLES
from tests.stores import postgres


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


async def _rows(store: Store) -> int:
    return len(await store.connection.fetchall("SELECT player_id FROM member_prefs"))


async def test_a_style_is_kept_per_player_and_across_a_reopen(store_target: str) -> None:
    async with Store.open(store_target) as s:
        ann = await s.players.get_or_create_user(1, "ann")
        bob = await s.players.get_or_create_local("bob")
        assert await s.prefs.board_styles([ann.id, bob.id]) == {}
        await s.prefs.set_board(ann.id, "image")
        await s.prefs.set_board(bob.id, "image")
        await s.prefs.set_board(bob.id, "emoji")  # changed: still one row
        assert await _rows(s) == 2
    async with Store.open(store_target) as s:
        assert await s.prefs.board_styles([ann.id, bob.id, 999]) == {
            ann.id: "image",
            bob.id: "emoji",
        }
        assert await s.prefs.board_styles([]) == {}


async def test_an_unknown_player_or_style_is_refused_and_nothing_written(store: Store) -> None:
    ann = await store.players.get_or_create_user(1, "ann")
    with pytest.raises(PlayerNotFoundError):
        await store.prefs.set_board(ann.id + 100, "image")
    with pytest.raises(BadValueError, match="board: 'picture' is not one of emoji, image"):
        await store.prefs.set_board(ann.id, "picture")
    assert await _rows(store) == 0


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.one_of(st.text(max_size=40), st.sampled_from(BOARD_STYLES)))
async def test_hostile_values_are_kept_exactly_or_refused(store: Store, value: str) -> None:
    ann = await store.players.get_or_create_user(1, "ann")
    before = await store.prefs.board_styles([ann.id])
    if value in BOARD_STYLES:
        await store.prefs.set_board(ann.id, value)
        assert await store.prefs.board_styles([ann.id]) == {ann.id: value}
    else:
        with pytest.raises(BadValueError):
            await store.prefs.set_board(ann.id, value)
        assert await store.prefs.board_styles([ann.id]) == before


async def test_a_row_that_does_not_decode_is_set_aside(store_target: str) -> None:
    async with Store.open(store_target) as s:
        ann = await s.players.get_or_create_user(1, "ann")
        bob = await s.players.get_or_create_user(2, "bob")
        await s.prefs.set_board(bob.id, "image")
    sql = (
        f"INSERT INTO member_prefs (player_id, board, updated_at) VALUES ({ann.id}, 'sideways', 0)"
    )
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
        assert await s.prefs.board_styles([ann.id, bob.id]) == {bob.id: "image"}
