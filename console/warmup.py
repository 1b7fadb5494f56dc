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

#: Seconds between the console's lines on the engine's progress (when it changed).
PROGRESS_SECONDS = 10.0


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
        f"Preparing the game engine: its {status.total} opponents are compiled once on this "
        f"machine (a first start, or the first after an update), about {status.seconds:.0f} s "
        "in all, in the background. You can play meanwhile: a game's first moves wait only "
        "for its own opponent.",
        terminal,
    )
    return True


async def engine_progress(
    pool: EnginePool, engine: asyncio.Future[None], terminal: Terminal | None = None
) -> None:
    """The engine's progress while it compiles, every `PROGRESS_SECONDS` it changed (the
    console says when it is ready)."""
    shown = pool.status().ready
    while not (await asyncio.wait({engine}, timeout=PROGRESS_SECONDS))[0]:
        status = pool.status()
        if status.ready != shown and status.compiling:
            shown = status.ready
            await _above(f"Game engine: {status.progress()}.", terminal)


async def engine_ready(console: Session, engine: asyncio.Future[None], loud: bool) -> None:
    """Say when a slow engine start is over (or that it failed)."""
    started = time.monotonic()
    try:
        await asyncio.shield(engine)
    except Exception as exc:  # the agents cannot move: say so once, plainly
        console.error(f"the game engine could not start: {exc}")
        return
    took = time.monotonic() - started
    if loud and took > 3:
        console.write(f"The game engine is ready (it took {took:.0f} s).")
