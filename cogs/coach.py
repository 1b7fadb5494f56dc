"""The coach on Discord: `/replay` (a finished match as an animated GIF and a PNG of its end,
drawn by the lobby in a thread, well under a second, so the answer comes without deferring),
`/analyse` (`cogs/analysis.py`), `/hint`, and `/retry` (`cogs/retry.py`)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from cogs.actions import person
from cogs.analysis import show_analysis
from cogs.names import safe_name
from cogs.retry import start_retry
from lobby import present
from lobby.errors import BadRequest

if TYPE_CHECKING:
    from cogs.client import BoardBot

MAX_MATCH_ID = 2**53 - 1  # the largest integer option Discord takes (a JSON-safe integer)


class Coach(commands.Cog):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot

    @app_commands.command(name="replay", description="A finished match as an animated picture")
    @app_commands.describe(match="The match number (default: your last finished match)")
    async def replay(
        self,
        interaction: discord.Interaction,
        match: app_commands.Range[int, 1, MAX_MATCH_ID] | None = None,
    ) -> None:
        files = await self.bot.lobby.replay(match, person(interaction.user))
        n = files.replay.match_id
        await interaction.response.send_message(
            f"Match #{n}: {safe_name(files.replay.result)}.",
            files=[
                discord.File(io.BytesIO(files.gif), filename=f"replay-{n}.gif"),
                discord.File(io.BytesIO(files.png), filename=f"final-{n}.png"),
            ],
        )

    @app_commands.command(name="analyse", description="Every move of a finished match judged")
    @app_commands.describe(match="The match number (default: your last finished match)")
    async def analyse(
        self,
        interaction: discord.Interaction,
        match: app_commands.Range[int, 1, MAX_MATCH_ID] | None = None,
    ) -> None:
        await show_analysis(interaction, match)

    @app_commands.command(
        name="retry", description="Try your worst moves of a finished match again"
    )
    @app_commands.describe(match="The match number (default: your last finished match)")
    async def retry(
        self,
        interaction: discord.Interaction,
        match: app_commands.Range[int, 1, MAX_MATCH_ID] | None = None,
    ) -> None:
        await start_retry(interaction, match)

    @app_commands.command(name="hint", description="The best move in your game against the bot")
    async def hint(self, interaction: discord.Interaction) -> None:
        """For the person's latest game against the bot in this channel; only they see it."""
        me = person(interaction.user)
        games = await self.bot.lobby.live_matches_of(me, interaction.channel_id)
        games = [m for m in games if m.kind == "pve"]
        if not games:
            raise BadRequest("you have no game against the bot in this channel")
        latest = max(games, key=lambda m: m.id)
        # The search takes up to a couple of seconds: answer within Discord's 3 s first.
        await interaction.response.defer(ephemeral=True, thinking=True)
        found, snap = await self.bot.lobby.hint(latest.id, me)
        text = present.hint_line(found, snap, self.bot.lobby.config.max_hints)
        await interaction.followup.send(text, ephemeral=True)


async def setup(bot: BoardBot) -> None:
    await bot.add_cog(Coach(bot))
