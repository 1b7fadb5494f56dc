"""`python bot.py migrate --from sqlite:PATH --to postgresql://...`: a SQLite file with
matches, moves, ratings and memory copied into the test PostgreSQL server, counts and
checksums equal; a second run, or a target that is not empty, refused in one line."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

from db import Finish, MemoryWrite, NewMove, Rating, Store
from db.copy import TABLES, _canonical, _Sum
from db.errors import RefusedError
from db.migrations import LATEST_VERSION, MIGRATIONS, apply_migrations
from tests.machine import scaled
from tests.pg import PgServer

ROOT = Path(__file__).resolve().parents[2]


def migrate(source: str, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bot.py"), "migrate", "--from", source, "--to", target],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        env={**os.environ, "BOARDBOT_FAULT": ""},
    )


def one_line(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    return lines[0]


async def _fill(path: Path) -> None:
    """A database as a season of play leaves it: finished and live matches with their moves,
    ratings and their history, a challenge, an analysis, the outbox, learned memory, a
    person's preference and a server's settings."""
    async with Store.open(path) as s:
        alice = await s.players.get_or_create_user(111, "alice")
        bob = await s.players.get_or_create_user(222, "bob")
        bot = await s.players.get_or_create_agent("connect4:medium", "Medium bot")
        for i in range(3):
            m = await s.matches.create("connect4", "pvp", alice.id, bob.id, rated=True, guild_id=7)
            for ply, move in enumerate("4453"):
                await s.matches.append_move(m.id, ply, move, (alice, bob)[ply % 2].id, think_ms=ply)
            ratings = [
                Rating(alice.id, "connect4", 26.0 + i, 8.0 - i / 3, i + 1, i + 1, 0, 0),
                Rating(bob.id, "connect4", 24.0 - i, 8.0 - i / 3, i + 1, 0, 0, i + 1),
            ]
            await s.matches.commit_step(
                m.id,
                4,
                [NewMove("3", alice.id, 12, None)],
                finish=Finish("finished", "0", "connect", ratings),
                outbox=[("learn", {"match": m.id})],
            )
        live = await s.matches.create("othello", "pve", bot.id, alice.id, options={"level": 3})
        await s.matches.append_move(live.id, 0, "f5", bot.id)
        challenge = await s.challenges.add("connect4", alice.id, bob.id, 1e12)
        await s.challenges.close(challenge.id, "declined")
        await s.analyses.put(1, 1, {"moves": [{"ply": 0, "verdict": "best"}]})
        await s.matches.set_aside(live.id, "test")
        items: list[tuple[bytes | str, bytes]] = [
            (i.to_bytes(4, "little"), hashlib.sha256(bytes([i % 256])).digest())
            for i in range(3000)
        ]
        await s.memory.put("qlearn", "c4", items, games_trained_delta=3, meta={"eps": 0.1})
        await s.memory.apply([MemoryWrite("mcts", "oth", {b"k": b"\x00\xff"}, 2, "wins")])
        await s.prefs.set_board(alice.id, "image")
        await s.settings.change(7, alice.id, {"turn_seconds": 90, "games": ["othello"]})


def _sqlite_counts(path: Path) -> dict[str, int]:
    raw = sqlite3.connect(path)
    counts = {t: raw.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    raw.close()
    return counts


async def _pg_counts(url: str) -> dict[str, int]:
    conn = await asyncpg.connect(url)
    counts = {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}
    await conn.close()
    return counts


async def test_a_sqlite_database_is_copied_whole_and_verified(
    tmp_path: Path, pg_server: PgServer
) -> None:
    path = tmp_path / "bot.db"
    await _fill(path)
    url = await pg_server.fresh_database()
    proc = migrate(f"sqlite:{path}", url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = _sqlite_counts(path)
    assert counts["moves"] == 16 and counts["agent_memory"] == 3001 and counts["outbox"] == 3
    assert await _pg_counts(url) == counts
    for table in TABLES:  # one line per table: its count and checksum, equal on both sides
        assert f"{table}: {counts[table]} rows, checksum " in proc.stdout
    assert f"copied {sum(counts.values())} rows" in proc.stdout
    assert "every table's count and checksum are equal" in proc.stdout

    # The copy is the same data as the store reads it, and the bot carries on from it.
    async with Store.open(path) as lite, Store.open(url) as pg:
        alice = await lite.players.find_user(111)
        assert alice is not None and await pg.players.find_user(111) == alice
        assert await pg.matches.history(alice.id) == await lite.matches.history(alice.id)
        assert await pg.ratings.leaderboard("connect4") == await lite.ratings.leaderboard(
            "connect4"
        )
        assert await pg.ratings.history(alice.id) == await lite.ratings.history(alice.id)
        assert await pg.matches.moves(1) == await lite.matches.moves(1)
        assert await pg.matches.live() == await lite.matches.live() == []  # set aside
        assert await pg.matches.set_aside_reasons() == await lite.matches.set_aside_reasons()
        assert await pg.outbox.pending() == await lite.outbox.pending()
        assert await pg.analyses.get(1, 1) == await lite.analyses.get(1, 1)
        assert await pg.memory.get("qlearn", "c4") == await lite.memory.get("qlearn", "c4")
        assert await pg.memory.infos() == await lite.memory.infos()
        assert await pg.challenges.last_between(1, 2) == await lite.challenges.last_between(1, 2)
        assert await pg.prefs.board_styles([1, 2]) == await lite.prefs.board_styles([1, 2])
        assert await pg.prefs.board_styles([1, 2]) == {1: "image"}
        assert await pg.settings.get(7) == await lite.settings.get(7)
        assert await pg.settings.history(7) == await lite.settings.history(7)
        carol = await pg.players.get_or_create_user(333, "carol")  # new ids follow the copied ones
        assert carol.id == 4
        m = await pg.matches.create("connect4", "pvp", carol.id, alice.id)
        assert m.id == 5
        await pg.settings.change(7, carol.id, {"turn_seconds": None})  # the log's ids go on
        assert [c.id for c in await pg.settings.history(7)] == [2, 1]
        with pytest.raises(RefusedError, match=r"matches\.ply"):  # trigger back on
            async with pg.connection.write("test") as conn:
                await conn.execute(
                    "INSERT INTO moves (match_id, ply, move, player_id, created_at)"
                    " VALUES (?, 3, 'a', ?, 0)",
                    (m.id, carol.id),
                )

    # A second run finds the target full: one line, nothing changed.
    line = one_line(migrate(f"sqlite:{path}", url), 1, "is not empty", "players: 4")
    assert "new, empty database" in line
    assert (await _pg_counts(url))["players"] == 4


async def test_a_target_the_bot_already_uses_is_refused(
    tmp_path: Path, pg_server: PgServer
) -> None:
    path = tmp_path / "bot.db"
    await _fill(path)
    url = await pg_server.fresh_database()
    async with Store.open(url) as pg:
        await pg.players.get_or_create_local("someone")
    one_line(migrate(f"sqlite:{path}", url), 1, "is not empty", "players: 1")
    one_line(migrate(f"sqlite:{tmp_path / 'none.db'}", url), 1, "no SQLite database at")
    assert not (tmp_path / "none.db").exists()
    one_line(migrate(str(path), url), 2, "expected sqlite:PATH")
    newer = tmp_path / "newer.db"  # a table from a version of the bot the copy does not know
    await (await Store.open(newer)).close()
    raw = sqlite3.connect(newer)
    raw.execute("CREATE TABLE leagues (id INTEGER PRIMARY KEY)")
    raw.close()
    one_line(migrate(f"sqlite:{newer}", await pg_server.fresh_database()), 1, "leagues")
    one_line(migrate(f"sqlite:{path}", "mysql://x/y"), 2, "postgresql://")


def test_the_checksum_sees_values_not_their_driver_types() -> None:
    kinds = ["bigint", "double precision", "text", "bytea"]
    a, b, c = _Sum(kinds), _Sum(kinds), _Sum(kinds)
    a.add((1, 2, "x", b"\x00"))
    a.add((2, 2.5, None, b""))
    b.add((2, 2.5, None, b""))  # another order, and 2.0 for SQLite's 2 in a REAL column
    b.add((1, 2.0, "x", b"\x00"))
    c.add((1, 2, "x", b"\x01"))  # one byte differs
    c.add((2, 2.5, None, b""))
    assert (a.rows, a.hex) == (b.rows, b.hex) and a.hex != c.hex
    assert _canonical(None, "text") != _canonical("", "text") != _canonical(b"", "bytea")


def _version(path: Path) -> int:
    raw = sqlite3.connect(path)
    (version,) = raw.execute("PRAGMA user_version").fetchone()
    raw.close()
    return int(version)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_an_older_source_is_copied_and_left_as_it_was(
    tmp_path: Path, pg_server: PgServer
) -> None:
    """An older bot can still open its file: the copy is brought up to date in a snapshot."""
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        await apply_migrations(conn, str(path), MIGRATIONS[:2])
        await conn.execute(
            "INSERT INTO players (kind, local_name, display_name, created_at, updated_at)"
            " VALUES ('local', 'ann', 'ann', 0, 0)"
        )
    assert _version(path) == 2 < LATEST_VERSION
    before = _digest(path)
    url = await pg_server.fresh_database()
    proc = migrate(f"sqlite:{path}", url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "players: 1 rows" in proc.stdout
    assert _version(path) == 2 and _digest(path) == before  # not a byte changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db", "old.db.lock"]
    assert (await _pg_counts(url))["players"] == 1
    future = tmp_path / "future.db"  # from a newer bot: refused, named as given
    raw = sqlite3.connect(future)
    raw.execute("PRAGMA user_version = 999")
    raw.close()
    line = one_line(migrate(f"sqlite:{future}", url), 1, str(future), "schema version 999")
    assert "snapshot" not in line and _version(future) == 999


async def test_a_value_postgresql_cannot_take_is_one_line_naming_table_row_and_column(
    tmp_path: Path, pg_server: PgServer
) -> None:
    path = tmp_path / "bad.db"
    await _fill(path)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE matches SET guild_id = 'seven' WHERE id = 2")  # text in an INTEGER
    raw.commit()
    raw.close()
    url = await pg_server.fresh_database()
    line = one_line(migrate(f"sqlite:{path}", url), 2, "matches", "id=2", "guild_id", "'seven'")
    assert "whole number" in line
    assert await _pg_counts(url) == dict.fromkeys(TABLES, 0)  # nothing kept

    raw = sqlite3.connect(path)
    raw.execute("UPDATE matches SET guild_id = 7 WHERE id = 2")
    raw.execute("UPDATE players SET display_name = 'al' || char(0) || 'ice' WHERE id = 1")
    raw.commit()
    raw.close()
    line = one_line(migrate(f"sqlite:{path}", url), 2, "players", "id=1", "display_name")
    assert "NUL" in line and "0x00" not in line
    assert await _pg_counts(url) == dict.fromkeys(TABLES, 0)


async def test_a_row_postgresql_refuses_is_named_too(tmp_path: Path, pg_server: PgServer) -> None:
    """Past the values' own checks (here a constraint SQLite was not asked to keep: the rating
    of a player who does not exist, written with foreign keys off) the row is still named."""
    path = tmp_path / "orphan.db"
    await _fill(path)
    raw = sqlite3.connect(path)  # foreign keys are off unless a connection turns them on
    raw.execute("INSERT INTO ratings VALUES (99, 'othello', 25, 8, 0, 0, 0, 0, 0)")
    raw.commit()
    raw.close()
    url = await pg_server.fresh_database()
    line = one_line(migrate(f"sqlite:{path}", url), 2, "ratings", "player_id=99", "'othello'")
    assert "Traceback" not in line
    assert await _pg_counts(url) == dict.fromkeys(TABLES, 0)
