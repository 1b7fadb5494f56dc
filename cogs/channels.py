"""Where a server plays: a game started in a channel the server's settings do not list
(`/settings channels:`) is refused by the lobby (`NotHere`); on Discord the refusal names the
channels it plays in, which only Discord knows."""

from __future__ import annotations

import discord

from lobby.errors import BadRequest
from lobby.settings import NotHere


def elsewhere(interaction: discord.Interaction, refused: NotHere) -> BadRequest:
    """The one line for a game started where this server does not play."""
    guild = interaction.guild
    names = []
    for ident in refused.channels:
        channel = guild.get_channel_or_thread(ident) if guild is not None else None
        names.append(f"#{channel.name}" if channel is not None else f"channel {ident}")
    return BadRequest(f"on this server games are started in {', '.join(names)}")
