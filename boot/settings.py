"""The settings: read from the environment and the .env file, each checked against its range
(a bad one stops the start with one line naming it), and where the project's files are."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from boot.envfile import read_dotenv
from boot.errors import ConfigError

if TYPE_CHECKING:  # imported when used: the first screen must not wait for them
    from db.shards import Shards
    from lobby.core import LobbyConfig

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
#: The project folder (bot.py's). The .env, a relative BOARDBOT_DB and the default database
#: are taken from here, wherever the bot is started from: one rule, so the bot started from
#: another folder still finds its settings and its history together.
PROJECT = Path(__file__).resolve().parent.parent
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
        values = read_dotenv(dotenv)
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


def settings_line(config: Config) -> str:
    """Where the settings came from, said at the start."""
    if config.dotenv is not None:
        return f"settings: read {config.dotenv} (the environment overrides it)"
    return f"settings: no {DOTENV}; the environment only"
