"""What each click and command does: translate Discord to lobby calls and answer in time.

Everything here answers the interaction first (within Discord's 3 s) and lets agent moves
arrive afterwards through the lobby's listener, which edits the board message.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import discord

from cogs.errors import guarded
from cogs.render import board_embed, board_view
from lobby.core import Lobby, Person, Snapshot, Where
from lobby.errors import BadRequest, NotInMatch

if TYPE_CHECKING:
    from cogs.client import BoardBot
    from cogs.components import ChallengeButton


def bot_of(interaction: discord.Interaction) -> BoardBot:
    return interaction.client  # type: ignore[return-value]


def person(user: discord.abc.User) -> Person:
    return Person("user", user.id, user.display_name)


def where(interaction: discord.Interaction) -> Where:
    return Where(interaction.guild_id, interaction.channel_id)


async def send_board(interaction: discord.Interaction, snap: Snapshot, content: str = "") -> None:
    """Answer with a new board message and remember it so later edits reach it."""
    bot = bot_of(interaction)
    response = await interaction.response.send_message(
        content=content or None,
        embed=board_embed(snap),
        view=board_view(snap),
        allowed_mentions=discord.AllowedMentions(users=True, roles=False, everyone=False),
    )
    message_id = response.message_id
    if message_id is not None:
        await bot.lobby.attach_message(
            snap.id, interaction.guild_id, interaction.channel_id, message_id
        )
    start_agents(bot.lobby, snap)


def start_agents(lobby: Lobby, snap: Snapshot) -> None:
    """If an agent is to move, let it think in the background (its move edits the board)."""
    if snap.live and snap.seat_to_move.is_agent:
        if snap.match.kind == "eve":
            lobby.spawn(lobby.run_botmatch(snap.id))
        else:
            lobby.spawn(lobby.advance(snap.id))


async def update_board(interaction: discord.Interaction, snap: Snapshot) -> None:
    """Answer a click by editing the clicked board in place (no global rate limit)."""
    await interaction.response.edit_message(embed=board_embed(snap), view=board_view(snap))


async def play_move(interaction: discord.Interaction, match_id: int, ply: int, move: int) -> None:
    async def act() -> None:
        bot = bot_of(interaction)
        bot.rendering.add(match_id)  # this response shows the move: the listener need not
        try:
            snap = await bot.lobby.play(match_id, person(interaction.user), move, ply)
            await update_board(interaction, snap)
        finally:
            bot.rendering.discard(match_id)
        start_agents(bot.lobby, snap)

    await guarded(interaction, act)


async def resign_button(interaction: discord.Interaction, match_id: int) -> None:
    async def act() -> None:
        bot = bot_of(interaction)
        bot.rendering.add(match_id)
        try:
            snap = await bot.lobby.resign(match_id, person(interaction.user))
            await update_board(interaction, snap)
        finally:
            bot.rendering.discard(match_id)

    await guarded(interaction, act)


async def rematch(interaction: discord.Interaction, match_id: int) -> None:
    """Same opponent, colours swapped: at once against the bot, as a new challenge to a person."""

    async def act() -> None:
        bot = bot_of(interaction)
        old = await bot.lobby.snapshot(match_id)
        me = await bot.lobby.player_for(person(interaction.user))
        seat = old.seat_index(me.id)
        if seat is None:
            raise NotInMatch("only the players of that match can ask for a rematch")
        other = old.seats[1 - seat]
        if other.is_agent:
            level = other.level or (other.spec.label() if other.spec else "easy")
            first = "bot" if seat == 0 else "me"
            snap = await bot.lobby.start_pve(
                person(interaction.user), old.match.game, level, first, where(interaction)
            )
            await send_board(interaction, snap)
            return
        if other.player.discord_id is None:
            raise BadRequest("that opponent cannot be reached from Discord")
        await send_challenge(interaction, other.player.discord_id, other.name, old.match.game)

    await guarded(interaction, act)


async def stop_botmatch(interaction: discord.Interaction, match_id: int) -> None:
    async def act() -> None:
        bot = bot_of(interaction)
        snap = await bot.lobby.snapshot(match_id)
        starter = snap.match.options.get("starter") or {}
        is_starter = starter.get("kind") == "user" and starter.get("ident") == interaction.user.id
        perms = getattr(interaction, "permissions", None)
        moderator = perms is not None and (perms.manage_messages or perms.manage_guild)
        if not (is_starter or moderator):
            raise NotInMatch("only the person who started this match or a moderator can stop it")
        bot.rendering.add(match_id)
        try:
            snap = await bot.lobby.stop(match_id)
            await update_board(interaction, snap)
        finally:
            bot.rendering.discard(match_id)

    await guarded(interaction, act)


def challenge_view(challenger: int, opponent: int, game: str, expires: int) -> discord.ui.View:
    from cogs.components import ChallengeButton

    view = discord.ui.View(timeout=None)
    view.add_item(ChallengeButton(True, challenger, opponent, game, expires))
    view.add_item(ChallengeButton(False, challenger, opponent, game, expires))
    return view


def challenge_embed(challenger: str, opponent: str, game: str, expires: int) -> discord.Embed:
    from lobby.present import GAME_TITLES

    return discord.Embed(
        title=f"{GAME_TITLES[game]} challenge",
        description=(
            f"**{challenger}** challenges **{opponent}** to {GAME_TITLES[game]}.\n"
            f"The challenge expires <t:{expires}:R>."
        ),
        colour=0xF1C40F,
    )


async def send_challenge(
    interaction: discord.Interaction, opponent_id: int, opponent_name: str, game: str
) -> None:
    bot = bot_of(interaction)
    if opponent_id == interaction.user.id:
        raise BadRequest("you cannot challenge yourself")
    await bot.lobby.player_for(person(interaction.user))  # remember the challenger's name
    expires = int(bot.lobby.clock() + bot.challenge_seconds)
    response = await interaction.response.send_message(
        content=f"<@{opponent_id}>",
        embed=challenge_embed(interaction.user.display_name, opponent_name, game, expires),
        view=challenge_view(interaction.user.id, opponent_id, game, expires),
        allowed_mentions=discord.AllowedMentions(users=True, roles=False, everyone=False),
    )
    if response.message_id is not None and interaction.channel_id is not None:
        schedule_expiry(bot, interaction.channel_id, response.message_id, bot.challenge_seconds)


def schedule_expiry(bot: BoardBot, channel_id: int, message_id: int, delay: float) -> None:
    """Turn an unanswered challenge into "expired" when its time is up (best effort).

    A timer, not a sleeping task, so nothing waits on it; after a restart the buttons still
    refuse an expired challenge when clicked, they just are not greyed out.
    """
    bot.pending_challenges.add(message_id)

    async def expire() -> None:
        if message_id not in bot.pending_challenges:
            return  # answered in time
        bot.pending_challenges.discard(message_id)
        message = bot.get_partial_messageable(channel_id).get_partial_message(message_id)
        embed = discord.Embed(description="This challenge has expired.", colour=0x95A5A6)
        # Deleted, or no access: nothing to grey out, and the buttons still refuse it.
        with contextlib.suppress(discord.HTTPException):
            await message.edit(content=None, embed=embed, view=None)

    asyncio.get_running_loop().call_later(delay, lambda: bot.lobby.spawn(expire()))


async def answer_challenge(interaction: discord.Interaction, button: ChallengeButton) -> None:
    async def act() -> None:
        bot = bot_of(interaction)
        user = interaction.user.id
        if user not in (button.challenger, button.opponent):
            raise NotInMatch("this challenge is not for you")
        if interaction.message is not None and (not button.accept or user == button.opponent):
            bot.pending_challenges.discard(interaction.message.id)
        if bot.lobby.clock() > button.expires:
            await interaction.response.edit_message(
                content=None,
                embed=discord.Embed(description="This challenge has expired.", colour=0x95A5A6),
                view=None,
            )
            return
        if not button.accept:
            what = "withdrawn" if user == button.challenger else "declined"
            await interaction.response.edit_message(
                content=None,
                embed=discord.Embed(description=f"The challenge was {what}.", colour=0x95A5A6),
                view=None,
            )
            return
        if user != button.opponent:
            raise NotInMatch("only the challenged player can accept")
        challenger = await bot.lobby.known_user(button.challenger)
        snap = await bot.lobby.start_pvp(
            challenger, person(interaction.user), button.game, where(interaction)
        )
        await interaction.response.edit_message(
            content=None, embed=board_embed(snap), view=board_view(snap)
        )
        if interaction.message is not None:
            await bot.lobby.attach_message(
                snap.id, interaction.guild_id, interaction.channel_id, interaction.message.id
            )

    await guarded(interaction, act)
