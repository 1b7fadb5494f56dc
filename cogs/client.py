"""The Discord client: loads the cogs (the Games extension registers the persistent
components), wires the lobby."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord.ext import commands

from cogs.editor import BoardEditor
from cogs.errors import on_app_command_error
from cogs.render import ended_embed
from lobby.core import TRANSIENT, Lobby
from lobby.models import Challenge

log = logging.getLogger(__name__)

#: Extensions loaded at start, explicitly (a failure is logged, the others still load).
EXTENSIONS = ("cogs.games", "cogs.training", "cogs.coach", "cogs.puzzle", "cogs.tournament")


class BoardBot(commands.Bot):
    def __init__(
        self,
        lobby: Lobby,
        *,
        dev_guild: int | None = None,
        sync_commands: bool = False,
        run_clock: bool = True,
        owner_specs: bool = False,
        home_guild: int | None = None,
        admin_role: int | None = None,
        **options: Any,
    ) -> None:
        # Slash commands and components need no privileged intents (no message content).
        intents = discord.Intents.none()
        intents.guilds = True
        # Nothing the bot says pings anyone unless that one message says whom (the challenged
        # person): a name people chose can never mention a role, @everyone or @here.
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        super().__init__(
            command_prefix=commands.when_mentioned, intents=intents, help_command=None, **options
        )
        self.lobby = lobby
        self.dev_guild = dev_guild
        self.sync_commands = sync_commands
        self.run_clock = run_clock
        #: The owner may name agents by raw spec (still checked and bounded) when this is on.
        self.owner_specs = owner_specs
        #: Who may train: the owner, and members with `admin_role` in `home_guild`.
        self.home_guild = home_guild
        self.admin_role = admin_role
        self.editor = BoardEditor(self, lobby)
        #: Gateway links lost and not back yet (None: the one connection; else shard ids).
        self._down: set[int | None] = set()
        #: Who owns the bot (overridable in tests; discord.py asks the API once and caches).
        self.owner_check: Callable[[discord.abc.User], Awaitable[bool]] = self.is_owner

    async def owns(self, user: discord.abc.User) -> bool:
        try:
            return await self.owner_check(user)
        except discord.HTTPException:
            log.warning("cannot ask Discord who owns the bot")
            return False

    async def may_use_raw_specs(self, interaction: discord.Interaction) -> bool:
        """Raw agent specs are the owner's, and only if the bot is configured to allow them."""
        return self.owner_specs and await self.owns(interaction.user)

    async def may_administer(self, interaction: discord.Interaction) -> bool:
        """The owner, or a member with the admin role in the home server (training is global:
        its memory is the bot's, not one server's)."""
        if await self.owns(interaction.user):
            return True
        if self.home_guild is None or self.admin_role is None:
            return False
        if interaction.guild_id != self.home_guild:
            return False
        # The member's role ids as the gateway sent them (resolved Role objects need the
        # server's roles cached, which the bot does not need otherwise).
        ids = {int(r) for r in getattr(interaction.user, "_roles", ())}
        ids |= {role.id for role in getattr(interaction.user, "roles", ())}
        return self.admin_role in ids

    async def setup_hook(self) -> None:
        for name in EXTENSIONS:
            try:
                await self.load_extension(name)
            except Exception:
                log.exception("failed to load extension %s", name)
        self.tree.error(on_app_command_error)
        self.lobby.listeners.append(self.editor.submit)
        self.lobby.challenge_listeners.append(self._challenge_ended)
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
        try:
            await self.lobby.expire_challenges()  # those that expired while the bot was down
        except TRANSIENT as exc:  # the clock's next pass does it
            log.warning("challenges not expired yet: %s", exc)
        except Exception:  # never a reason not to start: the clock's passes try again
            log.exception("challenges not expired yet")
        log.info("resumed %d live matches", len(live))
        try:  # after the matches: a tournament goes on from its games as they are now
            await self.lobby.tournaments.resume()
        except Exception:  # never a reason not to start: the clock's sweeps try again
            log.exception("tournaments not resumed yet")
        if self.run_clock:
            self.lobby.spawn(self.lobby.run_clock())
            self.lobby.spawn(self.lobby.tournaments.run())

    async def _challenge_ended(self, challenge: Challenge) -> None:
        """An expired challenge's message loses its buttons (the lobby announces expiries)."""
        if challenge.channel_id is None or challenge.message_id is None:
            return
        channel = self.get_partial_messageable(challenge.channel_id)
        message = channel.get_partial_message(challenge.message_id)
        # Deleted, or no access: nothing to grey out, and the buttons refuse it anyway.
        with contextlib.suppress(discord.HTTPException):
            await message.edit(content=None, embed=ended_embed(challenge.status), view=None)

    # Where the bot's boards go away: the bot left a guild (removed, or the guild deleted), a
    # channel or thread was deleted. Their live matches end unrated (`unreachable`): nobody
    # can see or play them, so nobody may lose them on time.

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self._guild_gone(guild.id)

    async def _guild_gone(self, guild_id: int) -> None:
        self.editor.gone(guild_id=guild_id)
        ended = await self.lobby.abandon_in(guild_id=guild_id)
        log.info("left guild %s: %d live matches ended unrated", guild_id, len(ended))

    async def _find_left_guilds(self, shard_id: int | None) -> None:
        """A guild the bot was removed from while it was away (stopped, or the event lost) is
        missing from READY, which lists every guild the bot is in, unavailable ones included:
        its live matches end unrated at once, before a clock can run out. With shards, only
        the guilds of the shard that is ready are looked at (the others' are not known yet)."""
        try:
            guild_ids = await self.lobby.live_guilds()
        except TRANSIENT as exc:  # the store is down: the editor meets a gone guild later
            log.warning("could not list the guilds with live matches: %s", exc)
            return
        for guild_id in guild_ids:
            if shard_id is not None and (guild_id >> 22) % (self.shard_count or 1) != shard_id:
                continue
            if self.get_guild(guild_id) is None:
                await self._guild_gone(guild_id)

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        await self._channel_gone(channel.id)

    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        await self._channel_gone(payload.thread_id)

    async def _channel_gone(self, channel_id: int) -> None:
        self.editor.gone(channel_id=channel_id)
        ended = await self.lobby.abandon_in(channel_id=channel_id)
        if ended:
            log.info("channel %s deleted: %d live matches ended unrated", channel_id, len(ended))

    # While Discord cannot reach the bot (a gateway outage, a reconnect) or a guild is out,
    # nobody there can move: people's clocks do not run out, and when the link is back every
    # person to move gets the resume grace, as after a restart. `_down` holds the lost links
    # (None: the one connection; a shard id for each shard's).

    async def on_disconnect(self) -> None:
        self._link_lost(None)

    async def on_resumed(self) -> None:
        await self._link_back(None)

    async def on_ready(self) -> None:
        await self._link_back(None)
        await self._find_left_guilds(None)

    async def on_guild_unavailable(self, guild: discord.Guild) -> None:
        self.lobby.pause_clocks(guild.id)

    async def on_guild_available(self, guild: discord.Guild) -> None:
        await self.lobby.resume_clocks(guild.id)  # nothing unless it was out
        await self._find_deleted_channels(guild)

    async def _find_deleted_channels(self, guild: discord.Guild) -> None:
        """A channel deleted while the bot was away (stopped, or its event lost) is missing
        from the guild Discord sends at a connection: its live matches end unrated at once,
        before a clock can run out there. Discord is asked about each missing one (an
        archived thread is missing too, and is not gone)."""
        try:
            channels = await self.lobby.live_channels_in(guild.id)
        except TRANSIENT as exc:  # the store is down: the editor meets a gone channel later
            log.warning("could not list the live matches of guild %s: %s", guild.id, exc)
            return
        for channel_id in channels:
            if guild.get_channel_or_thread(channel_id) is not None:
                continue
            try:
                await self.fetch_channel(channel_id)
            except discord.NotFound:
                await self._channel_gone(channel_id)
            except discord.HTTPException as exc:
                # No access, or Discord failing: the editor meets it at the next edit.
                log.warning("could not look up channel %s: %s", channel_id, exc)

    def _link_lost(self, shard_id: int | None) -> None:
        self._down.add(shard_id)
        self.lobby.pause_clocks()

    async def _link_back(self, shard_id: int | None) -> None:
        self._down.discard(shard_id)
        if not self._down:
            await self.lobby.resume_clocks()  # nothing unless it was paused

    async def close(self) -> None:
        await self.editor.close()
        await super().close()


class ShardedBoardBot(BoardBot, commands.AutoShardedBot):
    """The bot over some of the bot's shards (`shard_count`, `shard_ids`), one gateway
    connection each; for a bot in more guilds than one connection may serve. The lobby it is
    given owns exactly those shards' guilds (bot.py sets it up). Clocks wait while any of its
    shards is disconnected (a shard's events say which; the shared ones are left alone)."""

    async def on_disconnect(self) -> None:
        return None

    async def on_resumed(self) -> None:
        return None

    async def on_ready(self) -> None:
        return None

    async def on_shard_disconnect(self, shard_id: int) -> None:
        self._link_lost(shard_id)

    async def on_shard_resumed(self, shard_id: int) -> None:
        await self._link_back(shard_id)

    async def on_shard_ready(self, shard_id: int) -> None:
        await self._link_back(shard_id)
        await self._find_left_guilds(shard_id)


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
