"""`python bot.py` as a process under faults: a second process, a bad database, SIGTERM,
kill -9 in the middle of a commit (the BOARDBOT_FAULT hook) and a restart on the same file."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from db.instance import InstanceLock, PgInstanceLock
from engine.games.connect4 import Connect4State
from tests.botrun import BOT, ROOT, Terminals, bot_env, run_bot
from tests.machine import scaled
from tests.pg import PgServer
from tests.procs import children_of


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_second_process_on_the_same_database_refuses_to_start(tmp_path: Path) -> None:
    db = tmp_path / "one.db"
    with InstanceLock(db):  # as a running bot holds it
        proc = run_bot(db, "/quit\n", tmp_path)
    one_line_error(proc, "another bot process", str(os.getpid()), str(db))
    assert proc.stderr.count(str(db)) == 1  # the database named once
    proc = run_bot(db, "/quit\n", tmp_path)  # released: it starts
    assert proc.returncode == 0, proc.stderr


def test_a_corrupt_newer_or_unreachable_database_fails_with_one_line(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    one_line_error(run_bot(corrupt, "", tmp_path), "not a database")
    newer = tmp_path / "newer.db"
    con = sqlite3.connect(newer)
    con.execute("PRAGMA user_version = 999")
    con.close()
    one_line_error(run_bot(newer, "", tmp_path), "schema version 999")
    unreachable = Path("/proc/boardbot-cannot-be-here.db")  # a folder no file can be made in
    one_line_error(run_bot(unreachable, "", tmp_path), str(unreachable))


def test_sigterm_shuts_down_in_order_and_leaves_the_match_live(tmp_path: Path) -> None:
    db = tmp_path / "term.db"
    proc = subprocess.Popen(
        [sys.executable, str(BOT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=bot_env(db),
        cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("/botmatch game:othello first:easy second:easy delay:2\n")
    proc.stdin.flush()
    deadline = time.monotonic() + scaled(60)
    while time.monotonic() < deadline and "Move 2" not in proc.stdout.readline():
        pass
    workers = children_of(proc.pid)
    assert workers, "the engine worker runs"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert not [w for w in workers if Path(f"/proc/{w}").exists()]
    con = sqlite3.connect(db)
    [(status, ply)] = con.execute("SELECT status, ply FROM matches").fetchall()
    con.close()
    assert status == "live" and ply >= 1  # left for the next start, not stopped


def test_a_kill_in_the_middle_of_a_game_loses_nothing_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    # The process dies (as kill -9) right after the 3rd move commit: alice's 2nd move.
    first = run_bot(
        db, "/play game:connect4 level:easy\n4\n4\n4\n/quit\n", tmp_path,
        extra={"BOARDBOT_FAULT": "after:write:commit_step:3"},
    )  # fmt: skip
    assert first.returncode == 137
    assert "Traceback" not in first.stderr
    con = sqlite3.connect(db)
    [(match_id, ply, status)] = con.execute("SELECT id, ply, status FROM matches").fetchall()
    moves = [m for (m,) in con.execute("SELECT move FROM moves ORDER BY ply")]
    con.close()
    assert status == "live" and ply == len(moves) == 3
    # The restart replies for the agent (it is to move) and the game goes on.
    second = run_bot(db, "/board\n/quit\n", tmp_path)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    con = sqlite3.connect(db)
    moves = [m for (m,) in con.execute("SELECT move FROM moves ORDER BY ply")]
    (ply,) = con.execute("SELECT ply FROM matches WHERE id = ?", (match_id,)).fetchone()
    con.close()
    assert ply == len(moves) == 4
    Connect4State.from_moves("".join(moves))  # replays legally


def test_discord_out_of_reach_is_one_line_a_retry_and_a_clean_stop(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(BOT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=bot_env(tmp_path / "net.db", extra={"DISCORD_TOKEN": "not-a-token"}),
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + scaled(60)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen += line
        if "cannot reach Discord" in line or not line:
            break
    if "cannot reach Discord" in seen:  # no network here: it says so and tries again later
        assert "trying again in" in seen
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=scaled(30))
        assert proc.returncode == 0
    else:  # a network that reaches Discord: the token is refused, in one line
        rest, _ = proc.communicate(timeout=scaled(30))
        assert proc.returncode == 1 and "refused the token" in seen + rest
    assert "Traceback" not in seen + rest and "voice will NOT" not in seen + rest


def test_a_bad_setting_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    for var, value in (
        ("BOARDBOT_LOG_LEVEL", "LOUD"),
        ("BOARDBOT_TURN_SECONDS", "nan"),
        ("BOARDBOT_SYNC", "maybe"),
        ("BOARDBOT_OWNER_SPECS", "2"),
        ("BOARDBOT_DB", "/nonexistent/dir/x.db"),
    ):
        proc = run_bot(tmp_path / "cfg.db", "", tmp_path, extra={var: value})
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"config error: {var}="), lines
        assert "Traceback" not in proc.stdout
    assert not Path("/nonexistent").exists()
    assert list(tmp_path.iterdir()) == []  # nothing opened, nothing made


def test_settings_and_database_are_found_next_to_bot_py_from_anywhere(tmp_path: Path) -> None:
    """`python /path/to/bot.py` from another folder: the .env and a relative BOARDBOT_DB are
    both taken from bot.py's folder, and the start says which ones (in the log)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    # A project folder of its own (no repository writes): bot.py and boot/, which finds it.
    shutil.copy(ROOT / "bot.py", project)
    shutil.copytree(ROOT / "boot", project / "boot", ignore=shutil.ignore_patterns("__pycache__"))
    (project / ".env").write_text(
        'export BOARDBOT_DB="mine.db"  # next to bot.py\nexport BOARDBOT_WORKERS=1\n'
    )
    env = {
        k: v for k, v in bot_env(tmp_path / "unused.db").items() if not k.startswith("BOARDBOT_")
    }
    env.update(PYTHONPATH=str(ROOT), BOARDBOT_LOG_LEVEL="INFO", BOARDBOT_FAULT="")

    def start() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(project / "bot.py")],
            input="/quit\n",
            capture_output=True,
            text=True,
            timeout=scaled(120),
            env=env,
            cwd=elsewhere,
        )

    proc = start()
    assert proc.returncode == 0, proc.stderr
    assert (project / "mine.db").is_file() and list(elsewhere.iterdir()) == []
    assert f"settings: read {project / '.env'} (the environment overrides it)" in proc.stderr
    assert f"database: {project / 'mine.db'} (new, empty)" in proc.stderr
    proc = start()
    assert proc.returncode == 0, proc.stderr
    assert f"database: {project / 'mine.db'}\n" in proc.stderr  # the same one, not new


