"""Tests for db.Store, each against both backends: a real SQLite file (tmp_path) and a real
PostgreSQL database (a fresh one per test on the session's server, tests/pg.py)."""

from __future__ import annotations

import asyncio
import io
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import aiosqlite
import numpy as np
import pytest

from db import (
    CorruptRowError,
    Finish,
    Match,
    MatchNotFoundError,
    MatchNotLiveError,
    MemoryWrite,
    MigrationError,
    Player,
    PlayerNotFoundError,
    Rating,
    RatingFn,
    SchemaTooNewError,
    StaleMoveError,
    StaleRatingError,
    Store,
    StoreClosedError,
)
from db.errors import RefusedError
from db.migrations import LATEST_VERSION, MIGRATIONS, apply_migrations, split_statements
from db.models import MatchKind, MatchStatus, Result
from db.sqlite import SqliteBackend
from tests.machine import scaled
from tests.pg import PgServer

MU, SIGMA = 25.0, 25.0 / 3


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """For the SQLite-only tests."""
    return tmp_path / "nested" / "dir" / "bot.db"  # parent dirs do not exist yet


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


def _postgres(target: str) -> bool:
    return target.startswith("postgresql://")


async def _set_schema_version(target: str, version: int) -> None:
    """Write a schema version behind the store's back (as a newer bot would)."""
    if _postgres(target):
        import asyncpg

        conn = await asyncpg.connect(target)
        await conn.execute("UPDATE boardbot_schema SET version = $1", version)
        await conn.close()
    else:
        with sqlite3.connect(target) as raw:
            raw.execute(f"PRAGMA user_version = {version}")
        raw.close()


async def _people(store: Store) -> tuple[Player, Player, Player]:
    alice = await store.get_or_create_user(111, "alice")
    bob = await store.get_or_create_user(222, "bob")
    bot = await store.get_or_create_agent("connect4:medium", "Medium bot")
    return alice, bob, bot


async def _finish(
    store: Store,
    match_id: int,
    status: MatchStatus,
    result: Result | None,
    termination: str,
    ratings: list[Rating] | RatingFn | None = None,
    *,
    expected_ply: int | None = None,
) -> Match:
    """End a match as the lobby does: a step with only a finish."""
    finish = Finish(status, result, termination, ratings)
    return await store.commit_step(match_id, expected_ply, (), finish=finish)


async def _rating(store: Store, player_id: int, game: str) -> Rating | None:
    return {s.game: s.rating for s in await store.player_stats(player_id)}.get(game)


async def _pragmas(store: Store) -> dict[str, object]:
    backend = store.backend
    assert isinstance(backend, SqliteBackend)
    conn = backend.connection  # low-level check of the store's own connection
    out: dict[str, object] = {}
    for pragma in ("user_version", "journal_mode", "foreign_keys", "synchronous", "busy_timeout"):
        rows = list(await conn.execute_fetchall(f"PRAGMA {pragma}"))
        out[pragma] = rows[0][0]
    return out


def _bump(old: Rating | None, pid: int, game: str, mu: float, sigma: float, outcome: str) -> Rating:
    games, wins, draws, losses = (
        (0, 0, 0, 0)
        if old is None
        else (
            old.games,
            old.wins,
            old.draws,
            old.losses,
        )
    )
    return Rating(
        pid,
        game,
        mu,
        sigma,
        games + 1,
        wins + (outcome == "win"),
        draws + (outcome == "draw"),
        losses + (outcome == "loss"),
    )


async def _play_rated(
    store: Store,
    p0: Player,
    p1: Player,
    result: Result,
    new: Mapping[int, tuple[float, float]],
    *,
    game: str = "connect4",
    guild_id: int | None = None,
) -> Match:
    """Create, play one move, and finish a rated match, setting the given (mu, sigma)."""
    kind: MatchKind = "pvp" if p0.is_human and p1.is_human else "pve"
    m = await store.create_match(game, kind, p0.id, p1.id, rated=True, guild_id=guild_id)
    await store.append_move(m.id, 0, "d", p0.id)

    def rate(match: Match, current: Mapping[int, Rating | None]) -> list[Rating]:
        out = []
        for pid, (mu, sigma) in new.items():
            outcome = match.outcome_for(pid)
            assert outcome is not None
            out.append(_bump(current[pid], pid, game, mu, sigma, outcome))
        return out

    return await _finish(store, m.id, "finished", result, "connect", rate)


