"""The project's bot on the harness, and readers for its boards (tests of the Discord face).

``make_bot`` is what conftest's ``env`` fixture and the restart tests build; the readers
pick buttons and text out of a message as Discord stores it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cogs.client import BoardBot
from db.store import Store
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from tests.clock import Clock
from tests.harness import Call, Harness, user

ALICE = user(101, "alice")
BOB = user(102, "bob")
CAROL = user(103, "carol")
MOD = user(104, "mod", permissions=0x2000 | 0x400 | 0x800)  # manage messages + view + send


async def no_sleep(_: float) -> None:
    await asyncio.sleep(0)


async def make_bot(
    db: Path, clock: Clock, pool: EnginePool, messages: dict[int, Any] | None = None
) -> tuple[BoardBot, Harness]:
    """The bot on `db`; `messages`: what Discord shows from before (a restart)."""
    store = await Store.open(db, clock=clock)
    # No pause between challenges of a pair here (tests/cogs/test_abuse.py tests the limits).
    config = LobbyConfig(seed=7, challenge_cooldown=0)
    lobby = Lobby(store, pool, config, clock=clock, sleep=no_sleep)
    bot = BoardBot(lobby, run_clock=False)
    bot.editor.play_interval = 0.0
    bot.editor.spectate_interval = 0.0
    bot.editor.channel_rate = bot.editor.global_rate = None
    harness = await Harness.create(bot, messages=messages)
    return bot, harness


def callbacks(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.is_callback]


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for row in message.get("components", []) for c in row.get("components", [])]


def column_ids(message: dict[str, Any], enabled_only: bool = True) -> list[str]:
    return [
        b["custom_id"]
        for b in buttons(message)
        if b.get("custom_id", "").startswith("c4:") and not (enabled_only and b.get("disabled"))
    ]


def description(message: dict[str, Any]) -> str:
    return message["embeds"][0]["description"]
