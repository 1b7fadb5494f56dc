"""Running the console on a lobby: the first lines, what an earlier process left taken up, the
input loop, and leaving (what stays live is said in one line)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import IO

from console import tournaments
from console.dispatch import Console
from console.lines import STOPPED, next_line, reader
from console.session import Session
from console.terminal import Terminal
from console.training import stop_training
from console.values import check_name, default_name
from console.warmup import engine_ready
from engine.warm import warm_rules
from lobby.core import Lobby
from lobby.errors import LobbyError
from lobby.settings import CONSOLE_SERVER

MAX_LISTED = 10  # live matches named in the line said at the end


async def run_console(
    lobby: Lobby,
    stdin: IO[str],
    stdout: IO[str],
    *,
    user: str | None = None,
    stop: asyncio.Event | None = None,
    engine: asyncio.Future[None] | None = None,
    banner: bool = True,
    terminal: Terminal | None = None,
) -> int:
    """Run the console until /quit, the end of stdin or `stop` (SIGTERM/Ctrl-C); the exit
    code. It resumes what an earlier process left, as the Discord bot does. `engine`: the
    engine pool's start, still running (the prompt works meanwhile; a line says when it is
    ready); `banner=False`: the caller has printed the first lines already; `terminal`: the
    terminal whose prompt the caller drew already (`Terminal.early`)."""
    try:
        interactive = bool(stdin.isatty())
    except (AttributeError, ValueError):
        interactive = False
    name = check_name(user) if user else default_name()
    console = Console(lobby, stdout, name, interactive, stop)
    console.terminal = terminal  # (what is printed goes above its prompt)
    lobby.listeners.append(console.on_snapshot)
    tournaments.attach(console)  # its news, from the resume on
    # The console's matches are played at this keyboard: while it is closed nobody can move,
    # so the restart's grace is a full turn (the Discord bot's is shorter: it restarts fast).
    grace = lobby.config.resume_grace
    lobby.config.resume_grace = max(grace, lobby.config.turn_seconds)
    lobby.config.home_server = CONSOLE_SERVER  # /settings: the console's one server
    finish = False  # at the end of a script: let the bot matches finish; otherwise stop them
    stopped = False  # a signal: leave everything live for the next start
    clock: asyncio.Future[None] | None = None
    watcher: asyncio.Future[None] | None = None
    try:
        if interactive:
            console.write(
                ("Board-game bot, local console (set DISCORD_TOKEN to run the Discord bot).\n"
                 if banner else "")
                + f"You are {console.user}. Try: /play game:connect4 opponent:easy"
                " - /help lists the commands, /quit leaves."
            )  # fmt: skip
        if engine is not None:
            watcher = asyncio.ensure_future(engine_ready(console, engine, interactive))
        earlier: set[int] | None = None  # what an earlier process left (before any command)
        with contextlib.suppress(LobbyError):
            earlier = set(await lobby.live_match_ids())
        clock = asyncio.ensure_future(_prepare(console, earlier))
        if not interactive:  # a script: its lines come after what a restart mends
            ready = asyncio.ensure_future(console.prepared.wait())
            await asyncio.wait({ready, clock}, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
        finish, stopped = await _read_lines(console, stdin, stdout)
        return 0
    finally:
        await _leave(console, finish=finish, stopped=stopped, tasks=(watcher, clock))
        lobby.config.resume_grace = grace


async def _prepare(console: Session, earlier: set[int] | None) -> None:
    """Take up what an earlier process left (`earlier`: its live matches), then run the
    lobby's clock until the console leaves."""
    lobby = console.lobby
    await asyncio.to_thread(warm_rules)  # this process's rule kernels, off the loop
    try:
        # What a killed process left: finished games are finished, clocks get a grace,
        # agents to move move, bot matches go on (as this session's).
        for snap in await lobby.resume(only=earlier):
            if snap.match.kind == "eve" and not tournaments.in_a_tournament(snap):
                console.resume_botmatch(snap)  # (a tournament's go on as the tournament's)
        await console.adopt(console.user)
        await tournaments.attach(console).resume()  # after the matches, as the Discord bot
    except LobbyError as exc:
        console.error(str(exc))
    console.prepared.set()
    # After the resume: its grace comes first. The tournaments' sweep starts those whose
    # time came and takes up the steps a busy database postponed.
    await asyncio.gather(lobby.run_clock(), lobby.tournaments.run())


async def _read_lines(console: Console, stdin: IO[str], stdout: IO[str]) -> tuple[bool, bool]:
    """Handle lines until /quit, the end of input or a stop; (finish, stopped): whether the
    bot matches may finish (the end of a script), whether a signal stopped the console (all
    stays live for the next start)."""
    read = reader(console, stdin, stdout)
    stop = console.stop
    while True:
        console.prompt()
        line = await next_line(read, stop)
        console.prompt_shown = False
        if line is STOPPED:
            return False, True  # (a prompt that is left ends its line itself)
        if line is None:
            stopped = stop is not None and stop.is_set()  # a signal came with the EOF
            finish = not console.interactive and not stopped  # Ctrl-D in a terminal is /quit
            if console.interactive and console.terminal is None:
                console.out.write("\n")
            return finish, stopped
        if "\x00" in line:
            console.error("that line is not valid text")
            continue
        if not await console.handle(line):
            return False, False


async def _leave(
    console: Session,
    *,
    finish: bool,
    stopped: bool,
    tasks: tuple[asyncio.Future[None] | None, asyncio.Future[None] | None],
) -> None:
    """Close the session: bot matches finished, stopped or kept (see `Session.close`), the
    engine's watcher and the clock cancelled, training stopped, then the last line."""
    watcher, clock = tasks
    if console.terminal is not None:
        await console.terminal.flush()
    await console.close(finish=finish, keep=stopped, stop=console.stop)
    if watcher is not None:
        watcher.cancel()
    if clock is not None:
        clock.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await clock
    tournaments.detach(console)
    stopped_training = await stop_training(console)
    if stopped_training is not None:
        console.write(stopped_training)
    await farewell(console)
    with contextlib.suppress(ValueError):
        console.lobby.listeners.remove(console.on_snapshot)


async def farewell(console: Session) -> None:
    """The last line: which matches stay live and resume at the next start."""
    try:
        live = sorted(await console.lobby.live_match_ids())
    except LobbyError as exc:
        console.error(f"cannot list the live matches: {exc}")
        return
    if not live:
        console.write("No match stays live.")
        return
    ids = ", ".join(f"#{i}" for i in live[:MAX_LISTED])
    if len(live) > MAX_LISTED:
        ids += f" and {len(live) - MAX_LISTED} more"
    many = len(live) > 1
    console.write(
        f"{len(live)} match{'es' if many else ''} stay{'' if many else 's'} live and"
        f" resume{'' if many else 's'} next time (the clocks wait): {ids}"
    )
