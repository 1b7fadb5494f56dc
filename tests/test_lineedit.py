"""The console's line editor on a real pseudo-terminal: typed text survives output printed
meanwhile, keys edit the line, and the terminal is given back as it was."""

from __future__ import annotations

import asyncio
import io
import os
import pty
import termios

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineedit import LineEditor


def editor() -> tuple[LineEditor, io.StringIO, asyncio.Queue[str | None]]:
    out = io.StringIO()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    return LineEditor(-1, out, queue), out, queue


def drain(queue: asyncio.Queue[str | None]) -> list[str | None]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


def test_output_is_printed_above_the_typed_line() -> None:
    ed, out, queue = editor()
    ed.show("you> ")
    for ch in "/matc":
        ed.key(ch)
    ed.print_above("#1 Bot (easy) plays 4")
    # the output on a cleared line, then the prompt with what was typed so far
    assert out.getvalue().endswith("\r\x1b[K#1 Bot (easy) plays 4\nyou> /matc")
    for ch in "hes\r":
        ed.key(ch)
    assert drain(queue) == ["/matches\n"]
    assert not ed.shown


def test_editing_keys() -> None:
    ed, _, queue = editor()
    ed.show("> ")

    def keys(text: str) -> str:
        for ch in text:
            ed.key(ch)
        return ed.typed

    assert keys("/play gam\x7fme:c4 oops") == "/play game:c4 oops"  # Backspace
    assert keys("\x17") == "/play game:c4 "  # Ctrl-W: the last word
    assert keys("\x1b[A\x1b[1;5C\x1bOB") == "/play game:c4 "  # arrow keys: ignored
    assert keys("\tx") == "/play game:c4  x"
    assert keys("\x15") == ""  # Ctrl-U: the whole line
    assert keys("/board\n") == ""
    assert drain(queue) == ["/board\n"]
    ed.show("> ")
    ed.key("\x04")  # Ctrl-D on an empty line: the end of input
    assert drain(queue) == [None]


def test_leaving_ends_the_prompt_line() -> None:
    """Ctrl-C (a signal, not a key) stops the console: the shell's prompt gets its own line."""
    ed, out, _ = editor()
    ed.show("you> ")
    ed.key("4")
    ed.leave()
    assert out.getvalue() == "you> 4\n" and not ed.shown
    ed.leave()
    assert out.getvalue() == "you> 4\n"  # once


def test_lines_typed_ahead_wait_for_their_prompt() -> None:
    ed, out, queue = editor()
    for ch in "4\n5\n":  # typed while a command was being handled: no prompt on screen
        ed.key(ch)
    assert drain(queue) == []
    ed.show("> ")
    assert drain(queue) == ["4\n"] and out.getvalue() == "> 4\n"
    ed.show("> ")
    assert drain(queue) == ["5\n"]
    ed.show("> ")
    assert ed.shown and drain(queue) == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_keys_give_plain_lines(keys: str) -> None:
    ed, _, queue = editor()
    ed.show("> ")
    for ch in keys:
        ed.key(ch)
        if not ed.shown:
            ed.show("> ")
    for line in drain(queue):
        if line is not None:
            body = line[:-1]
            assert line.endswith("\n") and all(c >= " " and c != "\x7f" for c in body)


def test_a_real_terminal_is_given_back_as_it_was() -> None:
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)

        async def main() -> list[str | None]:
            out = io.StringIO()
            queue: asyncio.Queue[str | None] = asyncio.Queue()
            ed = LineEditor(slave, out, queue)
            assert LineEditor.usable(os.fdopen(os.dup(slave), "r"))
            ed.start(asyncio.get_running_loop())
            mode = termios.tcgetattr(slave)
            assert not mode[3] & termios.ICANON and not mode[3] & termios.ECHO
            assert mode[3] & termios.ISIG  # Ctrl-C still stops the bot
            ed.show("> ")
            os.write(master, "é4\x7f5\r".encode())
            line = await asyncio.wait_for(queue.get(), 5)
            ed.close()
            return [line]

        assert asyncio.run(main()) == ["é5\n"]
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


def test_a_pipe_is_not_a_terminal() -> None:
    r, w = os.pipe()
    with os.fdopen(r) as reader:
        assert not LineEditor.usable(reader)
    os.close(w)
    assert not LineEditor.usable(io.StringIO())


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
