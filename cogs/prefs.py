"""`/prefs`: what each member prefers, kept by the lobby (`lobby.prefs`). Today one choice: how
boards are shown, the emoji grid with the position in words under it, or a picture whose alt
text is those words (for screen readers, and clients where the emoji grid misaligns)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from cogs.actions import Reply, person

if TYPE_CHECKING:
    from cogs.client import BoardBot

#: What each board style means, in the reply.
STYLE_TEXT = {
    "emoji": "as emoji, with the position in words under the board",
    "image": "as a picture, with the position in words as its alt text",
}


class Prefs(commands.Cog):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot

    @app_commands.command(name="prefs", description="How the bot shows your boards")
    @app_commands.describe(board="emoji (the default) or image: a picture with alt text")
    async def prefs(
        self,
        interaction: discord.Interaction,
        board: Literal["emoji", "image"] | None = None,
    ) -> None:
        """Without an option: the member's preferences; with one: kept, then shown."""
        me = person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:  # a first write may be slow
            if board is None:
                style = await self.bot.lobby.board_style(me)
                await reply.send(
                    f"Your boards show {STYLE_TEXT[style]}. Change it with /prefs board:"
                )
                return
            style = await self.bot.lobby.set_board_style(me, board)
            await reply.send(
                f"Your boards now show {STYLE_TEXT[style]}, from their next move (in a match "
                "with several people, a picture if any of them prefers one)."
            )
