"""One error pipeline for slash commands and components: one ephemeral line, no traceback.

People see the lobby's own words for expected refusals (not your turn, out of date, ...); an
unexpected exception is logged with its traceback and the person gets a short apology. If the
interaction was already answered (e.g. deferred), the reply goes out as a followup.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

import discord
from discord import app_commands

from cogs.names import safe_line
from lobby.core import TRANSIENT
from lobby.errors import LobbyError

log = logging.getLogger(__name__)

#: Set in `interaction.extras` while a "thinking..." message a deferral made is not filled:
#: "public" or "ephemeral" (a refusal then takes its place, see `send_error`).
PLACEHOLDER = "boardbot_placeholder"


def describe(error: BaseException) -> str:
    """The message a person should see for `error`."""
    original = getattr(error, "original", None) or error
    if isinstance(original, LobbyError):
        return str(original)
    if isinstance(error, app_commands.MissingPermissions):
        perms = ", ".join(p.replace("_", " ") for p in error.missing_permissions)
        return f"You need the {perms} permission for that."
    if isinstance(error, app_commands.NoPrivateMessage):
        return "That command only works in a server."
    if isinstance(error, app_commands.TransformerError):
        return f"That option value is not valid: {error.value!r}."
    if isinstance(error, app_commands.CheckFailure):
        return "You cannot use that here."
    if isinstance(original, discord.HTTPException):  # Discord refused or failed a response
        log.warning("Discord failed a response: %s", original)
        return "Discord did not accept the bot's answer; please try again."
    if isinstance(original, TRANSIENT):  # busy, full for a moment: rolled back
        log.warning("the store failed an interaction: %s", original)
        return "The bot's database is busy right now; please try again in a moment."
    log.error("unexpected error in an interaction", exc_info=original)
    return "Something went wrong on our side; it has been logged."


async def send_error(interaction: discord.Interaction, message: str) -> None:
    """The line, ephemeral. A "thinking..." message a slow command left unfilled does not
    stay: an ephemeral one shows the line, a public one is removed."""
    text = safe_line(f"⚠️ {message}")[:2000]
    placeholder = interaction.extras.pop(PLACEHOLDER, None)
    try:
        if placeholder == "ephemeral":
            await interaction.edit_original_response(content=text)
            return
        if placeholder == "public":
            with contextlib.suppress(discord.HTTPException):
                await interaction.delete_original_response()
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True)
        else:
            await interaction.response.send_message(text, ephemeral=True)
    except discord.HTTPException:
        log.warning("could not deliver an error reply: %s", message)


async def on_app_command_error(
    interaction: discord.Interaction, error: app_commands.AppCommandError
) -> None:
    await send_error(interaction, describe(error))


async def guarded(interaction: discord.Interaction, action: Callable[[], Awaitable[None]]) -> None:
    """Run a component callback; any failure goes through the same pipeline as commands.

    discord.py only logs exceptions from dynamic items, which would leave the person with
    "This interaction failed"; this answers them instead.
    """
    try:
        await action()
    except Exception as exc:  # every failure gets a reply; unexpected ones are logged
        await send_error(interaction, describe(exc))
