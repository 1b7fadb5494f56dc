"""The terminal: lines read with prompt_toolkit, output printed above the line being typed.

It imports prompt_toolkit alone (neither the lobby nor the engine): the console's first prompt
is on the screen before they are imported (`Terminal.early`)."""

from __future__ import annotations

import asyncio
import contextlib
import termios
from typing import IO, Any, TextIO, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import Completer
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_input
from prompt_toolkit.output import create_output
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.shortcuts import CompleteStyle
from prompt_toolkit.utils import get_cwidth


class Terminal:
    """A terminal's lines, read with prompt_toolkit (history, editing keys, completion), and
    output printed above the line being typed, in order.

    Output that comes while a prompt is shown is written with `run_in_terminal`: the prompt is
    erased, the text printed, the prompt and what is typed drawn again below it. Ctrl-C at
    the prompt leaves the console (as the signal does), Ctrl-D on an empty line ends the
    input, Ctrl-Z suspends as in a shell; the terminal's modes are set only while a prompt is
    read, and given back as they were after each one."""

    def __init__(self, stdin: IO[str], stdout: IO[str], completer: Completer | None) -> None:
        self.out = stdout
        output = create_output(cast(TextIO, stdout))
        if isinstance(output, Vt100_Output):
            # A cursor position request only serves menus that reserve room below the prompt;
            # completion here is readline-like (the list goes above), and a terminal that never
            # answers would cost a 2 s wait and a warning.
            output.enable_cpr = False
        self.session: PromptSession[str] = PromptSession(
            input=create_input(cast(TextIO, stdin)),
            output=output,
            history=InMemoryHistory(),
            completer=completer,
            complete_style=CompleteStyle.READLINE_LIKE,
            complete_while_typing=False,
            reserve_space_for_menu=0,
            enable_suspend=True,
        )
        self._tail: asyncio.Future[None] | None = None  # the output still to be written
        # the progress lines at the bottom of the output, by what they follow (nothing printed
        # after them): each is redrawn in place, so two at once (a training and the engine's
        # warm-up) never replace each other
        self._progress: list[str] = []
        self.prompting = False
        self._stdin = stdin
        self._held: str | None = None  # the prompt drawn before prompt_toolkit's (`early`)
        self._modes: list[Any] | None = None  # the terminal's modes meanwhile, to give back

    @classmethod
    def early(cls, stdin: IO[str], stdout: IO[str], name: str) -> Terminal:
        """A terminal whose prompt (`name> `) is on the screen at once, before the rest of the
        console is imported (the engine's modules and numba take a second of CPU, more on a
        busy machine). What is typed meanwhile waits in the terminal, unechoed, and the first
        `read` takes it as typed: Tab completes, Enter sends the line."""
        terminal = cls(stdin, stdout, None)
        terminal._hold(f"{name}> ")
        return terminal

    def _hold(self, prompt: str) -> None:
        """Draw `prompt` by hand, and keep the keys typed from now on for prompt_toolkit
        (no echo, no line editing by the terminal; Ctrl-C still signals)."""
        with contextlib.suppress(termios.error, OSError, ValueError):
            fd = self._stdin.fileno()
            modes = termios.tcgetattr(fd)
            quiet = termios.tcgetattr(fd)
            quiet[0] &= ~termios.ICRNL  # Enter stays \r, as prompt_toolkit reads it
            quiet[3] &= ~(termios.ECHO | termios.ICANON)
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
            self._modes = modes
        self._held = prompt
        self._write(prompt)

    def give_back(self) -> None:
        """The terminal's modes as they were before `early`, and its prompt erased (the keys
        typed meanwhile stay to be read)."""
        modes, self._modes = self._modes, None
        if modes is not None:
            with contextlib.suppress(termios.error, OSError, ValueError):
                termios.tcsetattr(self._stdin.fileno(), termios.TCSANOW, modes)
        if self._held is not None:
            self._held = None
            self._write("\r\x1b[2K")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.out.write(text)
            self.out.flush()

    def use_completer(self, completer: Completer) -> None:
        """Complete with `completer` from now on (also in the prompt being read)."""
        self.session.completer = completer

    @staticmethod
    def usable(stdin: IO[str], stdout: IO[str]) -> bool:
        """Whether both ends are a terminal (else lines are read one by one)."""
        try:
            return bool(stdin.isatty() and stdout.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def columns(self) -> int:
        try:
            return max(self.session.output.get_size().columns, 20)
        except Exception:  # a terminal that cannot say: the usual width
            return 80

    async def read(self, prompt: str) -> str:
        """The next line (with its newline); EOFError at the end of input (Ctrl-D),
        KeyboardInterrupt on Ctrl-C."""
        await self.flush()
        self.give_back()  # (the keys typed at an early prompt are read now)
        self.prompting = True
        try:
            # The bot's own signal handlers stay (SIGTERM, SIGINT from outside); a failure in
            # a background task is the console's to report, never a traceback on the screen.
            line = await self.session.prompt_async(
                prompt, handle_sigint=False, set_exception_handler=False
            )
        finally:
            self.prompting = False
            self._progress = []  # the accepted line is below any progress line
        return line + "\n"

    def print_above(self, text: str, *, progress: str | None = None) -> None:
        """Print whole lines above the prompt (or plainly when none is shown). A `progress`
        line (named by what it follows) replaces the last one of that name if only progress
        lines came after it."""

        def emit() -> None:
            if self._held is not None:  # above the early prompt, drawn again below
                self._progress = []
                self._write(f"\r\x1b[2K{text}\n{self._held}")
                return
            if progress is not None and progress in self._progress:
                up = len(self._progress) - self._progress.index(progress)
                self._write(f"\x1b[{up}A\r\x1b[2K{text}\x1b[{up}B\r")
                return
            self._progress = [*self._progress, progress] if progress is not None else []
            self._write(text + "\n")

        pending = self._tail is not None and not self._tail.done()
        if not pending and not self.session.app.is_running:
            emit()
            return
        earlier = self._tail

        async def later() -> None:
            if earlier is not None:
                await asyncio.gather(earlier, return_exceptions=True)
            await run_in_terminal(emit)

        self._tail = asyncio.ensure_future(later())

    async def flush(self) -> None:
        """Wait until everything printed so far is on the screen."""
        while self._tail is not None and not self._tail.done():
            await asyncio.gather(self._tail, return_exceptions=True)

    def fit(self, text: str) -> str:
        """`text` cut to one row of the terminal (a progress line must not wrap)."""
        room = self.columns() - 1  # the last column would wrap on some terminals
        if get_cwidth(text) <= room:
            return text
        out: list[str] = []
        used = 1  # the ellipsis
        for ch in text:
            used += get_cwidth(ch)
            if used > room:
                break
            out.append(ch)
        return "".join(out) + "…"