# ---------------------------------------------------------------- schema & connection


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
        await s.get_or_create_user(1, "x")
    async with Store.open(store_target) as s:  # migrations must not re-run
        assert await s.backend.schema_version() == LATEST_VERSION
        assert (await s.find_user(1)) is not None
    async with await Store.open(store_target) as s:  # awaited form is a context manager too
        assert not s.closed
    assert s.closed
    store = await Store.open(store_target)
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await store.get_player(1)


async def test_newer_schema_version_is_refused(store_target: str) -> None:
    async with Store.open(store_target):
        pass
    await _set_schema_version(store_target, LATEST_VERSION + 5)
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
        async with store._write("test") as conn:
            await conn.execute(
                "INSERT INTO ratings (player_id, game, mu, sigma, updated_at)"
                " VALUES (999, 'connect4', 25, 8, 0)"
            )
    alice, bob, _ = await _people(store)
    with pytest.raises(RefusedError, match=r"(?i)unique"):
        async with store._write("test") as conn:
            await conn.execute(
                "INSERT INTO players (kind, discord_id, display_name, created_at, updated_at)"
                " VALUES ('user', ?, 'again', 0, 0)",
                (alice.discord_id,),
            )
    m = await store.create_match("connect4", "pvp", alice.id, bob.id)
    with pytest.raises(RefusedError, match=r"matches\.ply"):
        async with store._write("test") as conn:
            await conn.execute(
                "INSERT INTO moves (match_id, ply, move, player_id, created_at)"
                " VALUES (?, 5, 'a', ?, 0)",
                (m.id, alice.id),
            )
    with pytest.raises(PlayerNotFoundError):
        await store.create_match("connect4", "pvp", alice.id, 999)


# ---------------------------------------------------------------- players


async def test_players_get_or_create(store: Store) -> None:
    a1 = await store.get_or_create_user(123456789012345678, "alice")
    a2 = await store.get_or_create_user(123456789012345678, "alice")
    assert a1 == a2 and a1.kind == "user" and a1.discord_id == 123456789012345678
    renamed = await store.get_or_create_user(123456789012345678, "Alice W")
    assert renamed.id == a1.id and renamed.display_name == "Alice W"
    agent = await store.get_or_create_agent("bob", "Bob the bot")
    local = await store.get_or_create_local("bob")
    assert len({a1.id, agent.id, local.id}) == 3
    assert (agent.kind, local.kind, local.display_name) == ("agent", "local", "bob")
    assert (await store.get_or_create_local("bob")).id == local.id
    assert await store.get_players([a1.id, local.id, 999]) == {a1.id: renamed, local.id: local}


# ---------------------------------------------------------------- match lifecycle


