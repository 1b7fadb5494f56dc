"""The store's one error language: for the same failure both backends raise the same class of
`db.errors` (busy, full, refused, a corrupt row), with the database's own words and its error
as the cause; and nothing above `db` speaks to a driver (import-linter checks the packages,
this file the top-level modules)."""

from __future__ import annotations

import ast
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

import db.postgres
from db.errors import (
    BackendError,
    CorruptDatabaseError,
    CorruptError,
    CorruptRowError,
    FullError,
    RefusedError,
    StoreError,
    TransientError,
)
from db.sqlite import SqliteBackend, translate
from db.store import Store
from tests.stores import another_process_writing, postgres

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ("sqlite3", "aiosqlite", "asyncpg")


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


@pytest.fixture
async def impatient(store_target: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Store]:
    """A store that waits 0.2 s for a lock instead of 5 s (the same failure, sooner)."""
    settings = {**db.postgres.SERVER_SETTINGS, "lock_timeout": "200ms"}
    monkeypatch.setattr(db.postgres, "SERVER_SETTINGS", settings)
    store = await Store.open(store_target)
    if not postgres(store_target):
        await cast(SqliteBackend, store.backend).connection.execute("PRAGMA busy_timeout = 200")
    yield store
    await store.close()


async def test_a_busy_database_is_transient_on_both(impatient: Store, store_target: str) -> None:
    async with another_process_writing(store_target):
        with pytest.raises(TransientError) as raised:
            await impatient.players.get_or_create_local("alice")
    assert not isinstance(raised.value, FullError)  # busy is not full
    assert isinstance(raised.value.__cause__, Exception)  # the driver's own error
    word = "lock" if postgres(store_target) else "database is locked"
    assert word in str(raised.value)
    assert (await impatient.players.get_or_create_local("alice")).display_name == "alice"  # retried


async def test_a_full_database_is_full_on_both(store: Store, store_target: str) -> None:
    """A quota runs out: SQLite's page limit for the file, PostgreSQL's for temporary files
    (a real full disk is not something a test can make)."""
    if postgres(store_target):
        with pytest.raises(FullError, match="temp_file_limit") as raised:
            async with store.connection.write("test") as conn:
                await conn.execute("SET LOCAL temp_file_limit = '64kB'")
                await conn.execute("SET LOCAL work_mem = '64kB'")
                await conn.fetch("SELECT g FROM generate_series(1, 100000) g ORDER BY g DESC")
    else:
        sqlite_conn = cast(SqliteBackend, store.backend).connection
        [(pages,)] = list(await sqlite_conn.execute_fetchall("PRAGMA page_count"))
        await sqlite_conn.execute(f"PRAGMA max_page_count = {int(pages) + 2}")
        with pytest.raises(FullError, match="database or disk is full") as raised:
            await store.memory.put("qlearn", "c4", [(b"k", bytes(1_000_000))])
        await sqlite_conn.execute("PRAGMA max_page_count = 1073741823")
    assert isinstance(raised.value, TransientError)  # a retry mends it once there is room
    assert isinstance(raised.value.__cause__, Exception)
    assert await store.memory.put("qlearn", "c4", [(b"k", b"v")]) == 1  # room again


async def test_a_broken_constraint_is_refused_on_both(store: Store) -> None:
    alice = await store.players.get_or_create_local("alice")
    with pytest.raises(RefusedError, match=r"(?i)foreign key") as raised:
        await store.challenges.add("connect4", alice.id, 99999, expires_at=1e12)
    assert not isinstance(raised.value, TransientError)  # a retry fails the same way
    assert isinstance(raised.value.__cause__, Exception)
    m = await store.matches.create(
        "connect4", "pvp", alice.id, (await store.players.get_or_create_local("bob")).id
    )
    with pytest.raises(RefusedError, match=r"matches\.ply"):  # the moves' trigger
        async with store.connection.write("test") as conn:
            await conn.execute(
                "INSERT INTO moves (match_id, ply, move, player_id, created_at)"
                " VALUES (?, 5, 'a', ?, 0)",
                (m.id, alice.id),
            )
    assert await store.challenges.pending() == []  # nothing of either was kept


async def test_a_corrupt_row_is_corrupt_on_both(store: Store) -> None:
    alice = await store.players.get_or_create_local("alice")
    bob = await store.players.get_or_create_local("bob")
    m = await store.matches.create("connect4", "pvp", alice.id, bob.id)
    async with store.connection.write(
        "test"
    ) as conn:  # JSON, as PostgreSQL checks, but not an object
        await conn.execute("UPDATE matches SET options = '[1]' WHERE id = ?", (m.id,))
    with pytest.raises(CorruptError, match=rf"matches \(id={m.id}\).*options") as raised:
        await store.matches.get(m.id)
    assert isinstance(raised.value, CorruptRowError)
    assert not isinstance(raised.value, BackendError)  # the database is fine; the row is not


async def test_a_damaged_sqlite_file_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    path.write_bytes(b"this is not a database, whatever its name says" * 100)
    with pytest.raises(CorruptDatabaseError, match="not a database"):
        await Store.open(path)


def test_sqlite_errors_become_the_stores() -> None:
    cases = [
        (sqlite3.IntegrityError("UNIQUE constraint failed: players.local_name"), RefusedError),
        (sqlite3.DataError("string or blob too big"), RefusedError),
        (sqlite3.OperationalError("database is locked"), TransientError),
        (sqlite3.OperationalError("disk I/O error"), TransientError),
        (sqlite3.OperationalError("database or disk is full"), FullError),
        (sqlite3.DatabaseError("database disk image is malformed"), CorruptDatabaseError),
        (sqlite3.DatabaseError("file is not a database"), CorruptDatabaseError),
        (sqlite3.ProgrammingError("Incorrect number of bindings supplied"), BackendError),
    ]
    for exc, kind in cases:
        got = translate(exc)
        assert type(got) is kind and str(got) == str(exc), exc
    malformed = sqlite3.DatabaseError("no message")
    malformed.sqlite_errorcode = 11  # as SQLite sets it
    assert type(translate(malformed)) is CorruptDatabaseError
    full = sqlite3.OperationalError("no message")
    full.sqlite_errorcode = 13 | (3 << 8)  # an extended code
    assert type(translate(full)) is FullError
    assert all(issubclass(k, StoreError) for k in (BackendError, CorruptError))


def driver_imports(source: str) -> set[str]:
    """The drivers a module's text imports (at any depth, under any condition)."""
    tree = ast.parse(source)
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return {m for m in names if m.split(".")[0] in DRIVERS}


def test_the_top_level_modules_speak_no_drivers_language() -> None:
    """The modules beside the packages (bot.py, the composition root; faults.py), which
    import-linter does not check: they catch the store's errors, never a driver's."""
    assert driver_imports("def f():\n    import sqlite3\nfrom asyncpg import x\n") == {
        "sqlite3",
        "asyncpg",
    }
    modules = sorted(ROOT.glob("*.py"))
    assert ROOT / "bot.py" in modules
    for path in modules:
        assert driver_imports(path.read_text()) == set(), path.name
