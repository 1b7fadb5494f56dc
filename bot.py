"""Composition root: config -> Store -> EnginePool -> Lobby -> Discord bot, or the local console.

`python bot.py` runs the Discord bot when DISCORD_TOKEN is set and the local console front end
otherwise; `python bot.py --print-commands` prints the application commands as the JSON that
would be synced; `python bot.py migrate --from sqlite:PATH --to postgresql://...` copies a
SQLite database into a new PostgreSQL one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import math
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: the first screen must not wait for them
    from collections.abc import Callable

    from cogs.client import BoardBot
    from db.instance import Guard
    from db.shards import Shards
    from lobby.core import Lobby, LobbyConfig
    from lobby.pool import EnginePool

log = logging.getLogger("boardbot")


class ConfigError(SystemExit):
    """A bad setting: one line to show; the process exits with 2, as for a usage error."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


#: Numeric settings: (variable, field, kind, lowest, highest). A limit of 0 turns it off.
NUMBERS: tuple[tuple[str, str, type, float, float], ...] = (
    ("BOARDBOT_WORKERS", "workers", int, 1, 64),
    ("BOARDBOT_TURN_SECONDS", "turn_seconds", float, 10, 7 * 86400),
    ("BOARDBOT_RESUME_GRACE", "resume_grace", float, 0, 86400),
    ("BOARDBOT_JOB_SECONDS", "job_seconds", float, 1, 3600),
    ("BOARDBOT_MAX_BOT_GAMES", "max_bot_games", int, 0, 10_000),
    ("BOARDBOT_MAX_BOTMATCHES", "max_botmatches", int, 0, 10_000),
    ("BOARDBOT_MAX_SERVER_BOTMATCHES", "max_guild_botmatches", int, 0, 10_000),
    ("BOARDBOT_MAX_CHALLENGES", "max_pending_challenges", int, 0, 10_000),
    ("BOARDBOT_CHALLENGE_COOLDOWN", "challenge_cooldown", float, 0, 86400),
    ("BOARDBOT_CHALLENGE_SECONDS", "challenge_seconds", float, 10, 7 * 86400),
    ("BOARDBOT_MAX_HINTS", "max_hints", int, 0, 100),
)
#: Discord ids: (variable, field).
IDS = (
    ("BOARDBOT_DEV_GUILD", "dev_guild"),
    ("BOARDBOT_HOME_GUILD", "home_guild"),
    ("BOARDBOT_ADMIN_ROLE", "admin_role"),
)
#: On/off settings: (variable, field); each takes one of the words below, or is unset (off).
SWITCHES = (
    ("BOARDBOT_SYNC", "sync_commands"),
    ("BOARDBOT_OWNER_SPECS", "owner_specs"),
)
ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: The project folder (this file's). The .env, a relative BOARDBOT_DB and the default database
#: are taken from here, wherever the bot is started from: one rule, so the bot started from
#: another folder still finds its settings and its history together.
PROJECT = Path(__file__).resolve().parent
DOTENV = PROJECT / ".env"
#: The one folder the bot makes itself (for the default database); any other must exist.
DATA = PROJECT / "data"
DEFAULT_DB = str(DATA / "boardbot.db")


@dataclass(frozen=True)
class Config:
    """Settings from the environment (and an optional .env file; the environment wins)."""

    token: str | None = field(default=None, repr=False)  # never printed, never logged
    db_path: str = DEFAULT_DB
    #: A PostgreSQL database instead of the SQLite file (it may hold a password: not printed).
    database_url: str | None = field(default=None, repr=False)
    workers: int = 2
    dev_guild: int | None = None
    turn_seconds: float = 600.0
    resume_grace: float = 120.0
    job_seconds: float = 30.0
    sync_commands: bool = False
    log_level: str | None = None  # None: INFO for the Discord bot, WARNING for the console
    max_bot_games: int = 3
    max_botmatches: int = 2
    max_guild_botmatches: int = 5
    max_pending_challenges: int = 5
    challenge_cooldown: float = 30.0
    challenge_seconds: float = 300.0
    max_hints: int = 3  # hints per game against the bot (0: none)
    owner_specs: bool = False
    home_guild: int | None = None
    admin_role: int | None = None
    #: The shards this process runs (BOARDBOT_SHARD_COUNT, BOARDBOT_SHARDS); None: all guilds.
    shards: Shards | None = None
    #: The .env file the settings were read from too (None: there was none).
    dotenv: Path | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, dotenv: Path | None = None) -> Config:
        """The settings; a bad one stops the start with one line naming it and its range."""
        dotenv = dotenv or DOTENV
        values = _read_dotenv(dotenv)
        found: dict[str, Any] = {"dotenv": dotenv if dotenv.is_file() else None}
        values.update(os.environ if env is None else env)
        for var, name, kind, low, high in NUMBERS:
            raw = (values.get(var) or "").strip()
            if not raw:
                continue
            try:
                value = kind(raw)
            except ValueError:
                value = None
            if value is None or not math.isfinite(value) or not low <= value <= high:
                what = "a whole number" if kind is int else "a number"
                raise ConfigError(
                    f"config error: {var}={raw[:40]!r}: expected {what} from {low:g} to {high:g}"
                )
            found[name] = value
        for var, name in IDS:
            raw = (values.get(var) or "").strip()
            if raw:
                if not (raw.isascii() and raw.isdigit() and len(raw) <= 20):
                    raise ConfigError(f"config error: {var}={raw[:40]!r} is not a Discord id")
                found[name] = int(raw)
        for var, name in SWITCHES:
            found[name] = _switch(var, values.get(var))
        url = (values.get("BOARDBOT_DATABASE_URL") or "").strip()
        if url:
            from db.backend import check_url, redact

            problem = check_url(url)
            if problem is not None:
                raise ConfigError(
                    f"config error: BOARDBOT_DATABASE_URL={redact(url)[:60]!r}: {problem}"
                )
            found["database_url"] = url
        else:  # the SQLite file is used: its folder must be there (see database_path)
            found["db_path"] = database_path(values.get("BOARDBOT_DB"))
        level = (values.get("BOARDBOT_LOG_LEVEL") or "").strip().upper()
        if level and level not in LOG_LEVELS:
            raise ConfigError(
                f"config error: BOARDBOT_LOG_LEVEL={level[:40]!r}: choose one of "
                + ", ".join(LOG_LEVELS)
            )
        from db.shards import parse_shards

        try:
            shards = parse_shards(
                values.get("BOARDBOT_SHARD_COUNT") or "", values.get("BOARDBOT_SHARDS") or ""
            )
        except ValueError as exc:
            raise ConfigError(f"config error: {exc}") from None
        return cls(
            token=values.get("DISCORD_TOKEN") or None,
            shards=shards if shards.count > 1 else None,
            log_level=level or None,
            **found,
        )

    @property
    def database(self) -> str:
        """What the store opens: BOARDBOT_DATABASE_URL if set, else the SQLite file."""
        return self.database_url or self.db_path

    def lobby_config(self) -> LobbyConfig:
        from lobby.core import LobbyConfig

        def limit(n: int) -> int | None:
            return n or None  # 0: no limit

        return LobbyConfig(
            turn_seconds=self.turn_seconds,
            resume_grace=self.resume_grace,
            max_bot_games=limit(self.max_bot_games),
            max_botmatches=limit(self.max_botmatches),
            max_guild_botmatches=limit(self.max_guild_botmatches),
            max_pending_challenges=limit(self.max_pending_challenges),
            challenge_cooldown=self.challenge_cooldown,
            challenge_seconds=self.challenge_seconds,
            max_hints=self.max_hints,
        )