async def test_match_lifecycle(store: Store) -> None:
    alice, _, bot = await _people(store)
    m = await store.create_match(
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
        await store.create_match("connect4", "pvp", alice.id, bot.id)

    m = await store.set_message(m.id, 1, 2, 3)
    assert (m.guild_id, m.channel_id, m.message_id) == (1, 2, 3)
    assert await store.live_matches(alice.id) == [m]
    assert [x.id for x in await store.live_matches()] == [m.id]

    assert await store.append_move(m.id, 0, "d", alice.id, think_ms=1500) == 1
    assert await store.append_move(m.id, 1, "c", bot.id, turn_deadline=123.0, think_ms=20) == 2
    with pytest.raises(StaleMoveError) as stale:
        await store.append_move(m.id, 1, "e", alice.id)
    assert stale.value.actual_ply == 2
    with pytest.raises(ValueError, match="not playing"):
        await store.append_move(m.id, 2, "e", 999)
    got = await store.get_match(m.id)
    assert got is not None and got.ply == 2 and got.turn_deadline == 123.0
    mv = await store.moves(m.id)
    assert [(x.ply, x.move, x.player_id, x.think_ms) for x in mv] == [
        (0, "d", alice.id, 1500),
        (1, "c", bot.id, 20),
    ]

    done = await _finish(
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
    r = await _rating(store, alice.id, "connect4")
    assert r is not None and (r.mu, r.games, r.wins) == (27.0, 1, 1)

    with pytest.raises(MatchNotLiveError):
        await store.append_move(m.id, 2, "e", alice.id)
    with pytest.raises(MatchNotLiveError):
        await _finish(store, m.id, "abandoned", None, "abandon")
    with pytest.raises(MatchNotFoundError):
        await _finish(store, 424242, "abandoned", None, "abandon")
    assert await store.live_matches() == []
    assert await store.live_matches(alice.id) == []


async def test_concurrent_append_move_applies_exactly_once(store: Store) -> None:
    alice, bob, _ = await _people(store)
    m = await store.create_match("othello", "pvp", alice.id, bob.id)
    results = await asyncio.gather(
        *(store.append_move(m.id, 0, f"m{i}", alice.id) for i in range(20)),
        return_exceptions=True,
    )
    assert results.count(1) == 1
    assert all(isinstance(r, StaleMoveError) for r in results if r != 1)
    assert len(await store.moves(m.id)) == 1
    got = await store.get_match(m.id)
    assert got is not None and got.ply == 1


async def test_cancelled_write_leaves_no_open_transaction(store: Store) -> None:
    alice, bob, _ = await _people(store)
    m = await store.create_match("connect4", "pvp", alice.id, bob.id)
    tasks = [asyncio.create_task(store.append_move(m.id, i, "a", alice.id)) for i in range(5)]
    await asyncio.sleep(0)
    for t in tasks[1:]:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    # The store is usable afterwards and the match is consistent with its moves.
    got = await store.get_match(m.id)
    assert got is not None and got.ply == len(await store.moves(m.id))
    assert await store.append_move(m.id, got.ply, "b", bob.id) == got.ply + 1


async def test_finish_match_is_atomic_with_ratings(store: Store) -> None:
    alice, bob, _ = await _people(store)
    m = await store.create_match("connect4", "pvp", alice.id, bob.id, rated=True)
    bad = [
        Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
        Rating(bob.id, "connect4", 23.0, -1.0, 1, 0, 0, 1),  # sigma <= 0: CHECK fails
    ]
    with pytest.raises(RefusedError):
        await _finish(store, m.id, "finished", "0", "connect", bad)
    # Neither the match outcome nor the first (valid) rating was kept.
    got = await store.get_match(m.id)
    assert got is not None and got.status == "live" and got.result is None
    assert await _rating(store, alice.id, "connect4") is None

    stale = [Rating(alice.id, "connect4", 27.0, 8.0, 5, 5, 0, 0)]
    with pytest.raises(StaleRatingError):
        await _finish(store, m.id, "finished", "0", "connect", stale)

    with pytest.raises(StaleMoveError):  # a time forfeit racing a move must not apply
        await _finish(store, m.id, "finished", "1", "time", None, expected_ply=3)

    good = [bad[0], Rating(bob.id, "connect4", 23.0, 8.0, 1, 0, 0, 1)]
    await _finish(store, m.id, "finished", "0", "connect", good, expected_ply=0)
    assert (await _rating(store, bob.id, "connect4")) is not None

    casual = await store.create_match("connect4", "pvp", alice.id, bob.id)
    with pytest.raises(ValueError, match="unrated"):
        await _finish(store, casual.id, "finished", "draw", "board_full", good)


# ---------------------------------------------------------------- leaderboard & stats


async def test_leaderboard_orders_by_ordinal_and_scopes_by_guild(store: Store) -> None:
    alice, bob, bot = await _people(store)
    carol = await store.get_or_create_user(333, "carol")
    # bob has the highest mu but is very uncertain: ordinal 35 - 12 = 23
    await _play_rated(
        store, alice, bob, "1", {alice.id: (30.0, 1.0), bob.id: (35.0, 4.0)}, guild_id=1
    )
    # carol: 25 - 1.5 = 23.5; bot: 20 - 3 = 17
    await _play_rated(
        store, carol, bot, "0", {carol.id: (25.0, 0.5), bot.id: (20.0, 1.0)}, guild_id=2
    )

    board = await store.leaderboard("connect4")
    assert [e.player.id for e in board] == [alice.id, carol.id, bob.id, bot.id]
    assert [e.rank for e in board] == [1, 2, 3, 4]
    assert board[0].rating.ordinal == pytest.approx(27.0)

    assert [e.player.id for e in await store.leaderboard("connect4", guild_id=1)] == [
        alice.id,
        bob.id,
    ]
    assert [e.player.id for e in await store.leaderboard("connect4", guild_id=2)] == [
        carol.id,
        bot.id,
    ]
    humans = await store.leaderboard("connect4", include_agents=False, limit=2)
    assert [e.player.id for e in humans] == [alice.id, carol.id]
    assert await store.leaderboard("othello") == []


async def test_history_and_stats(store: Store) -> None:
    alice, bob, bot = await _people(store)
    await _play_rated(store, alice, bob, "0", {alice.id: (26.0, 8.0), bob.id: (24.0, 8.0)})
    await _play_rated(store, bob, alice, "draw", {alice.id: (26.0, 7.0), bob.id: (24.0, 7.0)})
    oth = await store.create_match("othello", "pve", bot.id, alice.id)  # unrated
    await _finish(store, oth.id, "finished", "0", "no_moves")
    voided = await store.create_match("othello", "pvp", alice.id, bob.id)
    await _finish(store, voided.id, "abandoned", None, "stopped")
    await store.create_match("connect4", "pvp", alice.id, bob.id)  # still live: not history

    hist = await store.history(alice.id)
    assert [(h.opponent.display_name, h.seat, h.outcome) for h in hist] == [
        ("bob", 0, None),
        ("Medium bot", 1, "loss"),
        ("bob", 1, "draw"),
        ("bob", 0, "win"),
    ]
    assert len(await store.history(alice.id, limit=2)) == 2
    assert len(await store.history(alice.id, game="othello")) == 2

    stats = {s.game: s for s in await store.player_stats(alice.id)}
    c4, oth_stats = stats["connect4"], stats["othello"]
    assert (c4.played, c4.wins, c4.draws, c4.losses) == (2, 1, 1, 0)
    assert c4.rating is not None and (c4.rating.games, c4.rating.wins, c4.rating.draws) == (2, 1, 1)
    assert (oth_stats.played, oth_stats.losses, oth_stats.rating) == (1, 1, None)


async def test_expired_turns(store: Store) -> None:
    alice, bob, bot = await _people(store)
    m1 = await store.create_match("connect4", "pvp", alice.id, bob.id, turn_deadline=100.0)
    m2 = await store.create_match("connect4", "pve", alice.id, bot.id, turn_deadline=50.0)
    await store.create_match("connect4", "pve", alice.id, bot.id, turn_deadline=None)
    m4 = await store.create_match("othello", "pvp", bob.id, alice.id, turn_deadline=10.0)
    await _finish(store, m4.id, "finished", "1", "resign")
    assert await store.expired_turn_ids(now=101.0) == [m2.id, m1.id]
    assert await store.expired_turn_ids(now=60.0) == [m2.id]
    await store.set_turn_deadline(m2.id, 500.0)
    assert await store.expired_turn_ids(now=60.0) == []


# ---------------------------------------------------------------- memory


async def test_agent_memory_batch_roundtrip(store: Store) -> None:
    buf = io.BytesIO()
    arr = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    np.save(buf, arr)
    npy = buf.getvalue()
    items: list[tuple[bytes | str, bytes]] = [
        (i.to_bytes(8, "little"), bytes([i % 256]) * (i % 50 + 1)) for i in range(5000)
    ]
    items += [("weights", npy), (b"\x00\xff", b"")]

    t0 = time.perf_counter()
    n = await store.memory_put("qlearn", "c4-a", items, games_trained_delta=10, meta={"eps": 0.1})
    assert time.perf_counter() - t0 < scaled(1.0)
    assert n == 5002

    got = await store.memory_get("qlearn", "c4-a")
    assert len(got) == 5002
    for k, v in items:
        assert got[k.encode() if isinstance(k, str) else k] == v
    back = np.load(io.BytesIO(got[b"weights"]))
    assert back.dtype == arr.dtype and np.array_equal(back, arr)
    assert await store.memory_get_one("qlearn", "c4-a", "weights") == npy

    # Upsert overwrites, counters accumulate, meta is kept unless given.
    await store.memory_put("qlearn", "c4-a", [(b"\x00\xff", b"new")], games_trained_delta=5)
    assert await store.memory_get_one("qlearn", "c4-a", b"\x00\xff") == b"new"
    info = await store.memory_info("qlearn", "c4-a")
    assert info is not None and (info.rows, info.games_trained, info.meta) == (
        5002,
        15,
        {"eps": 0.1},
    )

    await store.memory_put("qlearn", "c4-b", [("k", b"v")])
    await store.memory_put("mcts", "oth", [("k", b"v")], replace=True)
    assert [(i.kind, i.name, i.rows) for i in await store.memory_list()] == [
        ("mcts", "oth", 1),
        ("qlearn", "c4-a", 5002),
        ("qlearn", "c4-b", 1),
    ]
    await store.memory_put("qlearn", "c4-b", [("k2", b"v2")], replace=True)
    assert await store.memory_get("qlearn", "c4-b") == {b"k2": b"v2"}

    with pytest.raises(TypeError, match="bytes"):
        await store.memory_put("qlearn", "c4-b", [("k", "not bytes")])  # type: ignore[list-item]


# ---------------------------------------------------------------- durability & corruption


async def test_reopen_sees_everything(store_target: str) -> None:
    async with Store.open(store_target) as s:
        alice, _, bot = await _people(s)
        m = await s.create_match("connect4", "pve", alice.id, bot.id, rated=True, guild_id=7)
        await s.append_move(m.id, 0, "d", alice.id)
        live = await s.create_match("othello", "pve", bot.id, alice.id, options={"level": 3})
        await s.append_move(live.id, 0, "f5", bot.id)
        await _finish(
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
        await s.memory_put("q", "n", [(b"k", b"v")])

    async with Store.open(store_target) as s:
        assert [x.id for x in await s.live_matches()] == [live.id]
        restored = await s.get_match(live.id)
        assert restored is not None and restored.ply == 1 and restored.options == {"level": 3}
        assert [x.move for x in await s.moves(live.id)] == ["f5"]
        finished = await s.get_match(m.id)
        assert finished is not None and finished.result == "1"
        assert [e.player.id for e in await s.leaderboard("connect4", guild_id=7)] == [
            bot.id,
            alice.id,
        ]
        assert await s.memory_get("q", "n") == {b"k": b"v"}
        assert (await s.get_or_create_user(111, "alice")).id == alice.id


# SQLite only: PostgreSQL's column types and checks cannot be switched off to write such rows.
async def test_corrupt_rows_raise_naming_the_row(store_path: Path) -> None:
    async with Store.open(store_path) as s:
        alice, bob, _ = await _people(s)
        m = await s.create_match("connect4", "pvp", alice.id, bob.id)
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
            await s.get_match(m.id)
        # A listing sets the row aside instead (tests/test_trust.py): no rating shown.
        assert await s.player_stats(alice.id) == []  # no finished match, no readable rating


async def test_an_analysis_is_kept_once_per_match_by_version(store_target: str) -> None:
    store = await Store.open(store_target)
    alice, bob, _ = await _people(store)
    m = await store.create_match("connect4", "pvp", alice.id, bob.id)
    assert await store.get_analysis(m.id, 1) is None
    await store.put_analysis(m.id, 1, {"moves": [{"ply": 0, "verdict": "best"}]})
    assert await store.get_analysis(m.id, 1) == {"moves": [{"ply": 0, "verdict": "best"}]}
    assert await store.get_analysis(m.id, 2) is None  # a newer analyser recomputes
    await store.put_analysis(m.id, 2, {"moves": []})
    assert await store.get_analysis(m.id, 1) is None and await store.get_analysis(m.id, 2)
    with pytest.raises(ValueError):
        await store.put_analysis(m.id, 3, {"x": float("nan")})  # not JSON: nothing written
    await store.close()
    store = await Store.open(store_target)  # a restart keeps it
    assert await store.get_analysis(m.id, 2) == {"moves": []}
    await store.close()


async def test_each_rated_finish_adds_to_the_rating_history_in_its_transaction(
    store: Store,
) -> None:
    alice, bob, _ = await _people(store)
    assert await store.rating_history(alice.id) == []
    m = await store.create_match("connect4", "pvp", alice.id, bob.id, rated=True)
    bad = [
        Rating(alice.id, "connect4", 27.0, 8.0, 1, 1, 0, 0),
        Rating(bob.id, "connect4", 23.0, -1.0, 1, 0, 0, 1),  # rolls the whole finish back
    ]
    with pytest.raises(RefusedError):
        await _finish(store, m.id, "finished", "0", "connect", bad)
    assert await store.rating_history(alice.id) == []  # no history without its rating
    good = [bad[0], Rating(bob.id, "connect4", 23.0, 8.0, 1, 0, 0, 1)]
    await _finish(store, m.id, "finished", "0", "connect", good)
    m2 = await store.create_match("connect4", "pvp", alice.id, bob.id, rated=True)
    again = [
        Rating(alice.id, "connect4", 28.0, 7.0, 2, 2, 0, 0),
        Rating(bob.id, "connect4", 22.0, 7.0, 2, 0, 0, 2),
    ]
    await _finish(store, m2.id, "finished", "0", "connect", again)
    casual = await store.create_match("othello", "pvp", alice.id, bob.id)
    await _finish(store, casual.id, "finished", "draw", "no_moves")  # unrated: no history
    points = await store.rating_history(alice.id)
    assert [(p.game, p.match_id, p.games, p.mu) for p in points] == [
        ("connect4", m.id, 1, 27.0),
        ("connect4", m2.id, 2, 28.0),
    ]
    assert points[-1].ordinal == 28.0 - 21.0
    assert [p.games for p in await store.rating_history(alice.id, limit=1)] == [2]


# ---------------------------------------------------------------- what the dialects spell apart


async def test_hints_starters_counters_and_the_outbox_read_the_same_on_both(store: Store) -> None:
    """The SQL each backend writes its own way (JSON in a column, the larger of two values,
    ids given as a JSON array) gives the same answers."""
    alice, bob, bot = await _people(store)
    m = await store.create_match(
        "connect4", "pve", alice.id, bot.id, rated=True, options={"starter": {"ident": 111}}
    )
    await store.create_match(
        "connect4", "pve", bob.id, bot.id, options={"starter": {"ident": "111"}}
    )
    assert await store.count_live("pve", starter=111) == 1  # a number is not its text
    assert await store.count_live("pve", starter="111") == 1
    assert await store.count_live("pve", starter=222) == 0
    hinted = await store.use_hint(m.id)
    hinted = await store.use_hint(m.id)
    assert hinted.options == {"starter": {"ident": 111}, "hints": 2} and not hinted.rated

    await store.memory_apply([MemoryWrite("q", "n", {b"k": b"1"}, 3, "matches")])
    await store.memory_apply([MemoryWrite("q", "n", {b"k": b"2"}, 2, "matches")])
    await store.memory_apply([MemoryWrite("q", "n", {}, 4, "trained")])
    info = await store.memory_info("q", "n")
    assert info is not None and (info.games_trained, info.meta) == (9, {"matches": 5, "trained": 4})
    assert await store.memory_get("q", "n") == {b"k": b"2"}

    done = await store.commit_step(
        m.id, 0, (), finish=Finish("abandoned", None, "stopped"), outbox=[("a", {}), ("b", {})]
    )
    first, second = await store.outbox_pending()
    await store.outbox_failed(first.id, "once")
    await store.outbox_failed(second.id, "for good", final=True)
    [left] = await store.outbox_pending()
    assert (left.id, left.attempts, left.last_error, left.match_id) == (
        first.id,
        1,
        "once",
        done.id,
    )
    assert await store.memory_apply([], outbox_id=second.id)
    assert not await store.memory_apply([], outbox_id=second.id)  # once only
    assert await store.outbox_done(first.id) and not await store.outbox_done(first.id)
    assert await store.outbox_pending(max_attempts=100) == []
