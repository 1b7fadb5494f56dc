"""The corrupt rows the chaos run plants while the bot is down
(`benchmarks/robustness/chaos_rows.py`), on both databases: the lobby starts over them, sets each
aside, answers the listings and the clock, and its learning goes on (an outbox row that does not
decode must not stop the others)."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from benchmarks.robustness.chaos_rows import Execute, Planted, plant
from db.backend import is_postgres_url
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person
from lobby.pool import EnginePool
from tests.clock import Clock

ALICE = Person("user", 101, "Alice")
BOB = Person("user", 102, "Bob")
BASE = 9_100_000_000_000


async def no_sleep(_: float) -> None:
    return None


async def open_lobby(target: str, pool: EnginePool, clock: Clock) -> Lobby:
    store = await Store.open(target, clock=clock)
    config = LobbyConfig(seed=3, turn_seconds=600, resume_grace=120)
    return Lobby(store, pool, config, clock=clock, sleep=no_sleep)


async def in_transaction(target: str, body: Callable[[Execute], Awaitable[None]]) -> None:
    """Run `body` with an `execute` on the database, as the chaos run's driver does."""
    if is_postgres_url(target):
        import asyncpg

        from db.postgres import placeholders

        conn = await asyncpg.connect(target)

        async def pg_execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in await conn.fetch(placeholders(sql), *params)]

        try:
            async with conn.transaction():
                await body(pg_execute)
        finally:
            await conn.close()
        return
    con = sqlite3.connect(target)

    async def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return con.execute(sql, params).fetchall()

    try:
        with con:
            await body(execute)
    finally:
        con.close()


async def read(target: str, sql: str) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []

    async def body(execute: Execute) -> None:
        rows.extend(await execute(sql, ()))

    await in_transaction(target, body)
    return rows


async def test_the_bot_starts_over_the_planted_rows_and_sets_each_aside(
    store_target: str, pool: EnginePool, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    lob = await open_lobby(store_target, pool, clock)
    game = await lob.start_pvp(ALICE, BOB, "connect4")
    await lob.play(game.id, ALICE, "4")
    await lob.close()
    await lob.store.close()
    planted = Planted()
    postgres = is_postgres_url(store_target)

    async def body(execute: Execute) -> None:
        await plant(execute, postgres, BASE, time.time(), planted)

    await in_transaction(store_target, body)
    caplog.set_level(logging.WARNING)
    lob = await open_lobby(store_target, pool, clock)
    try:
        assert [s.id for s in await lob.resume()] == [game.id]
        aside = {r[0] for r in await read(store_target, "SELECT match_id FROM match_faults")}
        assert aside == planted.matches
        await lob.expire_challenges()
        await lob.tick()
        await lob.leaderboard("connect4")
        for who in (ALICE, Person("user", BASE, "planted")):
            await lob.stats(who)
            await lob.history(who)
        lob.learning.outbox.kick()  # the outbox: the planted row is skipped, not a stop
    finally:
        await lob.close()
        await lob.store.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert {r.getMessage().split(":")[0] for r in errors} == {
        f"match {m} set aside" for m in planted.matches
    }
