"""The Discord client: loads the cogs, registers persistent components, wires the lobby."""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord.ext import commands

from cogs.components import DYNAMIC_ITEMS
from cogs.editor import BoardEditor
from cogs.errors import on_app_command_error
from lobby.core import Lobby

log = logging.getLogger(__name__)

#: Extensions loaded at start, explicitly (a failure is logged, the others still load).
EXTENSIONS = ("cogs.games", "cogs.training")


class BoardBot(commands.Bot):
    def __init__(
        self,
        lobby: Lobby,
        *,
        dev_guild: int | None = None,
        sync_commands: bool = False,
        run_clock: bool = True,
        challenge_seconds: float = 300.0,
    ) -> None:
        # Slash commands and components need no privileged intents (no message content).
        intents = discord.Intents.none()
        intents.guilds = True
        super().__init__(command_prefix=commands.when_mentioned, intents=intents, help_command=None)
        self.lobby = lobby
        self.dev_guild = dev_guild
        self.sync_commands = sync_commands
        self.run_clock = run_clock
        self.challenge_seconds = challenge_seconds
        self.editor = BoardEditor(self)
        #: Challenge messages still waiting for an answer (their expiry timer edits them).
        self.pending_challenges: set[int] = set()

    async def setup_hook(self) -> None:
        for name in EXTENSIONS:
            try:
                await self.load_extension(name)
            except Exception:
                log.exception("failed to load extension %s", name)
        self.add_dynamic_items(*DYNAMIC_ITEMS)
        self.tree.error(on_app_command_error)
        self.lobby.listeners.append(self.editor.submit)
        if self.dev_guild is not None:
            guild = discord.Object(id=self.dev_guild)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        elif self.sync_commands:
            await self.tree.sync()
        # Matches survive restarts: what a kill interrupted is finished, every live board is
        # edited once to its stored state (the editor listens), agents whose turn it was start
        # thinking again, and boards keep working through their DynamicItem custom ids.
        live = await self.lobby.resume()
        log.info("resumed %d live matches", len(live))
        if self.run_clock:
            self.lobby.spawn(self.lobby.run_clock())

    async def close(self) -> None:
        await self.editor.close()
        await super().close()


def command_payloads() -> list[dict[str, Any]]:
    """The application commands as the JSON `tree.sync()` would send (every extension's)."""
    import asyncio
    import importlib

    async def build() -> list[dict[str, Any]]:
        bot = BoardBot(lobby=None, run_clock=False)  # type: ignore[arg-type]
        for name in EXTENSIONS:
            await importlib.import_module(name).setup(bot)
        payloads = [cmd.to_dict(bot.tree) for cmd in bot.tree.get_commands()]
        await bot.close()
        return payloads

    return asyncio.run(build())