def test_in_a_terminal_the_console_shows_its_settings_and_database(
    tmp_path: Path, terminals: Terminals
) -> None:
    db = tmp_path / "term.db"  # the terminal's
    term = terminals.spawn(timeout=scaled(60), user="you", dimensions=None)
    term.expect("Board-game bot, local console")
    term.expect(r"settings: (read|no) \S*\.env")
    term.expect(f"database: {db} \\(new, empty\\)")
    term.expect(r"\w+>")  # the prompt (its trailing space is drawn as a cursor move)
    term.sendline("/quit")
    term.expect(pexpect.EOF)
    term.close()
    assert term.exitstatus == 0


def test_a_bad_database_url_is_one_line_without_the_password(tmp_path: Path) -> None:
    proc = run_bot(
        tmp_path / "x.db",
        "",
        tmp_path,
        extra={"BOARDBOT_DATABASE_URL": "postgresql://bot:pw@h:port/x"},
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("config error: BOARDBOT_DATABASE_URL=") and "port" in line
    assert "pw" not in line
    url = "postgresql://bot:secret@127.0.0.1:1/boardbot"  # nothing listens on port 1
    proc = run_bot(tmp_path / "x.db", "", tmp_path, extra={"BOARDBOT_DATABASE_URL": url})
    one_line_error(proc, "cannot use the database postgresql://bot:***@127.0.0.1:1/boardbot")
    assert "secret" not in proc.stderr


async def test_a_second_process_on_the_same_postgres_database_refuses_to_start(
    tmp_path: Path, pg_server: PgServer
) -> None:
    url = await pg_server.fresh_database()
    guard = PgInstanceLock(url)
    await guard.claim()  # as a running bot holds it
    try:
        proc = run_bot(tmp_path / "x.db", "/quit\n", tmp_path, extra={"BOARDBOT_DATABASE_URL": url})
    finally:
        guard.release()
    one_line_error(proc, "another bot process", f"boardbot pid {os.getpid()}")
    proc = run_bot(tmp_path / "x.db", "/quit\n", tmp_path, extra={"BOARDBOT_DATABASE_URL": url})
    assert proc.returncode == 0, proc.stderr  # released: it starts
