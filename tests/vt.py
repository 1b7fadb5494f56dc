"""A small terminal screen for the tests that drive the console through a pseudo-terminal.

prompt_toolkit draws the prompt with cursor moves (a trailing space is a move, not a character)
and redraws it after every line printed above it, so the raw output says little about what a
person sees. `Screen` replays the output as a terminal would: printable characters (wide ones
take two columns), CR, LF, Backspace, and the CSI sequences that move the cursor and erase;
colours and modes are ignored. Lines scrolled off the top are kept (`history`).
"""

from __future__ import annotations

import asyncio
import codecs
import fcntl
import os
import pty
import re
import struct
import termios
import time
from collections.abc import Callable

import pexpect
from prompt_toolkit.utils import get_cwidth

_CSI = re.compile(r"\x1b\[([?>=]?)([0-9;]*)([ -/]*)([@-~])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


class Screen:
    """What a `rows` x `cols` terminal shows after `feed`ing it a program's output."""

    def __init__(self, rows: int = 50, cols: int = 120) -> None:
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.scrolled: list[str] = []
        self.r = self.c = 0
        self.autowrap = True
        self.raw = ""  # everything fed, for a failure's message
        self._rest = ""  # an escape sequence cut in two by a read

    # ------------------------------------------------------------------ reading

    def line(self, r: int) -> str:
        return "".join(self.cells[r]).rstrip()

    def display(self) -> list[str]:
        return [self.line(r) for r in range(self.rows)]

    def history(self) -> list[str]:
        """Every line shown so far: those scrolled off, then the screen (trailing blanks off)."""
        lines = self.scrolled + self.display()
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def cursor_line(self) -> str:
        return self.line(self.r)

    def text(self) -> str:
        return "\n".join(self.history())

    # ------------------------------------------------------------------ writing

    def write(self, data: str) -> None:  # pexpect's logfile_read
        self.feed(data)

    def flush(self) -> None:
        pass

    def feed(self, data: str) -> None:
        self.raw += data
        data = self._rest + data
        self._rest = ""
        i = 0
        while i < len(data):
            ch = data[i]
            if ch == "\x1b":
                m = _CSI.match(data, i) or _OSC.match(data, i)
                if m is None:
                    if len(data) - i < 32 and (i + 1 == len(data) or data[i + 1] in "[]"):
                        self._rest = data[i:]  # the rest comes with the next read
                        return
                    i += 2  # ESC and one character (ESC 7, ESC =, ...): nothing to draw
                    continue
                if m.re is _CSI:
                    self._csi(m.group(1), m.group(2), m.group(4))
                i = m.end()
                continue
            self._char(ch)
            i += 1

    def _char(self, ch: str) -> None:
        if ch == "\r":
            self.c = 0
        elif ch == "\n":
            self._down()
        elif ch == "\b":
            self.c = max(0, self.c - 1)
        elif ch == "\t":
            self.c = min(self.cols - 1, (self.c // 8 + 1) * 8)
        elif ch < " " or ch == "\x7f":
            pass  # bell and the other controls
        else:
            width = get_cwidth(ch)
            if width == 0:  # a combining mark or variation selector: part of the cell before
                if self.c > 0:
                    self.cells[self.r][self.c - 1] += ch
                return
            if self.c + width > self.cols:
                if not self.autowrap:
                    return
                self.c = 0
                self._down()
            self.cells[self.r][self.c] = ch
            if width == 2 and self.c + 1 < self.cols:
                self.cells[self.r][self.c + 1] = ""
            self.c += width

    def _down(self) -> None:
        if self.r + 1 < self.rows:
            self.r += 1
            return
        self.scrolled.append(self.line(0))
        del self.cells[0]
        self.cells.append([" "] * self.cols)

    def _csi(self, private: str, params: str, final: str) -> None:
        args = [int(p) if p else 0 for p in params.split(";")] if params else []
        n = max(args[0], 1) if args else 1
        if private == "?":
            if 7 in args and final in "hl":
                self.autowrap = final == "h"
            return
        if final == "A":
            self.r = max(0, self.r - n)
        elif final == "B":
            self.r = min(self.rows - 1, self.r + n)
        elif final == "C":
            self.c = min(self.cols - 1, self.c + n)
        elif final == "D":
            self.c = max(0, self.c - n)
        elif final == "G":
            self.c = min(self.cols - 1, n - 1)
        elif final in "Hf":
            row = args[0] if args else 1
            col = args[1] if len(args) > 1 else 1
            self.r, self.c = min(self.rows, max(row, 1)) - 1, min(self.cols, max(col, 1)) - 1
        elif final == "K":
            mode = args[0] if args else 0
            row = self.cells[self.r]
            lo, hi = {0: (self.c, self.cols), 1: (0, self.c + 1)}.get(mode, (0, self.cols))
            for k in range(lo, hi):
                row[k] = " "
        elif final == "J":
            mode = args[0] if args else 0
            if mode == 0:
                self._csi("", "0", "K")
                for r in range(self.r + 1, self.rows):
                    self.cells[r] = [" "] * self.cols
            elif mode == 2:
                self.cells = [[" "] * self.cols for _ in range(self.rows)]


def pump(term: pexpect.spawn, screen: Screen, check: Callable[[], bool], timeout: float) -> None:
    """Read the terminal (into `screen`, its logfile_read) until `check()` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen in {timeout} s; the screen:\n{screen.text()}")
        try:
            term.read_nonblocking(65536, timeout=0.1)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            if not check():
                raise AssertionError(f"the console ended; the screen:\n{screen.text()}") from None
            return


def quit_cleanly(term: pexpect.spawn, screen: Screen, prompt: str, timeout: float) -> None:
    """`/quit` at `prompt`: the console ends with status 0 and no traceback on its screen."""
    pump(term, screen, lambda: screen.cursor_line() == prompt, timeout)
    term.send("/quit\r")
    wait_eof(term, timeout)
    term.close()
    assert term.exitstatus == 0, screen.text()
    assert "Traceback" not in screen.text()


def wait_eof(term: pexpect.spawn, timeout: float) -> None:
    """Read until the program ends."""
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline:
            raise AssertionError("the console did not end")
        try:
            term.read_nonblocking(65536, timeout=0.2)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return


class Pty:
    """A pseudo-terminal for a console run in this process: `stdin` and `stdout` are the
    terminal's side of it, and what the console draws lands in `screen` (read in the event
    loop, so the test's awaits keep it current)."""

    def __init__(self, rows: int = 50, cols: int = 120) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.screen = Screen(rows, cols)
        self.stdin = open(self.slave, encoding="utf-8", closefd=False)  # noqa: SIM115
        self.stdout = open(self.slave, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.master, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:
            data = b""
        if not data and self._loop is not None:
            self._loop.remove_reader(self.master)
            return
        self.screen.feed(self._decoder.decode(data))

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def until(self, check: Callable[[], bool], timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"not seen in {timeout} s; the screen:\n{self.screen.text()}")
            await asyncio.sleep(0.02)

    def modes(self) -> list[object]:
        return termios.tcgetattr(self.slave)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.master)
        self.stdin.close()
        self.stdout.close()
        os.close(self.master)
        os.close(self.slave)
