"""Tests for db.Store: opening, migrating and closing a database, the schema's own checks, what
survives a reopen, and rows that do not decode. Each against both backends (a real SQLite file
in tmp_path, a fresh PostgreSQL database on the session's server, tests/pg.py) unless it says
it is SQLite's only."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from db import (
    CorruptRowError,
    MigrationError,
    PlayerNotFoundError,
    Rating,
    SchemaTooNewError,
    Store,
    StoreClosedError,
)
from db.errors import RefusedError
from db.migrations import LATEST_VERSION, MIGRATIONS, apply_migrations, split_statements
from db.sqlite import SqliteBackend
from tests.pg import PgServer
from tests.stores import finish_match, people, set_schema_version


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """For the SQLite-only tests."""
    return tmp_path / "nested" / "dir" / "bot.db"  # parent dirs do not exist yet


async def _pragmas(store: Store) -> dict[str, object]:
    backend = store.backend
    assert isinstance(backend, SqliteBackend)
    conn = backend.connection  # low-level check of the store's own connection
    out: dict[str, object] = {}
    for pragma in ("user_version", "journal_mode", "foreign_keys", "synchronous", "busy_timeout"):
        rows = list(await conn.execute_fetchall(f"PRAGMA {pragma}"))
        out[pragma] = rows[0][0]
    return out


async def test_a_fresh_database_is_migrated(store: Store) -> None:
    assert await store.backend.schema_version() == LATEST_VERSION


# SQLite only: pragmas are SQLite's (PostgreSQL's durability and locking are the server's).
async def test_fresh_file_is_migrated_with_wal_and_foreign_keys(store_path: Path) -> None:
    store = await Store.open(store_path)
    assert store_path.exists()
    diag = await _pragmas(store)
    await store.close()
    assert diag["user_version"] == LATEST_VERSION
    assert diag["journal_mode"] == "wal"
    assert diag["foreign_keys"] == 1
    assert diag["synchronous"] == 2  # FULL
    assert diag["busy_timeout"] == 5000


async def test_reopen_is_idempotent(store_target: str) -> None:
    async with Store.open(store_target) as s:
        await s.players.get_or_create_user(1, "x")
    async with Store.open(store_target) as s:  # migrations must not re-run
        assert await s.backend.schema_version() == LATEST_VERSION
        assert (await s.players.find_user(1)) is not None
    async with await Store.open(store_target) as s:  # awaited form is a context manager too
        assert not s.closed
    assert s.closed
    store = await Store.open(store_target)
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await store.players.get(1)


async def test_newer_schema_version_is_refused(store_target: str) -> None:
    async with Store.open(store_target):
        pass
    await set_schema_version(store_target, LATEST_VERSION + 5)
    with pytest.raises(SchemaTooNewError, match="upgrade the bot"):
        await Store.open(store_target)


async def test_failed_migration_is_rolled_back_on_postgres(pg_server: PgServer) -> None:
    import asyncpg

    from db.pg_migrations import PG_MIGRATIONS, apply_pg_migrations, schema_version

    url = await pg_server.fresh_database()
    bad = [
        *PG_MIGRATIONS,
        (LATEST_VERSION + 1, "CREATE TABLE t2 (x int); INSERT INTO nope VALUES (1);"),
    ]
    conn = await asyncpg.connect(url)
    try:
        with pytest.raises(MigrationError, match="rolled back"):
            await apply_pg_migrations(conn, url, bad)
        assert await schema_version(conn) == LATEST_VERSION  # the earlier ones committed
        assert await conn.fetchval("SELECT to_regclass('t2')") is None
        assert await conn.fetchval("SELECT to_regclass('players')") is not None
    finally:
        await conn.close()


async def test_failed_migration_is_rolled_back(tmp_path: Path) -> None:
    bad = [*MIGRATIONS, (LATEST_VERSION + 1, "CREATE TABLE t2 (x); INSERT INTO nope VALUES (1);")]
    path = str(tmp_path / "m.db")
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        with pytest.raises(MigrationError, match="rolled back"):
            await apply_migrations(conn, path, bad)
        rows = list(await conn.execute_fetchall("PRAGMA user_version"))
        assert rows[0][0] == LATEST_VERSION  # earlier migrations committed, the bad one not
        tables = [r[0] for r in await conn.execute_fetchall("SELECT name FROM sqlite_master")]
        assert "t2" not in tables and "players" in tables


def test_split_statements_handles_triggers_and_strings() -> None:
    sql = """
    CREATE TABLE a (x TEXT DEFAULT ';');  -- comment; with semicolon
    CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; SELECT 2; END;
    -- trailing comment
    """
    stmts = split_statements(sql)
    assert len(stmts) == 2
    assert stmts[0].startswith("CREATE TABLE") and stmts[0].endswith("';');")
    assert "CREATE TRIGGER" in stmts[1] and stmts[1].endswith("END;")


async def test_foreign_keys_unique_keys_and_ply_trigger_are_enforced(store: Store) -> None:
    # Low-level writes through the store's own transactions: the schema's own checks, and
    # the error type each backend's violation arrives as.
    with pytest.raises(RefusedError, match=r"(?i)FOREIGN KEY"):
        async with store.connection.write("test") as conn:
            await conn.execute(
                "INSERT INTO ratings (player_id, game, mu, sigma, updated_at)"
                " VALUES (999, 'connect4', 25, 8, 0)"
            )
    alice, bob, _ = await people(store)
    with pytest.raises(RefusedError, match=r"(?i)unique"):
        async with store.connection.write("test") as conn:
            await conn.execute(
                "INSERT INTO players (kind, discord_id, display_name, created_at, updated_at)"
                " VALUES ('user', ?, 'again', 0, 0)",
                (alice.discord_id,),
            )
    m = await store.matches.create("connect4", "pvp", alice.id, bob.id)
    with pytest.raises(RefusedError, match=r"matches\.ply"):
        async with store.connection.write("test") as conn:
            await conn.execute(
                "INSERT INTO moves (match_id, ply, move, player_id, created_at)"
                " VALUES (?, 5, 'a', ?, 0)",
                (m.id, alice.id),
            )
    with pytest.raises(PlayerNotFoundError):
        await store.matches.create("connect4", "pvp", alice.id, 999)


async def test_reopen_sees_everything(store_target: str) -> None:
    async with Store.open(store_target) as s:
        alice, _, bot = await people(s)
        m = await s.matches.create("connect4", "pve", alice.id, bot.id, rated=True, guild_id=7)
        await s.matches.append_move(m.id, 0, "d", alice.id)
        live = await s.matches.create("othello", "pve", bot.id, alice.id, options={"level": 3})
        await s.matches.append_move(live.id, 0, "f5", bot.id)
        await finish_match(
            s,
            m.id,
            "finished",
            "1",
            "connect",
            [
                Rating(alice.id, "connect4", 24.0, 8.0, 1, 0, 0, 1),
                Rating(bot.id, "connect4", 26.0, 8.0, 1, 1, 0, 0),
            ],
        )
        await s.memory.put("q", "n", [(b"k", b"v")])

    async with Store.open(store_target) as s:
        assert [x.id for x in await s.matches.live()] == [live.id]
        restored = await s.matches.get(live.id)
        assert restored is not None and restored.ply == 1 and restored.options == {"level": 3}
        assert [x.move for x in await s.matches.moves(live.id)] == ["f5"]
        finished = await s.matches.get(m.id)
        assert finished is not None and finished.result == "1"
        assert [e.player.id for e in await s.ratings.leaderboard("connect4", guild_id=7)] == [
            bot.id,
            alice.id,
        ]
        assert await s.memory.get("q", "n") == {b"k": b"v"}
        assert (await s.players.get_or_create_user(111, "alice")).id == alice.id


# SQLite only: PostgreSQL's column types and checks cannot be switched off to write such rows.
async def test_corrupt_rows_raise_naming_the_row(store_path: Path) -> None:
    async with Store.open(store_path) as s:
        alice, bob, _ = await people(s)
        m = await s.matches.create("connect4", "pvp", alice.id, bob.id)
    raw = sqlite3.connect(store_path)
    with raw:
        raw.execute("PRAGMA ignore_check_constraints = ON")
        raw.execute("UPDATE matches SET options = '{not json' WHERE id = ?", (m.id,))
        raw.execute("UPDATE ratings SET mu = 1")  # no rows: harmless
        raw.execute(
            "INSERT INTO ratings (player_id, game, mu, sigma, updated_at)"
            " VALUES (?, 'connect4', 'abc', 1, 0)",
            (alice.id,),
        )
    raw.close()
    async with Store.open(store_path) as s:
        with pytest.raises(CorruptRowError, match=rf"matches \(id={m.id}\).*options.*JSON"):
            await s.matches.get(m.id)
        # A listing sets the row aside instead (tests/lobby/test_trust.py): no rating shown.
        assert await s.ratings.player_stats(alice.id) == []  # no finished match, no readable rating
