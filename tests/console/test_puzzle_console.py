"""/puzzle in the console: the next puzzle, answered by typing the move (a bare move answers
the puzzle waiting, then goes to the match again), the daily puzzle, the stats; in-process
on a script, and `python bot.py` in a pseudo-terminal."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.puzzling import HOW, USAGE
from db.store import Store
from engine.puzzles.pool import Puzzle, load_pool
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from lobby.puzzle import daily_of, day_of, position
from tests.botrun import Terminals
from tests.clock import Clock
from tests.console.test_console import replies, run
from tests.vt import Screen, pump, wait_eof

WAIT = 60  # seconds: a limit for a console that never answers, not a speed to meet
KEY = re.compile(r"^Puzzle ((?:c4|oth)-[0-9a-f]+) · ", re.M)


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "t.db")
    lobby = Lobby(store, pool, LobbyConfig(seed=7), clock=clock)
    try:
        yield lobby
    finally:
        await lobby.close()
        await store.close()


def puzzle_of(text: str) -> Puzzle:
    keys = KEY.findall(text)
    assert keys, text
    return next(p for g in ("connect4", "othello") for p in load_pool(g) if p.id == keys[-1])


def wrong(p: Puzzle) -> str:
    state, _ = position(p.game, p.moves)
    return next(t for m in state.legal_moves() if (t := state.move_to_str(m)) != p.answer)


async def test_a_puzzle_answered_by_typing_the_move(lobby: Lobby, clock: Clock) -> None:
    text = await run(lobby, "/puzzle\n", "ann")
    p = puzzle_of(text)
    said = replies(text)["/puzzle"]
    assert said[0] == "Connect Four puzzle" and any("to play and win in" in s for s in said)
    assert f"Puzzle {p.id} · Answer by typing your move; /puzzle gives the next puzzle." in said
    d = daily_of(load_pool("connect4"), "connect4", day_of(clock()))
    assert d is not None
    text = await run(lobby, f"/puzzle daily\n{d.answer}\n{d.answer}\n/puzzle stats\n", "ann")
    assert puzzle_of(text) == d
    said = replies(text)
    assert said[d.answer][0] == f"✅ Column {d.answer} is right."
    assert said[d.answer][1].startswith(f"The solver's line: {' '.join(d.line)}")
    assert said[d.answer][2].startswith("Your puzzle rating: ")
    assert said[d.answer][2].endswith("streak 1 · daily streak 1")
    # Answered: the next bare move goes to a match again (ann has none).
    assert said[d.answer][3].startswith("error: ") and len(said[d.answer]) == 4
    assert said["/puzzle stats"][0] == "Puzzles of ann"
    assert "1 of 1 solved · streak 1 (best 1) · daily streak 1" in said["/puzzle stats"][1]


async def test_wrong_answers_the_daily_othello_and_refusals(lobby: Lobby) -> None:
    text = await run(lobby, "/puzzle daily othello\n", "ann")
    p = puzzle_of(text)
    assert replies(text)["/puzzle daily othello"][0].startswith("Daily Othello puzzle, ")
    assert "Legal moves: " in text
    text = await run(
        lobby,
        f"/puzzle daily othello\nz9\n{wrong(p)}\n/puzzle chess\n/puzzle stats user:bob\n",
        "ann",
    )
    said = replies(text)
    assert said["z9"][0].startswith("error: ")  # not a move: the puzzle still waits
    assert said[wrong(p)][0] == f"❌ Square {wrong(p)} is not it: the answer was square {p.answer}."
    assert "daily streak 0" in said[wrong(p)][-1]
    assert said["/puzzle chess"] == ["error: unknown game 'chess': choose one of connect4, othello"]
    assert said["/puzzle stats user:bob"][:2] == [
        "Puzzles of bob",
        "No puzzles answered yet.",
    ]


@pytest.mark.slow
def test_a_puzzle_in_a_terminal(terminals: Terminals) -> None:
    term = terminals.spawn(timeout=WAIT)
    try:
        screen = Screen(50, 120)
        term.logfile_read = screen
        pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
        term.send("/puzzle othello\r")
        pump(term, screen, lambda: bool(KEY.search(screen.text())), WAIT)
        p = puzzle_of(screen.text())
        pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
        term.send(f"{p.answer}\r")
        pump(term, screen, lambda: f"Square {p.answer} is right." in screen.text(), WAIT)
        pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
        term.send("/quit\r")
        wait_eof(term, WAIT)
    finally:
        term.close(force=True)
    assert term.exitstatus == 0 and "Traceback" not in screen.text()
    assert "error" not in screen.text()


async def test_the_ways_of_asking(lobby: Lobby, clock: Clock) -> None:
    d = daily_of(load_pool("othello"), "othello", day_of(clock()))
    assert d is not None
    text = await run(
        lobby,
        "/puzzle daily game:othello\n/puzzle game:othello\n/puzzle othello\n/puzzle stats ann\n"
        "/puzzle daily user:bob\n/puzzle weekly othello\n/puzzle nosuch:1\n",
        "ann",
    )
    said = replies(text)
    assert f"Puzzle {d.id} · {HOW}" in said["/puzzle daily game:othello"]
    for line in ("/puzzle game:othello", "/puzzle othello"):  # (it may be the daily one)
        assert said[line][0].endswith(("Othello puzzle", f"Othello puzzle, {day_of(clock())}"))
    assert said["/puzzle stats ann"][:2] == ["Puzzles of ann", "No puzzles answered yet."]
    assert said["/puzzle daily user:bob"] == [
        f"error: /puzzle: user: is for /puzzle stats; usage: {USAGE}"
    ]
    assert said["/puzzle weekly othello"] == [
        f"error: /puzzle: 'weekly' is not daily or stats; usage: {USAGE}"
    ]
    assert said["/puzzle nosuch:1"][0].startswith("error: /puzzle has no option 'nosuch'")