def _switch(var: str, raw: str | None) -> bool:
    """An on/off setting: unset is off; a word that is neither stops the start (a typo must
    not quietly leave a switch off)."""
    word = (raw or "").strip().lower()
    if not word or word in OFF:
        return False
    if word in ON:
        return True
    raise ConfigError(
        f"config error: {var}={(raw or '').strip()[:40]!r}: expected 1 or 0"
        " (or true/false, yes/no, on/off)"
    )


def database_path(raw: str | None) -> str:
    """The SQLite file BOARDBOT_DB names: unset, the default; a relative path is taken from the
    project folder (as the .env is), not from the working directory. Its folder must exist,
    but for the default data folder, which the store makes."""
    given = (raw or "").strip()
    if not given:
        return str(DATA / "boardbot.db")
    if given == ":memory:" or given.startswith("file:"):  # SQLite's own names, as they are
        return given
    path = PROJECT / Path(given).expanduser()  # an absolute path stays as it is
    if path.parent != DATA and not path.parent.is_dir():
        raise ConfigError(
            f"config error: BOARDBOT_DB={given[:80]!r}: there is no folder {path.parent}"
            f" (create it first; only {DATA} is made by the bot)"
        )
    return str(path)


def _read_dotenv(path: Path) -> dict[str, str]:
    """The .env file's settings, read as a shell would (`export`, quotes, # comments); a
    line it cannot read stops the start with one line naming it."""
    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"config error: cannot read {path}: {exc}") from None
    bad = next((b.original.line for b in parse_stream(io.StringIO(text)) if b.error), None)
    if bad is not None:  # dotenv_values would skip it with a warning: a setting lost unseen
        raise ConfigError(f"config error: {path}, line {bad}: expected NAME=value")
    # Values as written: no ${NAME} expansion (a password may hold a '$').
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    return {key: value for key, value in values.items() if value is not None}


