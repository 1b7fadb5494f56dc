"""The console's line editing in a real terminal: `python bot.py` in a pseudo-terminal (pexpect)
read through a small screen (tests/vt.py), and the console in this process on a pty.

Tab completion, the arrow keys, the history, a training job's one progress line, what every
way of leaving says, and the terminal's modes given back as they were.
"""

from __future__ import annotations

import asyncio
import os
import signal
import termios

import pexpect
import pytest

from console.run import run_console
from lobby.core import Lobby
from tests.botrun import Terminals
from tests.vt import Pty, Screen, pump, wait_eof

WAIT = 60  # seconds: a limit for a console that never answers, not a speed to meet


def spawn(terminals: Terminals) -> tuple[pexpect.spawn, Screen]:
    """The bot at its first prompt, read through a screen of the terminal's size."""
    term = terminals.spawn(timeout=WAIT)
    screen = Screen(50, 120)
    term.logfile_read = screen
    pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
    return term, screen


def typed(screen: Screen) -> str | None:
    """What the prompt's line shows after `tester> `; None while the cursor is elsewhere (the
    engine's start lines print above the prompt, which is redrawn after them)."""
    line = screen.cursor_line()
    if not line.startswith("tester>"):
        return None
    return line[len("tester> ") :]


@pytest.mark.slow
def test_tab_completion_history_and_cursor_keys(terminals: Terminals) -> None:
    term, screen = spawn(terminals)
    term.send("/pl\t")  # a command
    pump(term, screen, lambda: typed(screen) == "/play", WAIT)
    term.send("g\t")  # an option
    pump(term, screen, lambda: typed(screen) == "/play game:", WAIT)
    term.send("oth\t")  # a game
    pump(term, screen, lambda: typed(screen) == "/play game:othello", WAIT)
    term.send("opponent:greedy-f\t")  # an agent of that game
    pump(term, screen, lambda: typed(screen) == "/play game:othello opponent:greedy-first", WAIT)
    term.send("\r")
    pump(term, screen, lambda: "Legal moves:" in screen.text(), WAIT)
    pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
    term.send("/matces")  # a typo, mended with the arrow keys: left twice, insert h
    term.send("\x1b[D\x1b[Dh")
    pump(term, screen, lambda: typed(screen) == "/matches", WAIT)
    term.send("\r")
    pump(term, screen, lambda: "Live matches of tester" in screen.text(), WAIT)
    pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
    term.send("\x1b[A")  # up: the last line again
    pump(term, screen, lambda: typed(screen) == "/matches", WAIT)
    term.send("\x1b[A")  # and the one before
    pump(term, screen, lambda: typed(screen) == "/play game:othello opponent:greedy-first", WAIT)
    term.send("\x15/quit\r")  # Ctrl-U clears the line
    wait_eof(term, WAIT)
    term.close()
    assert term.exitstatus == 0 and "Traceback" not in screen.text()
    assert "error" not in screen.text()


@pytest.mark.slow
def test_training_shows_one_progress_line_and_stops(terminals: Terminals) -> None:
    term, screen = spawn(terminals)
    term.send("/train game:connect4 agent:trainer games:1000000\r")

    def progress() -> list[str]:
        return [line for line in screen.history() if line.startswith("Training trainer (")]

    pump(term, screen, lambda: len(progress()) == 1, WAIT)
    states = set()
    while len(states) < 3:  # the line is redrawn as the games go by...
        pump(term, screen, lambda: progress()[-1] not in states, WAIT)
        states.add(progress()[-1])
        assert len(progress()) == 1, screen.text()  # ...in place: one line
    assert all(len(line) < 120 for line in progress())  # cut to the terminal's width
    term.send("/train stop\r")
    pump(term, screen, lambda: "what it learned is kept" in screen.text(), WAIT)
    [said] = [line for line in screen.history() if "what it learned is kept" in line]
    assert said.startswith("Training trainer stopped after ")
    assert said.endswith(" of 1000000 games; what it learned is kept.")
    assert len(progress()) == 2 and "stopped (cancelled)" in progress()[-1]
    term.send("/quit\r")
    wait_eof(term, WAIT)
    term.close()
    assert term.exitstatus == 0 and screen.history()[-1] == "No match stays live."


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-d", "sigterm", "quit"])
def test_every_way_out_says_what_stays_live(terminals: Terminals, how: str) -> None:
    term, screen = spawn(terminals)
    term.send("/challenge opponent:bob game:connect4\r")
    pump(term, screen, lambda: "Move 1: 🔴 tester to play" in screen.text(), WAIT)
    pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
    term.send("4")  # typed, not sent
    pump(term, screen, lambda: typed(screen) == "4", WAIT)
    if how == "ctrl-c":
        term.sendcontrol("c")
    elif how == "ctrl-d":
        term.send("\x15\x04")  # Ctrl-D on an empty line
    elif how == "sigterm":
        os.kill(term.pid, signal.SIGTERM)
    else:
        term.send("\x15/quit\r")
    wait_eof(term, WAIT)
    after = termios.tcgetattr(term.child_fd)
    term.close()
    assert term.exitstatus == 0, (how, screen.text())
    assert screen.history()[-1] == (
        "1 match stays live and resumes next time (the clocks wait): #1"
    )
    assert "Traceback" not in screen.text()
    # The terminal's line mode is back (the exact modes: the test in this process below).
    assert after[3] & termios.ICANON and after[3] & termios.ECHO and after[0] & termios.ICRNL


# ---------------------------------------------------------------------- in this process


async def test_the_terminal_is_given_back_as_it_was(lobby: Lobby) -> None:
    term = Pty()
    term.start()
    try:
        before = term.modes()
        task = asyncio.ensure_future(run_console(lobby, term.stdin, term.stdout, user="you"))
        await term.until(lambda: term.screen.cursor_line() == "you>")
        raw = term.modes()
        assert not raw[3] & termios.ICANON and not raw[3] & termios.ECHO  # keys, one by one
        term.send("/botmatch game:connect4 first:random second:random delay:0.3\r")
        await term.until(lambda: "Move 2" in term.screen.text())
        term.send("/board")  # typed while the moves are printed above it
        await term.until(lambda: term.screen.text().count("plays") >= 3)
        await term.until(lambda: term.screen.cursor_line() == "you> /board")
        term.send("\r")  # the line as typed, sent
        await term.until(lambda: "you> /board" in term.screen.history())
        await term.until(lambda: term.screen.cursor_line() == "you>")
        term.send("\x04")
        assert await asyncio.wait_for(task, 20) == 0
        assert term.modes() == before
        # Ctrl-D is /quit: it says what stays live
        await term.until(lambda: term.screen.history()[-1] == "No match stays live.")
    finally:
        term.close()


async def test_a_script_is_read_line_by_line_as_before(lobby: Lobby) -> None:
    """Not a terminal: no prompt, no escape sequences; each line echoed, then its answer."""
    import io

    out = io.StringIO()
    script = "/as bob\n# a comment\n/matches\n"
    assert await asyncio.wait_for(run_console(lobby, io.StringIO(script), out), 20) == 0
    assert out.getvalue() == (
        "> /as bob\nYou are now bob.\n> /matches\nbob has no live match.\nNo match stays live.\n"
    )
