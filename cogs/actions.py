"""What each click and command does: translate Discord to lobby calls and answer in time.

The lobby owns the match: it stores every step, starts the agent's turn and announces each
change, which the board editor (cogs/editor.py) edits in. A response here shows what it can
(the clicked board, updated) inside `editor.responding`, so the editor knows what is shown
and edits in whatever the response did not show: a failed or late response never hides a
committed move. A new board is made by deferring first: the message exists (and has an id)
before the match is stored with it, so a failed response never leaves a live match nobody can
see.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import discord

from cogs.components import ChallengeButton
from cogs.editor import Shown
from cogs.names import safe_name
from cogs.render import analysis_embed, board_embed, board_view
from engine.games.catalog import offer, offer_of
from lobby import present
from lobby.core import Person, Snapshot, Where
from lobby.errors import (
    BadRequest,
    ChallengeOver,
    LobbyError,
    MatchOver,
    NotInMatch,
    StaleAction,
)
from lobby.models import Challenge

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger(__name__)

#: A click whose work takes longer than this is deferred first (Discord allows 3 s).
DEFER_AFTER = 1.0
STALE_NOTE = "That board was out of date; it now shows the current position."


#: An analysis still running after this many seconds gets a note saying so.
PROGRESS_AFTER = 2.0


def bot_of(interaction: discord.Interaction) -> BoardBot:
    return interaction.client  # type: ignore[return-value]


def person(user: discord.abc.User) -> Person:
    return Person("user", user.id, user.display_name)


def where(interaction: discord.Interaction, message_id: int | None = None) -> Where:
    return Where(interaction.guild_id, interaction.channel_id, message_id)


async def new_board(
    interaction: discord.Interaction,
    start: Callable[[Where], Awaitable[Snapshot]],
    content: str = "",
) -> Snapshot:
    """Answer with a new board. Once the lobby has checked the request, the interaction is
    deferred (its message now exists, with an id), the match is stored with that message,
    and the message is filled with the board (or the editor fills it if that fails). A bad
    request is refused before anything is shown or stored."""
    bot = bot_of(interaction)
    deferred = False

    async def show() -> int | None:
        nonlocal deferred
        response = await interaction.response.defer(thinking=True)
        deferred = True
        return response.message_id if response is not None else None

    try:
        snap = await start(Where(interaction.guild_id, interaction.channel_id, show=show))
    except Exception:
        if deferred:  # the match was not stored: take the "thinking..." message away
            with contextlib.suppress(discord.HTTPException):
                await interaction.delete_original_response()
        raise
    async with bot.editor.responding(snap.id) as shown:
        try:
            message = await interaction.edit_original_response(
                content=content or None,
                embed=board_embed(snap),
                view=board_view(snap),
            )
        except discord.HTTPException as exc:
            log.warning("could not show the new board of match %s (%s)", snap.id, exc)
            await bot.editor.submit(snap)
            return snap
        if snap.match.message_id is None:  # Discord did not say which message: it does now
            await bot.lobby.attach_message(
                snap.id, interaction.guild_id, interaction.channel_id, message.id
            )
            snap = await bot.lobby.snapshot(snap.id)
        shown(snap)
    return snap


async def show_board(
    interaction: discord.Interaction, shown: Shown, snap: Snapshot, *, deferred: bool = False
) -> None:
    """Answer a click by showing `snap` on its board; a failure is only logged (the editor
    then edits the board in with the bot token)."""
    embed, view = board_embed(snap), board_view(snap)
    try:
        if deferred or interaction.response.is_done():
            await interaction.edit_original_response(embed=embed, view=view)
        else:
            await interaction.response.edit_message(embed=embed, view=view)
    except discord.HTTPException as exc:
        log.warning("could not answer a click on match %s (%s); editing the board", snap.id, exc)
        return
    shown(snap)


async def answer_click(
    interaction: discord.Interaction, match_id: int, work: Awaitable[Snapshot]
) -> None:
    """Do a click's work and answer by updating its board; defer first if the work is slow.

    A click on an out-of-date board gets the current board and a short note.
    """
    bot = bot_of(interaction)
    async with bot.editor.responding(match_id) as shown:
        timer = _Deferral(interaction)
        try:
            snap = await work
        except (StaleAction, MatchOver) as exc:
            # The board is out of date (or shows a game that has ended): show the current one.
            await timer.settle()
            current = await bot.lobby.snapshot(match_id)
            await show_board(interaction, shown, current, deferred=timer.deferred)
            await notify(interaction, STALE_NOTE if isinstance(exc, StaleAction) else str(exc))
            return
        finally:
            await timer.settle()
        await show_board(interaction, shown, snap, deferred=timer.deferred)


class _Deferral:
    """Defers the interaction if the work is still running after DEFER_AFTER seconds.

    The work runs in the caller's task (its errors reach the error pipeline as they are);
    only the deferral runs beside it, and it never raises.
    """

    def __init__(self, interaction: discord.Interaction) -> None:
        self.interaction = interaction
        self.started = False
        self.deferred = False
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        await asyncio.sleep(DEFER_AFTER)
        self.started = True  # from here on the request is not cancelled: it may have landed
        with contextlib.suppress(discord.HTTPException):
            await self.interaction.response.defer()
            self.deferred = True

    async def settle(self) -> None:
        """Stop the timer, or wait for a deferral already sent."""
        if self.started:
            await asyncio.shield(self.task)
        elif not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def notify(interaction: discord.Interaction, text: str) -> None:
    """A short ephemeral line after the response (best effort)."""
    with contextlib.suppress(discord.HTTPException):
        await interaction.followup.send(text, ephemeral=True)


def origin(interaction: discord.Interaction) -> Where:
    """Where a click came from: the lobby checks it is the match's own board."""
    message = interaction.message
    return where(interaction, message.id if message is not None else None)


