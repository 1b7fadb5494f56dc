"""Typed lines in a terminal that survive output printed meanwhile.

In the terminal's own line mode the typed characters live in the kernel, out of reach: when a
bot match prints a move, the prompt can be drawn again but what the person was typing is lost
from the screen. Here the console reads keys itself (the terminal's echo and line mode off, its
signals kept, so Ctrl-C still stops the bot), keeps the line being typed, and prints output
above it: the output, then the prompt and the typed text again.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import unicodedata
from typing import IO, Any

try:
    import termios
except ImportError:  # not a POSIX terminal: the console reads whole lines instead
    termios = None  # type: ignore[assignment]

_ESC = "\x1b"
_ERASE = ("\x7f", "\x08")  # Backspace as terminals send it
_CLEAR_LINE = "\r\x1b[K"


def _width(text: str) -> int:
    """Columns `text` takes on a terminal (wide characters two, combining marks none)."""
    total = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return total


class LineEditor:
    """Reads keys from a terminal in the event loop and hands whole lines to `queue`
    (None at the end of input). Enter, Backspace, Ctrl-U (clear), Ctrl-W (word) and Ctrl-D
    (end, on an empty line) work; arrow keys and other escape sequences are ignored."""

    def __init__(self, fd: int, out: IO[str], queue: asyncio.Queue[str | None]) -> None:
        self.fd = fd
        self.out = out
        self.queue = queue
        self.typed = ""  # the line being typed
        self.prompt = ""
        self.shown = False  # the prompt and the typed text are on the screen, on the last line
        self._ready: list[str] = []  # lines finished while no prompt was shown (typed ahead)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._escape = ""  # an escape sequence being skipped
        self._saved: list[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def usable(stream: IO[str]) -> bool:
        """Whether `stream` is a terminal whose modes can be set."""
        if termios is None:
            return False
        try:
            termios.tcgetattr(stream.fileno())
        except (OSError, ValueError, AttributeError, termios.error):
            return False
        return True

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Echo and line mode off (Ctrl-C and Ctrl-Z keep working); read keys in `loop`."""
        self._saved = termios.tcgetattr(self.fd)
        mode = termios.tcgetattr(self.fd)
        mode[3] &= ~(termios.ICANON | termios.ECHO)
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        self._loop = loop
        loop.add_reader(self.fd, self._readable)

    def close(self) -> None:
        """Give the terminal back as it was."""
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.fd)
            self._loop = None
        if self._saved is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    # ------------------------------------------------------------------ screen

    def show(self, prompt: str) -> None:
        """Draw the prompt and what is typed so far. A line typed ahead while no prompt was
        shown is shown after it and handed over now."""
        self.prompt = prompt
        if self._ready:
            line = self._ready.pop(0)
            self._write(prompt + line + "\n")
            self.queue.put_nowait(line + "\n")
            return
        self._write(prompt + self.typed)
        self.shown = True

    def leave(self) -> None:
        """End the prompt's line (the console stops): what follows starts on a line of its own."""
        if self.shown:
            self._write("\n")
        self.shown = False

    def print_above(self, text: str) -> None:
        """Print `text` (whole lines); the prompt and the typed text follow it again."""
        if self.shown:
            self._write(_CLEAR_LINE + text + "\n" + self.prompt + self.typed)
        else:
            self._write(text + "\n")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.out.write(text)
            self.out.flush()

    def _redraw(self) -> None:
        if self.shown:
            self._write(_CLEAR_LINE + self.prompt + self.typed)

    # ------------------------------------------------------------------ keys

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the terminal is gone
            self._end()
            return
        for ch in self._decoder.decode(data):
            self.key(ch)

    def _end(self) -> None:
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.fd)
        if self.shown:
            self._write("\n")
        self.shown = False
        self.queue.put_nowait(None)

    def key(self, ch: str) -> None:
        """One key (one character of what the terminal sent)."""
        if self._escape:
            self._escape += ch
            # ESC [ ... final byte, ESC O x, or ESC x: skipped whole
            n = len(self._escape)
            done = ch not in "[O" if n == 2 else "@" <= ch <= "~" or self._escape[1] == "O"
            if done or n > 16:
                self._escape = ""
            return
        if ch == _ESC:
            self._escape = ch
        elif ch in "\r\n":
            self._enter()
        elif ch in _ERASE:
            if self.typed:
                gone = self.typed[-1]
                self.typed = self.typed[:-1]
                if self.shown:
                    cols = max(_width(gone), 1)
                    self._write("\b" * cols + " " * cols + "\b" * cols)
        elif ch == "\x15":  # Ctrl-U
            self.typed = ""
            self._redraw()
        elif ch == "\x17":  # Ctrl-W: the last word
            self.typed = self.typed.rstrip()
            self.typed = self.typed[: len(self.typed) - len(self.typed.split(" ")[-1])]
            self._redraw()
        elif ch == "\x04":  # Ctrl-D: the end of input on an empty line, else nothing
            if not self.typed and not self._ready:
                self._end()
        elif ch == "\x0c":  # Ctrl-L
            self._redraw()
        elif ch == "\t":
            self._insert(" ")
        elif ch >= " " and ch != "\x7f":
            self._insert(ch)

    def _insert(self, ch: str) -> None:
        self.typed += ch
        if self.shown:
            self._write(ch)

    def _enter(self) -> None:
        line, self.typed = self.typed, ""
        if self.shown:
            self._write("\n")
            self.shown = False
            self.queue.put_nowait(line + "\n")
        else:
            self._ready.append(line)
