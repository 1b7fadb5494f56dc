"""A real restart: the bot process stops mid-match and a new process continues the same match
(on each backend: a SQLite file, a PostgreSQL database)."""

from __future__ import annotations

from pathlib import Path

from db.store import Store
from tests.botrun import run_bot


def console(db: str, script: str, cwd: Path) -> str:
    if not db.startswith("postgresql://"):
        Path(db).parent.mkdir(parents=True, exist_ok=True)  # bot.py makes only its own folder
    proc = run_bot(db, script, cwd)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


async def test_a_match_continues_in_a_new_process(tmp_path: Path, store_target: str) -> None:
    db = store_target
    first = console(db, "/play game:connect4 level:medium\n4\n/quit\n", tmp_path)
    assert "Bot (medium) 🟡 plays" in first
    # Every column is legal after two moves; the new process takes the first line it gets.
    second = console(db, "1\n/quit\n", tmp_path)
    assert "A live match from an earlier session: #1" in second
    assert "you 🔴 plays 1" in second
    store = await Store.open(db)
    try:
        [match] = await store.matches.live()
        moves = [m.move for m in await store.matches.moves(match.id)]
        assert moves[0] == "4" and moves[2] == "1" and len(moves) == 4  # the bot replied again
    finally:
        await store.close()
