"""Composition root: config -> Store -> EnginePool -> Lobby -> Discord bot, or the local console.

`python bot.py` runs the Discord bot when DISCORD_TOKEN is set and the local console front end
otherwise; `python bot.py --print-commands` prints the application commands as the JSON that
would be synced.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("boardbot")


@dataclass(frozen=True)
class Config:
    """Settings from the environment (and an optional .env file; the environment wins)."""

    token: str | None = None
    db_path: str = "data/boardbot.db"
    workers: int = 2
    dev_guild: int | None = None
    turn_seconds: float = 600.0
    resume_grace: float = 120.0
    job_seconds: float = 30.0
    sync_commands: bool = False
    log_level: str | None = None  # None: INFO for the Discord bot, WARNING for the console

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, dotenv: Path | None = None) -> Config:
        values = dict(_read_dotenv(dotenv or Path(".env")))
        values.update(os.environ if env is None else env)

        def number(name: str, default: float, kind: type = float) -> float:
            raw = values.get(name)
            if raw in (None, ""):
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise SystemExit(f"config error: {name}={raw!r} is not a number") from None
            if value <= 0:
                raise SystemExit(f"config error: {name} must be positive")
            return float(value)

        guild = values.get("BOARDBOT_DEV_GUILD") or None
        if guild is not None and not guild.isdigit():
            raise SystemExit(f"config error: BOARDBOT_DEV_GUILD={guild!r} is not a guild id")
        return cls(
            token=values.get("DISCORD_TOKEN") or None,
            db_path=values.get("BOARDBOT_DB") or cls.db_path,
            workers=int(number("BOARDBOT_WORKERS", cls.workers, int)),
            dev_guild=int(guild) if guild else None,
            turn_seconds=number("BOARDBOT_TURN_SECONDS", cls.turn_seconds),
            resume_grace=number("BOARDBOT_RESUME_GRACE", cls.resume_grace),
            job_seconds=number("BOARDBOT_JOB_SECONDS", cls.job_seconds),
            sync_commands=values.get("BOARDBOT_SYNC", "").lower() in ("1", "true", "yes"),
            log_level=(values.get("BOARDBOT_LOG_LEVEL") or "").upper() or None,
        )


def _read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines; blank lines and # comments ignored; quotes around values stripped."""
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip("'\"")
    return out


class StartError(Exception):
    """The bot cannot start; the message is the one line to show."""


async def build_lobby(config: Config):  # type: ignore[no-untyped-def]
    """Claim the database, open the store, start and warm the engine pool, make the lobby.

    Returns (lobby, guard): the guard holds the database until `shut_down` releases it.
    """
    import sqlite3

    from db.errors import StoreError
    from db.instance import InstanceLock
    from db.store import Store
    from lobby.core import Lobby, LobbyConfig
    from lobby.pool import EnginePool

    guard = InstanceLock(config.db_path)
    try:
        guard.acquire()
        store = await Store.open(config.db_path)
    except (StoreError, sqlite3.Error, OSError) as exc:
        guard.release()
        raise StartError(f"cannot use the database {config.db_path}: {exc}") from None
    pool = EnginePool(workers=config.workers, ceiling=config.job_seconds)
    try:
        await pool.start()
    except BaseException:
        await pool.close()
        await store.close()
        guard.release()
        raise
    lobby_config = LobbyConfig(turn_seconds=config.turn_seconds, resume_grace=config.resume_grace)
    return Lobby(store, pool, lobby_config), guard


async def shut_down(lobby, guard) -> None:  # type: ignore[no-untyped-def]
    """In order: agent turns stop (a commit in flight completes), learning still in the
    outbox is applied, the engine pool closes, the store closes, the database is released."""
    await lobby.close()
    await lobby.pool.close()
    await lobby.store.close()
    guard.release()


def on_signals(callback) -> None:  # type: ignore[no-untyped-def]
    """Call `callback()` on SIGTERM and SIGINT (a service manager's stop, or Ctrl-C)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
            loop.add_signal_handler(sig, callback)


async def run_console(config: Config) -> int:
    from console import run_console as console_main

    # A console that cannot show an emoji (or reads a stray byte) replaces it, never crashes.
    for stream in (sys.stdin, sys.stdout):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    lobby, guard = await build_lobby(config)
    stop = asyncio.Event()
    on_signals(stop.set)
    try:
        return await console_main(lobby, sys.stdin, sys.stdout, stop=stop)
    finally:
        await shut_down(lobby, guard)


async def run_discord(config: Config) -> int:
    from cogs.client import BoardBot

    lobby, guard = await build_lobby(config)
    bot = BoardBot(lobby, dev_guild=config.dev_guild, sync_commands=config.sync_commands)
    on_signals(lambda: asyncio.ensure_future(bot.close()))
    try:
        async with bot:
            await bot.start(config.token or "")
    finally:
        await shut_down(lobby, guard)
    return 0


def print_commands() -> int:
    from cogs.client import command_payloads

    print(json.dumps(command_payloads(), indent=2, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--print-commands", action="store_true", help="print the app commands as JSON"
    )
    parser.add_argument("--console", action="store_true", help="the console even with a token")
    args = parser.parse_args(argv)
    if args.print_commands:
        return print_commands()
    config = Config.from_env()
    use_discord = bool(config.token) and not args.console
    logging.basicConfig(
        level=config.log_level or ("INFO" if use_discord else "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
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
