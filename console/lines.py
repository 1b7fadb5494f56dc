"""Where the console's lines come from: prompt_toolkit in a terminal, else a thread reading
stdin line by line (the event loop never blocks on input)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import IO, TYPE_CHECKING

from console.completion import CommandCompleter
from console.terminal import Terminal

if TYPE_CHECKING:
    from console.session import Session

#: What `next_line` gives once the console is to stop (Ctrl-C, a signal).
STOPPED = "\x00stopped"


def _start_reader(stdin: IO[str], loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str | None]:
    """Read lines in a daemon thread so the event loop never blocks; None marks the end."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def put(item: str | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        return True

    def run() -> None:
        try:
            while True:
                try:
                    line = stdin.readline()
                except UnicodeDecodeError:
                    line = "\x00undecodable\n"
                if not line or not put(line):
                    break
        except (OSError, ValueError):
            pass  # stdin closed under us: treat as the end of input
        finally:
            put(None)

    threading.Thread(target=run, name="console-stdin", daemon=True).start()
    return queue


def reader(
    console: Session, stdin: IO[str], stdout: IO[str]
) -> Callable[[], Awaitable[str | None]]:
    """How the console gets its lines: from prompt_toolkit in a terminal, else from a thread
    reading stdin line by line. A line, None at the end of input, STOPPED on Ctrl-C."""
    if console.interactive and Terminal.usable(stdin, stdout):
        terminal = console.terminal or Terminal(stdin, stdout, None)  # (drawn early, maybe)
        terminal.use_completer(CommandCompleter(lambda: console.matches))
        console.terminal = terminal

        async def read_terminal() -> str | None:
            try:
                return await terminal.read(f"{console.user}> ")
            except EOFError:
                return None
            except KeyboardInterrupt:  # Ctrl-C, a key while the prompt reads: leave
                return STOPPED

        return read_terminal
    queue = _start_reader(stdin, asyncio.get_running_loop())
    return queue.get


async def next_line(
    read: Callable[[], Awaitable[str | None]], stop: asyncio.Event | None
) -> str | None:
    """The next input line (None at the end of input), or STOPPED once `stop` is set."""
    if stop is None:
        return await read()
    getter = asyncio.ensure_future(read())
    waiter = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if getter in done:
        return getter.result()
    getter.cancel()  # a prompt being read gives the terminal back as it was
    await asyncio.gather(getter, return_exceptions=True)
    return STOPPED