def settings_line(config: Config) -> str:
    """Where the settings came from, said at the start."""
    if config.dotenv is not None:
        return f"settings: read {config.dotenv} (the environment overrides it)"
    return f"settings: no {DOTENV}; the environment only"


class StartError(Exception):
    """The bot cannot start; the message is the one line to show."""


async def build_lobby(
    config: Config, *, wait_for_engine: bool = True, say: Callable[[str], None] | None = None
) -> tuple[Lobby, Guard]:
    """Claim the database, open the store, start and warm the engine pool, make the lobby.

    Returns (lobby, guard): the guard holds the database until `shut_down` releases it. With
    `wait_for_engine=False` the pool is left to start (`lobby.pool.start()`): the console
    shows its prompt at once while the workers warm up, and jobs wait for them. `say` gets the
    line that names the database opened (default: the log, at INFO).
    """
    from db.backend import is_postgres_url, redact
    from db.errors import StoreError
    from db.instance import AlreadyRunning, guard_for
    from db.store import Store
    from lobby.core import Lobby
    from lobby.pool import EnginePool

    name = redact(config.database)
    # A new file is said so: a bot started on another file than the one with the history
    # should not look as if the history were gone.
    new = not is_postgres_url(config.database) and not os.path.exists(config.database)
    guard = guard_for(config.database, config.shards)
    try:
        await guard.claim()
        store = await Store.open(config.database)
        if config.shards is not None:
            store.shards = config.shards
            log.info("running %s", config.shards.label())
    except (StoreError, OSError) as exc:
        guard.release()
        if isinstance(exc, AlreadyRunning):  # its line names the database already
            raise StartError(str(exc)) from None
        raise StartError(f"cannot use the database {name}: {exc}") from None
    (say or log.info)(f"database: {name}" + (" (new, empty)" if new else ""))
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


#: Seconds between the console's lines on the engine's progress (when it changed).
PROGRESS_SECONDS = 10.0


async def _start_engine(pool: EnginePool) -> None:
    """Start the engine pool, then wait for its whole warm-up (every opponent compiled)."""
    await pool.start()
    await pool.everything()


async def _above(line: str) -> None:
    """Print a line in the console, above its prompt if one is shown."""
    from prompt_toolkit.application import get_app_or_none, run_in_terminal

    app = get_app_or_none()
    if app is not None and app.is_running:
        await run_in_terminal(lambda: print(line, flush=True))
    else:
        print(line, flush=True)


async def _show_engine(pool: EnginePool, engine: asyncio.Future[None]) -> None:
    """The console's lines on the engine's warm-up: what it does and about how long it takes,
    then its progress while it compiles (the console says when it is ready)."""
    while not pool.planned and not engine.done():
        await asyncio.sleep(0.05)
    status = pool.status()
    if status.warm or engine.done():
        return
    if not status.compiling:
        await _above("Starting the game engine...")
        return
    await _above(
        f"Preparing the game engine: its {status.total} opponents are compiled once on this "
        f"machine (a first start, or the first after an update), about {status.seconds:.0f} s "
        "in all, in the background. You can play meanwhile: a game's first moves wait only "
        "for its own opponent."
    )
    shown = status.ready
    while not (await asyncio.wait({engine}, timeout=PROGRESS_SECONDS))[0]:
        status = pool.status()
        if status.ready != shown and status.compiling:
            shown = status.ready
            await _above(f"Game engine: {status.progress()}.")


