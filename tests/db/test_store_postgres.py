"""What only the PostgreSQL backend has to show: several processes writing one database (each
store here has its own pool, as a process would), the same schema as SQLite's, its errors as
the types the lobby knows, and one clear line for a database it cannot use."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from db import Finish, Match, Rating, StaleMoveError, Store
from db.backend import check_url, redact
from db.errors import (
    BackendError,
    CorruptDatabaseError,
    FullError,
    RefusedError,
    TransientError,
)
from db.instance import PgInstanceLock
from db.migrations import MIGRATIONS
from db.pg_migrations import PG_MIGRATIONS
from db.postgres import placeholders, translate
from tests.machine import scaled
from tests.pg import PgServer


@pytest.fixture
async def url(pg_server: PgServer) -> str:
    return await pg_server.fresh_database()


@pytest.fixture
async def two(url: str) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores on one database: two bot processes."""
    a, b = await Store.open(url), await Store.open(url)
    yield a, b
    await a.close()
    await b.close()


def test_the_migrations_have_the_same_numbers() -> None:
    assert [v for v, _ in PG_MIGRATIONS] == [v for v, _ in MIGRATIONS]


async def test_the_schema_has_the_same_tables_and_columns(url: str, tmp_path: Path) -> None:
    await (await Store.open(tmp_path / "s.db")).close()
    await (await Store.open(url)).close()
    raw = sqlite3.connect(tmp_path / "s.db")
    tables = [
        r[0]
        for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    lite = {t: [r[1] for r in raw.execute(f"PRAGMA table_info({t})")] for t in tables}
    raw.close()
    conn = await asyncpg.connect(url)
    rows = await conn.fetch(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'public' AND table_name <> 'boardbot_schema'"
        " ORDER BY table_name, ordinal_position"
    )
    await conn.close()
    pg: dict[str, list[str]] = {}
    for r in rows:
        pg.setdefault(r[0], []).append(r[1])
    assert pg == lite


async def test_two_processes_clicking_one_position_apply_it_once(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    alice = await a.players.get_or_create_user(1, "alice")
    bob = await a.players.get_or_create_user(2, "bob")
    for _ in range(3):
        m = await a.matches.create("connect4", "pvp", alice.id, bob.id)
        results = await asyncio.gather(
            *(s.matches.append_move(m.id, 0, f"m{i}", alice.id) for i, s in enumerate([a, b] * 5)),
            return_exceptions=True,
        )
        # The row lock makes the losers wait and then see ply 1; without it they would meet
        # the first move's key instead (an IntegrityError), or apply twice.
        assert results.count(1) == 1, results
        assert all(isinstance(r, StaleMoveError) for r in results if r != 1), results
        assert len(await b.matches.moves(m.id)) == 1


async def test_two_processes_finishing_one_agents_matches_keep_every_rating(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    agent = await a.players.get_or_create_agent("connect4:medium", "bot")
    people = [await a.players.get_or_create_user(100 + i, f"p{i}") for i in range(8)]
    matches = [
        await a.matches.create("connect4", "pve", p.id, agent.id, rated=True) for p in people
    ]

    def rate(match: Match, current: Mapping[int, Rating | None]) -> list[Rating]:
        out = []
        for pid in match.player_ids:
            old = current[pid]
            games, wins, losses = (0, 0, 0) if old is None else (old.games, old.wins, old.losses)
            won = match.winner_id == pid
            out.append(
                Rating(pid, "connect4", 25.0, 8.0, games + 1, wins + won, 0, losses + (not won))
            )
        return out

    await asyncio.gather(
        *(
            s.matches.commit_step(m.id, None, (), finish=Finish("finished", "1", "connect", rate))
            for m, s in zip(matches, [a, b] * 4, strict=True)
        )
    )
    # Each finish read the agent's rating after the one before wrote it: none is lost.
    stats = {s.game: s for s in await b.ratings.player_stats(agent.id)}
    rating = stats["connect4"].rating
    assert rating is not None and (rating.games, rating.wins) == (8, 8)
    assert [p.games for p in await b.ratings.history(agent.id)] == list(range(1, 9))


async def test_two_processes_adding_one_player_make_one(two: tuple[Store, Store]) -> None:
    a, b = two
    for i in range(5):
        players = await asyncio.gather(
            a.players.get_or_create_user(500 + i, "carol"),
            b.players.get_or_create_user(500 + i, "carol"),
        )
        assert players[0] == players[1]


async def test_a_lost_connection_is_a_transient_error_and_the_next_call_works(
    url: str, pg_server: PgServer
) -> None:
    store = await Store.open(url)
    try:
        alice = await store.players.get_or_create_local("alice")
        admin = await asyncpg.connect(pg_server.admin_url)
        killed = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = $1 AND pid <> pg_backend_pid()",
            urlsplit(url).path.lstrip("/"),
        )
        await admin.close()
        assert killed >= 1
        # The pool replaces the dead connection; a call that races the news of its death
        # fails as SQLite's busy or failing does: a TransientError (the lobby retries those).
        for _ in range(3):
            try:
                assert await store.players.get(alice.id) == alice
                break
            except TransientError:
                pass
        else:
            raise AssertionError("the store did not connect again")
        # Lost in the middle of a transaction: what SQLite raises when busy or failing (the
        # lobby retries it), the transaction's write is gone, and the next call works.
        with pytest.raises(TransientError):
            async with store.connection.write("test") as conn:
                await conn.execute(
                    "UPDATE players SET display_name = 'x' WHERE id = ?", (alice.id,)
                )
                await conn.fetch("SELECT pg_terminate_backend(pg_backend_pid())")
        assert await store.players.get(alice.id) == alice
    finally:
        await store.close()


async def test_a_database_it_cannot_use_is_one_line() -> None:
    t0 = time.monotonic()
    with pytest.raises(TransientError) as err:  # refused: the server may come up later
        await Store.open("postgresql://bot:secret@127.0.0.1:1/boardbot")
    assert time.monotonic() - t0 < scaled(15)
    text = str(err.value)
    assert "\n" not in text and "secret" not in text and "127.0.0.1" in text
    with pytest.raises(BackendError, match="port is not a number"):
        await Store.open("postgresql://bot@localhost:notaport/boardbot")
    with pytest.raises(BackendError, match=r"^postgresql://bot@h/b\?sslmode=x: .*sslmode"):
        await Store.open("postgresql://bot@h/b?sslmode=x")
    guard = PgInstanceLock("postgresql://bot@h/b?sslmode=x")
    with pytest.raises(BackendError, match=r"^postgresql://bot@h/b\?sslmode=x: .*sslmode"):
        await guard.claim()


async def test_a_database_that_does_not_exist_is_one_line(pg_server: PgServer) -> None:
    with pytest.raises(BackendError, match="does not exist"):
        await Store.open(pg_server.url("no_such_database"))


def test_urls_are_checked_and_shown_without_the_password() -> None:
    assert check_url("postgresql://u:p@db.example:5432/bot") is None
    assert check_url("postgres://u@/bot?host=/run/postgresql") is None
    assert "postgresql://" in (check_url("mysql://u@h/bot") or "")
    assert "port" in (check_url("postgresql://u@h:x/bot") or "")
    assert "not a valid URL" in (check_url("postgresql://u@[::1/bot") or "")
    assert check_url("postgresql:///bot") is None  # the local socket, as libpq has it
    assert redact("postgresql://u:p4ss@h/bot") == "postgresql://u:***@h/bot"
    assert redact("postgresql://u@h/bot") == "postgresql://u@h/bot"
    assert redact("postgresql://u@h/bot?sslmode=require&password=pw") == (
        "postgresql://u@h/bot?sslmode=require&password=***"
    )


def test_placeholders_are_numbered_outside_quotes() -> None:
    assert placeholders("SELECT ? WHERE a = '?' AND b = ? AND c = 'it''s ?'") == (
        "SELECT $1 WHERE a = '?' AND b = $2 AND c = 'it''s ?'"
    )


def test_server_errors_become_the_stores() -> None:
    cases = [
        (asyncpg.exceptions.UniqueViolationError("dup"), RefusedError),
        (asyncpg.exceptions.CheckViolationError("check"), RefusedError),
        (asyncpg.exceptions.LockNotAvailableError("lock timeout"), TransientError),
        (asyncpg.exceptions.DeadlockDetectedError("deadlock"), TransientError),
        (asyncpg.exceptions.DiskFullError("full"), FullError),
        (asyncpg.exceptions.ConfigurationLimitExceededError("temp_file_limit"), FullError),
        (asyncpg.exceptions.TooManyConnectionsError("many"), TransientError),
        (asyncpg.exceptions.AdminShutdownError("bye"), TransientError),
        (asyncpg.exceptions.CannotConnectNowError("starting up"), TransientError),
        (asyncpg.exceptions.NumericValueOutOfRangeError("big"), RefusedError),
        (asyncpg.exceptions.DataCorruptedError("page"), CorruptDatabaseError),
        (asyncpg.exceptions.ConnectionDoesNotExistError("gone"), TransientError),
        (asyncpg.exceptions.InterfaceError("closed"), TransientError),
        (asyncpg.exceptions.InternalClientError("state"), TransientError),
        (ConnectionRefusedError("refused"), TransientError),
        (TimeoutError(), TransientError),
    ]
    for exc, kind in cases:
        assert type(translate(exc)) is kind, exc
    assert translate(ValueError("not a database error")) is None
