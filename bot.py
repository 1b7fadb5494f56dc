"""Composition root: config -> Store -> EnginePool -> Lobby -> Discord bot, or the local console.

`python bot.py` runs the Discord bot when DISCORD_TOKEN is set and the local console front end
otherwise; `python bot.py --print-commands` prints the application commands as the JSON that
would be synced; `python bot.py migrate --from sqlite:PATH --to postgresql://...` copies a
SQLite database into a new PostgreSQL one. The settings, the database's claim, the Discord
login and the migrate command are in `boot/`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import importlib
import io
import json
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from boot.database import claim_watched, open_database
from boot.errors import ConfigError, StartError
from boot.settings import Config, settings_line

if TYPE_CHECKING:  # imported when used: the first screen must not wait for them
    from collections.abc import Callable

    from console.terminal import Terminal
    from db.instance import Guard
    from lobby.core import Lobby
    from lobby.pool import EnginePool

log = logging.getLogger("boardbot")


async def build_lobby(
    config: Config, *, wait_for_engine: bool = True, say: Callable[[str], None] | None = None
) -> tuple[Lobby, Guard]:
    """Claim the database, open the store, start and warm the engine pool, make the lobby.

    Returns (lobby, guard): the guard holds the database until `shut_down` releases it. With
    `wait_for_engine=False` the pool is left to start (`lobby.pool.start()`): the console
    shows its prompt at once while the workers warm up, and jobs wait for them. `say` gets the
    line that names the database opened (default: the log, at INFO).
    """
    from lobby.core import Lobby
    from lobby.pool import EnginePool

    store, guard = await open_database(config, say or log.info)
    pool = EnginePool(workers=config.workers, ceiling=config.job_seconds)
    try:
        if wait_for_engine:
            await pool.start()
    except BaseException:
        await pool.close()
        await store.close()
        guard.release()
        raise
    return Lobby(store, pool, config.lobby_config()), guard


async def shut_down(lobby: Lobby, guard: Guard) -> None:
    """In order: agent turns stop (a commit in flight completes), learning still in the
    outbox is applied, the engine pool closes, the store closes, the database is released."""
    await lobby.close()
    await lobby.pool.close()
    await lobby.store.close()
    guard.release()


def on_signals(callback: Callable[[], object]) -> None:
    """Call `callback()` on SIGTERM and SIGINT (a service manager's stop, or Ctrl-C)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
            loop.add_signal_handler(sig, callback)


async def _start_engine(pool: EnginePool) -> None:
    """Start the engine pool, then wait for its whole warm-up (every opponent compiled)."""
    await pool.start()
    await pool.everything()


async def run_console(config: Config) -> int:
    # A console that cannot show an emoji (or reads a stray byte) replaces it, never crashes.
    for stream in (sys.stdin, sys.stdout):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    interactive = sys.stdin.isatty()
    stop = asyncio.Event()
    on_signals(stop.set)
    terminal = None
    if interactive:  # something on the screen at once, even while numba compiles
        print(
            "Board-game bot, local console (set DISCORD_TOKEN to run the Discord bot).\n"
            + settings_line(config),
            flush=True,
        )
        from console.terminal import Terminal

        if Terminal.usable(sys.stdin, sys.stdout):  # the prompt before the engine's imports
            terminal = Terminal.early(sys.stdin, sys.stdout, _login())
    try:
        return await _console(config, interactive, stop, terminal)
    finally:
        if terminal is not None:  # (a start that failed never read a line)
            terminal.give_back()


async def _console(
    config: Config, interactive: bool, stop: asyncio.Event, terminal: Terminal | None
) -> int:
    """The console, once its first lines (and maybe its prompt) are on the screen."""
    if config.workers > 0:  # the engine pool's first worker, meanwhile on the other core
        from lobby.workers import Worker

        Worker.start_early([sys.executable, "-m", "lobby.worker"])
    # A second of CPU (numba above all), in a thread: the prompt reads meanwhile.
    await asyncio.to_thread(importlib.import_module, "console.run")
    from console.run import run_console as console_main
    from console.warmup import engine_intro, engine_progress

    def say(line: str) -> None:  # on a person's screen too; a script's output stays as it was
        log.info(line)
        if terminal is not None:
            terminal.print_above(line)
        elif interactive:
            print(line, flush=True)

    lobby, guard = await build_lobby(config, wait_for_engine=False, say=say)
    engine = asyncio.ensure_future(_start_engine(lobby.pool))
    await asyncio.sleep(0)  # the pool is started: jobs queue for its workers from now on
    shown: list[asyncio.Future[None]] = []
    try:
        if interactive and await engine_intro(lobby.pool, engine, terminal):  # before any line
            shown.append(asyncio.ensure_future(engine_progress(lobby.pool, engine, terminal)))
        # A lost claim stops this console: two would run the same clocks.
        async with claim_watched(guard, stop.set):
            return await console_main(
                lobby,
                sys.stdin,
                sys.stdout,
                stop=stop,
                engine=engine,
                banner=not interactive,
                terminal=terminal,
            )
    finally:
        for task in (engine, *shown):
            task.cancel()
        await asyncio.gather(engine, *shown, return_exceptions=True)
        await shut_down(lobby, guard)


def _login() -> str:
    """The name the first prompt shows: the login name (the console checks it, and says
    `you` for a name it refuses)."""
    try:
        name = getpass.getuser().strip()
    except (OSError, KeyError):
        return "you"
    plain = 0 < len(name) <= 32 and name.isprintable() and not name.startswith("/")
    return name if plain and not name.casefold().startswith("bot") else "you"


async def run_discord(config: Config) -> int:
    import discord

    from boot.login import log_in
    from cogs.client import BoardBot, ShardedBoardBot

    # discord.py warns about voice support at every start; this bot has no voice.
    logging.getLogger("discord.client").addFilter(
        lambda record: "voice will NOT be supported" not in record.getMessage()
    )

    lobby, guard = await build_lobby(config)
    sharding: dict[str, Any] = {}
    if config.shards is not None:  # this process's shards, on their own gateway connections
        sharding = {"shard_count": config.shards.count, "shard_ids": sorted(config.shards.owned)}
    bot = (ShardedBoardBot if sharding else BoardBot)(
        lobby,
        dev_guild=config.dev_guild,
        sync_commands=config.sync_commands,
        owner_specs=config.owner_specs,
        home_guild=config.home_guild,
        admin_role=config.admin_role,
        **sharding,
    )
    stop = asyncio.Event()

    closing: list[asyncio.Future[None]] = []  # a reference, so the task is not collected

    def stopping() -> None:
        stop.set()
        closing.append(asyncio.ensure_future(bot.close()))

    on_signals(stopping)
    try:
        # A lost claim stops this bot: two would run the same clocks.
        async with claim_watched(guard, stopping):
            try:
                async with bot:
                    await log_in(bot, config.token or "", stop)
                    if not bot.is_closed():
                        await bot.connect(reconnect=True)
            except discord.LoginFailure:
                raise StartError("Discord refused the token (DISCORD_TOKEN): check it") from None
    finally:
        await shut_down(lobby, guard)
    return 0


def print_commands() -> int:
    from cogs.client import command_payloads

    print(json.dumps(command_payloads(), indent=2, ensure_ascii=False))
    return 0


#: `python bot.py --help`: what the program does for the person running it.
DESCRIPTION = """\
Board-game bot: Connect Four and Othello on Discord, against the bot at four levels, against
friends, or as bot-vs-bot matches to watch, with leaderboards; every match is kept in a
database. With DISCORD_TOKEN set it runs the Discord bot; without it, the same commands in a
local console on the same database. Settings come from the environment and from the .env file
next to bot.py (README.md lists them)."""
COMMANDS = """\
commands:
  python bot.py migrate --from sqlite:PATH --to postgresql://...
                        copy a SQLite database into a new, empty PostgreSQL one, verified
                        (python bot.py migrate --help)"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bot.py",
        usage="python bot.py [--console | --print-commands]\n"
        "       python bot.py migrate --from sqlite:PATH --to postgresql://...",
        description=DESCRIPTION,
        epilog=COMMANDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--print-commands",
        action="store_true",
        help="print the application commands as the JSON that would be synced, and exit",
    )
    parser.add_argument(
        "--console",
        action="store_true",
        help="run the local console even when DISCORD_TOKEN is set",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["migrate"]:
        from boot.migrate import migrate

        return migrate(args_in[1:])
    args = _parser().parse_args(args_in)
    if args.print_commands:
        return print_commands()
    try:
        config = Config.from_env()
    except ConfigError as exc:
        print(exc.message, file=sys.stderr)
        return 2
    use_discord = bool(config.token) and not args.console
    if config.shards is not None and not use_discord:
        # The console's matches have no guild (shard 0's): a console over other shards would
        # neither resume nor time them.
        print(
            "config error: BOARDBOT_SHARD_COUNT and BOARDBOT_SHARDS are for the Discord bot "
            "(set DISCORD_TOKEN); the console runs every match itself",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(
        level=config.log_level or ("INFO" if use_discord else "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    log.info(settings_line(config))
    try:
        if use_discord:
            return asyncio.run(run_discord(config))
        return asyncio.run(run_console(config))
    except StartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the handlers were in place: leave quietly
        return 130


if __name__ == "__main__":
    sys.exit(main())