async def run_console(config: Config) -> int:
    # A console that cannot show an emoji (or reads a stray byte) replaces it, never crashes.
    for stream in (sys.stdin, sys.stdout):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    interactive = sys.stdin.isatty()
    if interactive:  # something on the screen at once, even while numba compiles
        print(
            "Board-game bot, local console (set DISCORD_TOKEN to run the Discord bot).\n"
            + settings_line(config),
            flush=True,
        )
    from console import run_console as console_main

    def say(line: str) -> None:  # on a person's screen too; a script's output stays as it was
        log.info(line)
        if interactive:
            print(line, flush=True)

    lobby, guard = await build_lobby(config, wait_for_engine=False, say=say)
    engine = asyncio.ensure_future(_start_engine(lobby.pool))
    await asyncio.sleep(0)  # the pool is started: jobs queue for its workers from now on
    shown = [asyncio.ensure_future(_show_engine(lobby.pool, engine))] if interactive else []
    stop = asyncio.Event()
    on_signals(stop.set)
    lost: list[str] = []

    def guard_lost(why: str) -> None:  # two consoles would run the same clocks: this one stops
        lost.append(why)
        stop.set()

    watching = asyncio.ensure_future(guard.watch(guard_lost))
    try:
        status = await console_main(
            lobby, sys.stdin, sys.stdout, stop=stop, engine=engine, banner=not interactive
        )
    finally:
        for task in (engine, watching, *shown):
            task.cancel()
        await asyncio.gather(engine, watching, *shown, return_exceptions=True)
        await shut_down(lobby, guard)
    if lost:
        raise StartError(lost[0])
    return status


async def run_discord(config: Config) -> int:
    import discord

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
    lost: list[str] = []

    def guard_lost(why: str) -> None:  # two bots would run the same clocks: this one stops
        lost.append(why)
        stopping()

    watching = asyncio.ensure_future(guard.watch(guard_lost))
    try:
        async with bot:
            await _log_in(bot, config.token or "", stop)
            if not bot.is_closed():
                await bot.connect(reconnect=True)
    except discord.LoginFailure:
        raise StartError("Discord refused the token (DISCORD_TOKEN): check it") from None
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await shut_down(lobby, guard)
    if lost:
        raise StartError(lost[0])
    return 0


async def _log_in(bot: BoardBot, token: str, stop: asyncio.Event) -> None:
    """Log in, trying again with a growing pause while Discord cannot be reached (a network
    down at boot is common for a service); one line each time, no traceback."""
    import aiohttp  # installed with discord.py
    import discord

    pause = 5.0
    while not bot.is_closed():
        try:
            await bot.login(token)
            return
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            log.warning("cannot reach Discord (%s); trying again in %.0f s", exc, pause)
        except discord.HTTPException as exc:
            if exc.status < 500:
                raise
            log.warning("Discord answered %s; trying again in %.0f s", exc.status, pause)
        with contextlib.suppress(TimeoutError):  # a stop signal ends the pause at once
            await asyncio.wait_for(stop.wait(), pause)
        pause = min(pause * 2, 300.0)


def print_commands() -> int:
    from cogs.client import command_payloads

    print(json.dumps(command_payloads(), indent=2, ensure_ascii=False))
    return 0


def migrate(argv: list[str]) -> int:
    """`python bot.py migrate --from sqlite:PATH --to postgresql://...`: copy the history,
    ratings and learned memory into a new PostgreSQL database, verified (db/copy.py)."""
    from db.backend import check_url, redact
    from db.copy import BadRowError, copy_sqlite_to_postgres, describe
    from db.errors import StoreError

    parser = argparse.ArgumentParser(
        prog="bot.py migrate",
        description="Copy a SQLite database (matches, moves, ratings, learned memory, ...) into"
        " a new, empty PostgreSQL database; every table is verified by its count and checksum.",
    )
    parser.add_argument("--from", dest="source", required=True, metavar="sqlite:PATH")
    parser.add_argument("--to", dest="target", required=True, metavar="postgresql://...")
    args = parser.parse_args(argv)
    source: str = args.source
    target: str = args.target
    if not source.startswith("sqlite:") or source == "sqlite:":
        print(f"error: --from {source!r}: expected sqlite:PATH", file=sys.stderr)
        return 2
    problem = check_url(target)
    if problem is not None:
        print(f"error: --to {redact(target)!r}: {problem}", file=sys.stderr)
        return 2
    path = source.removeprefix("sqlite:")
    try:
        copies = asyncio.run(copy_sqlite_to_postgres(path, target, progress=print))
    except BadRowError as exc:  # bad input: the source must be mended first
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (StoreError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(describe(copies, path, target))
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


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["migrate"]:
        return migrate(args_in[1:])
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
    args = parser.parse_args(args_in)
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