async def play_move(interaction: discord.Interaction, match_id: int, ply: int, move: int) -> None:
    lobby = bot_of(interaction).lobby
    who, via = person(interaction.user), origin(interaction)
    await answer_click(interaction, match_id, lobby.play(match_id, who, move, ply, via))


async def resign_button(interaction: discord.Interaction, match_id: int) -> None:
    lobby = bot_of(interaction).lobby
    who, via = person(interaction.user), origin(interaction)
    await answer_click(interaction, match_id, lobby.resign(match_id, who, via))


async def hint_button(interaction: discord.Interaction, match_id: int) -> None:
    """The hint, for the clicker's eyes only (deferred: the search takes a second or two)."""
    lobby = bot_of(interaction).lobby
    who, via = person(interaction.user), origin(interaction)
    await interaction.response.defer(ephemeral=True, thinking=True)
    found, snap = await lobby.hint(match_id, who, via)
    await interaction.followup.send(
        present.hint_line(found, snap, lobby.config.max_hints), ephemeral=True
    )


async def show_analysis(interaction: discord.Interaction, match_id: int | None) -> None:
    """The analysis of a finished match as a new public message with the replay's GIF. The
    request is checked before anything is shown; a note says it is running if it takes a
    while; a refusal after that replaces the note (one line, no traceback)."""
    lobby = bot_of(interaction).lobby
    who = person(interaction.user)
    target = await lobby.analysis_target(match_id, who)
    n = target.match_id
    await interaction.response.defer(thinking=True)
    job = asyncio.ensure_future(lobby.analyse(n, who))
    done, _ = await asyncio.wait({job}, timeout=PROGRESS_AFTER)
    if not done:
        seconds = lobby.analysis_seconds(target.game)
        with contextlib.suppress(discord.HTTPException):  # only a note: the answer follows
            await interaction.edit_original_response(
                content=f"Analysing match #{n} with the solvers (up to about {seconds:.0f} s)..."
            )
    try:
        report = await job
    except LobbyError as exc:
        await interaction.edit_original_response(content=f"⚠️ {exc}")
        return
    await interaction.edit_original_response(
        content=None,
        embed=analysis_embed(report),
        attachments=[discord.File(io.BytesIO(report.gif), filename=f"replay-{n}.gif")],
    )


async def rematch(interaction: discord.Interaction, match_id: int) -> None:
    """Same opponent, colours swapped: at once against the bot, as a new challenge to a person
    (both within the limits of what one member may start)."""
    bot = bot_of(interaction)
    old = await bot.lobby.snapshot(match_id)
    me = person(interaction.user)
    mine = [i for i, seat in enumerate(old.seats) if seat.player.discord_id == me.ident]
    if not mine:
        raise NotInMatch("only the players of that match can ask for a rematch")
    seat = mine[0]
    other = old.seats[1 - seat]
    again = offer_of(old.match.game, old.match.variant).key
    if other.is_agent:
        name = (other.player.agent_key or "").partition(":")[2] or "easy"
        first = "bot" if seat == 0 else "me"
        raw_ok = await bot.may_use_raw_specs(interaction)
        await new_board(
            interaction,
            lambda w: bot.lobby.start_pve(me, again, name, first, w, raw_ok=raw_ok),
        )
        return
    if other.player.discord_id is None:
        raise BadRequest("that opponent cannot be reached from Discord")
    await send_challenge(interaction, other.player.discord_id, other.name, again)


async def stop_botmatch(interaction: discord.Interaction, match_id: int) -> None:
    bot = bot_of(interaction)
    snap = await bot.lobby.snapshot(match_id)
    starter = snap.match.options.get("starter") or {}
    is_starter = starter.get("kind") == "user" and starter.get("ident") == interaction.user.id
    perms = getattr(interaction, "permissions", None)
    moderator = perms is not None and (perms.manage_messages or perms.manage_guild)
    if not (is_starter or moderator):
        raise NotInMatch("only the person who started this match or a moderator can stop it")
    await answer_click(interaction, match_id, bot.lobby.stop(match_id, via=origin(interaction)))


