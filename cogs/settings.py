"""`/settings`: a server's settings for the bot, for members with Manage Server (the server's
owner has it) and the bot's owner, shown as one embed and changed with its options (the line a
member gets for a game started elsewhere: `cogs/channels.py`).

The options are bounded as the lobby bounds the values (`lobby/settings.py`); text options
(channel mentions, lists of games and levels) are read here and checked again by the lobby, so
one bad value changes nothing. Every change is stored with who made it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from cogs.actions import Reply, person
from cogs.names import safe_name
from engine.games.catalog import OFFERS
from lobby.errors import BadRequest
from lobby.settings import SPECS, ServerSettings

if TYPE_CHECKING:
    from cogs.client import BoardBot

COLOUR = 0x5865F2
#: A channel as typed: its mention (`<#id>`, what the client inserts for `#name`) or its id.
_CHANNEL = re.compile(r"^(?:<#(\d{1,20})>|(\d{1,20}))$")
#: Words that put a list setting back to the bot's own (every channel, game or level).
ALL = ("any", "all")
SWITCH = {"allowed": True, "refused": False}
#: `reset:` takes a setting's name or `all`.
RESET_CHOICES = [app_commands.Choice(name=n, value=n) for n in (*SPECS, "all")]


def channel_ids(text: str, guild: discord.Guild | None, what: str) -> list[int]:
    """The channels a text names (mentions or ids, separated by spaces or commas); each must
    be a channel of this server when the server is known."""
    ids = []
    for token in re.split(r"[\s,]+", text.strip()):
        if not token:
            continue
        found = _CHANNEL.match(token)
        if found is None:
            raise BadRequest(f"{what}: {token[:40]!r} is not a #channel")
        ident = int(found.group(1) or found.group(2))
        if guild is not None and guild.get_channel_or_thread(ident) is None:
            raise BadRequest(f"{what}: there is no channel {ident} on this server")
        ids.append(ident)
    if not ids:
        raise BadRequest(f"{what}: name at least one #channel")
    return ids


def words(text: str) -> list[str] | None:
    """A list of keys as typed (`connect4, othello`), or None for `all`/`any`."""
    items = [w.lower() for w in re.split(r"[\s,]+", text.strip()) if w]
    return None if len(items) == 1 and items[0] in ALL else items


def shown(found: ServerSettings, name: str) -> str:
    """A setting's value in words, and whether it is the bot's own."""
    value = found.value(name)
    kind = SPECS[name].kind
    if value is None:
        text = {
            "ids": "any channel",
            "id": "none",
            "keys": "all",
            "count": "no limit",
        }.get(kind, "the bot's own")
    elif kind == "ids":
        text = " ".join(f"<#{c}>" for c in value)
    elif kind == "id":
        text = f"<#{value}>"
    elif kind == "keys":
        text = ", ".join(value)
    elif kind == "switch":
        text = "allowed" if value else "refused"
    else:
        text = f"{value:g}"
    return text if found.is_set(name) else f"{text} (the bot's own)"


def settings_embed(found: ServerSettings) -> discord.Embed:
    """One embed: every setting with its value; who changed them last."""
    embed = discord.Embed(title="Settings of this server", colour=COLOUR)
    if found.changed_by is not None and found.changed_at is not None:
        embed.description = (
            f"Last changed by **{safe_name(found.changed_by)}** <t:{int(found.changed_at)}:R>."
        )
    else:
        embed.description = "Nothing changed yet: the bot's own settings apply."
    for name, spec in SPECS.items():
        embed.add_field(name=spec.label, value=shown(found, name)[:1024], inline=False)
    embed.set_footer(text="Change them with the options of /settings; reset:NAME undoes one.")
    return embed


async def may_administer(interaction: discord.Interaction) -> bool:
    """Manage Server (the server's owner has every permission), or the bot's owner."""
    perms = interaction.permissions
    if perms.manage_guild or perms.administrator:
        return True
    bot: BoardBot = interaction.client  # type: ignore[assignment]
    return await bot.owns(interaction.user)


class Settings(commands.Cog):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot

    @app_commands.command(name="settings", description="This server's settings for the bot")
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.describe(
        channels="Where games may be started: #channel mentions, or any",
        turn_seconds="A person's clock per move, in seconds",
        bot_games="Live games against the bot per member (0: no limit)",
        bot_matches="Live bot matches one member started (0: no limit)",
        server_bot_matches="Live bot matches in this server (0: no limit)",
        challenges="Open challenges per member (0: no limit)",
        games="The games offered (" + " ".join(o.key for o in OFFERS) + "), or all",
        levels="The levels offered (easy medium hard expert), or all",
        rated_hints="Hints in rated games (a hint makes a game unrated)",
        rated_analysis="Analyses of this server's rated games",
        announcements="The channel for announcements: a #channel, or none",
        reset="Put one setting, or all, back to the bot's own",
    )
    @app_commands.choices(reset=RESET_CHOICES)
    async def settings(
        self,
        interaction: discord.Interaction,
        channels: app_commands.Range[str, 1, 1000] | None = None,
        turn_seconds: app_commands.Range[int, 30, 604800] | None = None,
        bot_games: app_commands.Range[int, 0, 100] | None = None,
        bot_matches: app_commands.Range[int, 0, 100] | None = None,
        server_bot_matches: app_commands.Range[int, 0, 1000] | None = None,
        challenges: app_commands.Range[int, 0, 100] | None = None,
        games: app_commands.Range[str, 1, 200] | None = None,
        levels: app_commands.Range[str, 1, 100] | None = None,
        rated_hints: Literal["allowed", "refused"] | None = None,
        rated_analysis: Literal["allowed", "refused"] | None = None,
        announcements: app_commands.Range[str, 1, 100] | None = None,
        reset: str | None = None,
    ) -> None:
        """Without options: the settings; with some: each checked, all changed or none."""
        if not await may_administer(interaction):
            raise app_commands.MissingPermissions(["manage_guild"])
        guild = interaction.guild
        texts = {
            "channels": channels, "games": games, "levels": levels, "rated_hints": rated_hints,
            "rated_analysis": rated_analysis, "announcements": announcements, "reset": reset,
        }  # fmt: skip
        for name, text in texts.items():  # a forged request can send a number where text goes
            if text is not None and not isinstance(text, str):
                raise BadRequest(f"{name}: expected text, not {text!r}")
        changes: dict[str, Any] = {}
        if reset is not None:
            if reset != "all" and reset not in SPECS:
                raise BadRequest(f"reset: {reset[:40]!r} is not a setting")
            changes.update(dict.fromkeys(SPECS if reset == "all" else [reset]))
        if channels is not None:
            any_channel = channels.strip().lower() in ALL
            changes["channels"] = None if any_channel else channel_ids(channels, guild, "channels")
        numbers = {
            "turn_seconds": turn_seconds,
            "bot_games": bot_games,
            "bot_matches": bot_matches,
            "server_bot_matches": server_bot_matches,
            "challenges": challenges,
        }
        changes.update({k: v for k, v in numbers.items() if v is not None})
        for name, text in (("games", games), ("levels", levels)):
            if text is not None:
                changes[name] = words(text)
        for name, switch in (("rated_hints", rated_hints), ("rated_analysis", rated_analysis)):
            if switch is not None:
                if switch not in SWITCH:  # not one of the choices: a forged request
                    raise BadRequest(f"{name}: allowed or refused")
                changes[name] = SWITCH[switch]
        if announcements is not None:
            none = announcements.strip().lower() == "none"
            found_ids = [] if none else channel_ids(announcements, guild, "announcements")
            if len(found_ids) > 1:
                raise BadRequest("announcements: name one #channel, or none")
            changes["announcements"] = found_ids[0] if found_ids else None
        async with Reply(interaction, ephemeral=True) as reply:
            lobby, who = self.bot.lobby, person(interaction.user)
            found = await lobby.change_settings(interaction.guild_id, who, changes)
            await reply.send(embed=settings_embed(found))
