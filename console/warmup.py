"""The console's lines about the game engine's start: its warm-up (what it compiles, about how
long, how far it is) and when it is ready."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from prompt_toolkit.application import get_app_or_none, run_in_terminal

if TYPE_CHECKING:
    from console.session import Session
    from console.terminal import Terminal
    from lobby.pool import EnginePool

#: Seconds between the console's lines on the engine's progress (when it changed), printed
#: one under the other (no terminal to redraw a line in).
PROGRESS_SECONDS = 10.0
#: Seconds between redraws of the one progress line in a terminal.
REDRAW_SECONDS = 1.0


async def _above(line: str, terminal: Terminal | None = None) -> None:
    """Print a line in the console, above its prompt if one is shown."""
    if terminal is not None:  # in order with the console's own lines
        terminal.print_above(line)
        return
    app = get_app_or_none()
    if app is not None and app.is_running:
        await run_in_terminal(lambda: print(line, flush=True))
    else:
        print(line, flush=True)


async def engine_intro(
    pool: EnginePool, engine: asyncio.Future[None], terminal: Terminal | None = None
) -> bool:
    """The console's first line on the engine's warm-up (above the prompt of `terminal`, if
    given), once its plan is read: what it does and about how long it takes. Whether its
    progress is worth following (`engine_progress`): it compiles. The console handles its
    first line after this one (a command typed at once would print before it otherwise)."""
    while not pool.planned and not engine.done():
        await asyncio.sleep(0.05)
    status = pool.status()
    if status.warm or engine.done():
        return False
    if not status.compiling:
        await _above("Starting the game engine...", terminal)
        return False
    await _above(
        f"Preparing the game engine: the {status.kernel_total} kernels of its {status.total} "
        "opponents are compiled once on this machine (a first start, or the first after an "
        f"update), about {status.seconds:.0f} s in all, in the background. You can play "
        "meanwhile: a game's first moves wait only for its own opponent.",
        terminal,
    )
    return True


async def engine_progress(
    pool: EnginePool, engine: asyncio.Future[None], terminal: Terminal | None = None
) -> None:
    """The engine's progress while it compiles: in a terminal one line, redrawn in place every
    `REDRAW_SECONDS` under the prompt (a new one after other output); otherwise a line every
    `PROGRESS_SECONDS` its counts changed. The console says when it is ready
    (`engine_ready`, in place of this line)."""
    every = PROGRESS_SECONDS if terminal is None else REDRAW_SECONDS
    shown = ""
    while not (await asyncio.wait({engine}, timeout=every))[0]:
        status = pool.status()
        line = f"Game engine: {status.progress()}."
        if not status.compiling or line == shown:
            continue
        if terminal is None:
            if line.partition(", about")[0] != shown.partition(", about")[0]:  # counts moved
                shown = line
                await _above(line)
        elif terminal.prompting:  # redrawn only under a prompt, never mid-command
            shown = line
            terminal.print_above(terminal.fit(line), progress="engine")


async def engine_ready(console: Session, engine: asyncio.Future[None], loud: bool) -> None:
    """Say when a slow engine start is over (or that it failed): in a terminal, in place of
    its progress line."""
    started = time.monotonic()
    try:
        await asyncio.shield(engine)
    except Exception as exc:  # the agents cannot move: say so once, plainly
        console.error(f"the game engine could not start: {exc}")
        return
    took = time.monotonic() - started
    if loud and took > 3:
        status = console.lobby.pool.status()
        counts = f": {status.progress()}" if status.total else ""
        ready = f"The game engine is ready (it took {took:.0f} s){counts}."
        console.progress(ready, last=True, of="engine")