GREY = 0x95A5A6
CHALLENGE_END = {
    "accepted": "The challenge was accepted.",
    "declined": "The challenge was declined.",
    "withdrawn": "The challenge was withdrawn.",
    "expired": "This challenge has expired.",
}


def challenge_view(challenge_id: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(ChallengeButton(True, challenge_id))
    view.add_item(ChallengeButton(False, challenge_id))
    return view


def challenge_embed(challenger: str, opponent: str, game: str, expires: int) -> discord.Embed:
    """`game`: the key of the offer challenged to (a game, or a variant of one)."""
    name = offer(game).title
    return discord.Embed(
        title=f"{name} challenge",
        description=(
            f"**{safe_name(challenger)}** challenges **{safe_name(opponent)}** to {name}.\n"
            f"The challenge expires <t:{expires}:R>."
        ),
        colour=0xF1C40F,
    )


def ended_embed(status: str) -> discord.Embed:
    return discord.Embed(
        description=CHALLENGE_END.get(status, "This challenge is over."), colour=GREY
    )


async def send_challenge(
    interaction: discord.Interaction, opponent_id: int, opponent_name: str, game: str
) -> None:
    """A stored challenge with Accept/Decline buttons; the challenged person is pinged."""
    bot = bot_of(interaction)
    opponent = Person("user", opponent_id, opponent_name)
    challenge = await bot.lobby.challenge(
        person(interaction.user), opponent, game, where(interaction)
    )
    response = await interaction.response.send_message(
        content=f"<@{opponent_id}>",
        embed=challenge_embed(
            interaction.user.display_name, opponent_name, game, int(challenge.expires_at)
        ),
        view=challenge_view(challenge.id),
        # Only the challenged person is pinged: the content is their mention alone (names
        # are in the embed, and an embed pings nobody).
        allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True),
    )
    if response.message_id is not None:
        await bot.lobby.challenge_shown(challenge.id, response.message_id)


async def grey_challenge(bot: BoardBot, challenge: Challenge) -> None:
    """An expired challenge's message loses its buttons (the lobby announces expiries)."""
    if challenge.channel_id is None or challenge.message_id is None:
        return
    channel = bot.get_partial_messageable(challenge.channel_id)
    message = channel.get_partial_message(challenge.message_id)
    # Deleted, or no access: nothing to grey out, and the buttons refuse it anyway.
    with contextlib.suppress(discord.HTTPException):
        await message.edit(content=None, embed=ended_embed(challenge.status), view=None)


async def answer_challenge(
    interaction: discord.Interaction, challenge_id: int, accept: bool
) -> None:
    """Accept (the match starts on this message), decline or withdraw; a challenge already
    answered or expired is greyed out with how it ended."""
    bot = bot_of(interaction)
    message_id = interaction.message.id if interaction.message is not None else None
    via = where(interaction, message_id)
    try:
        challenge, snap = await bot.lobby.answer_challenge(
            challenge_id, person(interaction.user), accept, via
        )
    except ChallengeOver as exc:
        found = await bot.lobby.get_challenge(challenge_id)
        if found is not None and found.status != "accepted":  # an accepted one shows its board
            status = "expired" if found.status == "pending" else found.status
            with contextlib.suppress(discord.HTTPException):
                await interaction.response.edit_message(
                    content=None, embed=ended_embed(status), view=None
                )
        await notify_or_reply(interaction, str(exc))
        return
    if snap is None:
        await interaction.response.edit_message(
            content=None, embed=ended_embed(challenge.status), view=None
        )
        return
    async with bot.editor.responding(snap.id) as shown:
        try:
            await interaction.response.edit_message(
                content=None, embed=board_embed(snap), view=board_view(snap)
            )
        except discord.HTTPException as exc:
            log.warning("could not show the board of match %s (%s)", snap.id, exc)
            await bot.editor.submit(snap)
            return
        shown(snap)


async def old_challenge(interaction: discord.Interaction) -> None:
    await interaction.response.edit_message(
        content=None,
        embed=discord.Embed(
            description="This challenge is from an older version of the bot and can no longer "
            "be answered: send a new one with /challenge.",
            colour=GREY,
        ),
        view=None,
    )


async def notify_or_reply(interaction: discord.Interaction, text: str) -> None:
    """An ephemeral line: the response if none was sent yet, else a follow-up."""
    with contextlib.suppress(discord.HTTPException):
        if interaction.response.is_done():
            await interaction.followup.send(f"⚠️ {text}", ephemeral=True)
        else:
            await interaction.response.send_message(f"⚠️ {text}", ephemeral=True)
