"""The values a command line holds, read and checked: player names, games, match ids, files.

Every bad value raises `UsageError` with the words to show after `error: `.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable
from pathlib import Path

from engine.agents import registry
from engine.games.catalog import GAMES, offer

MAX_NAME = 32


class UsageError(Exception):
    """A bad command line; the message is shown after `error: `."""


def is_agent_name(word: str) -> bool:
    """A level or agent name: `minimax:depth=4` is a value, not an unknown option `minimax`."""
    return word in registry.AGENTS or any(word in levels for levels in registry.LEVELS.values())


def looks_like_a_bot(name: str) -> bool:
    """A level or agent name, or `Bot (...)`: one of the bot's players, not a local name."""
    folded = name.strip().casefold()
    return folded.startswith("bot") or is_agent_name(folded)


def check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise UsageError(f"a player name has 1 to {MAX_NAME} characters")
    if not name.isprintable() or name.startswith("/"):
        raise UsageError(f"{name!r} cannot be a player name")
    folded = name.casefold()
    if folded.startswith("bot") or is_agent_name(folded):  # the bot's players are "Bot (...)"
        raise UsageError(f"{name!r} looks like one of the bot's players: choose another name")
    return name


def default_name() -> str:
    """The login name, if it makes a player name; else "you"."""
    try:
        return check_name(getpass.getuser())
    except (UsageError, OSError, KeyError):
        return "you"


def offer_key(text: str) -> str:
    """What to play: an offer's key, a game's name or an alias (`c4`, `reversi`)."""
    try:
        return offer(text).key
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def game_name(text: str) -> str:
    """A game (for the listings, which are per game): its name, an alias or an offer's key."""
    try:
        return offer(text).game
    except ValueError:
        raise UsageError(f"unknown game {text!r}: choose one of {', '.join(GAMES)}") from None


def match_number(text: str, listed_by: str) -> int:
    raw = text.lstrip("#")
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise UsageError(f"{text!r} is not a match id (see {listed_by})")
    return int(raw)


def free_stem(folder: Path, stem: str, suffixes: Iterable[str]) -> Path:
    """`folder/stem`, or `stem-2`, `stem-3`... : the first with no file of any suffix."""
    n = 1
    while True:
        name = stem if n == 1 else f"{stem}-{n}"
        if not any((folder / f"{name}.{suffix}").exists() for suffix in suffixes):
            return folder / name
        n += 1
