"""What each click and command does: translate Discord to lobby calls and answer in time.

The lobby owns the match: it stores every step, starts the agent's turn and announces each
change, which the board editor (cogs/editor.py) edits in. A response here shows what it can
(the clicked board, updated) inside `editor.responding`, so the editor knows what is shown
and edits in whatever the response did not show: a failed or late response never hides a
committed move. A new board is made by deferring first: the message exists (and has an id)
before the match is stored with it, so a failed response never leaves a live match nobody can
see. The boards' components (cogs/components.py) are handed these functions as their handlers
when the Games extension registers them (cogs/games.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import discord

from cogs.channels import elsewhere
from cogs.editor import Shown
from cogs.errors import PLACEHOLDER
from cogs.render import (
    GREY,
    board_message,
    challenge_embed,
    challenge_view,
    ended_embed,
)
from engine.games.catalog import offer_of
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
from lobby.settings import NotHere

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger(__name__)

#: A click whose work takes longer than this is deferred first (Discord allows 3 s).
DEFER_AFTER = 1.0
STALE_NOTE = "That board was out of date; it now shows the current position."


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
    request is refused before anything is shown or stored; a channel where the bot could not
    keep the board current is refused first. Checks slower than DEFER_AFTER (a busy
    database) are deferred first, within Discord's 3 s."""
    bot = bot_of(interaction)
    check_reach(interaction)
    timer = _Deferral(interaction, thinking=True)

    async def show() -> int | None:
        await timer.settle()
        if not timer.deferred:
            await timer.defer()
        return timer.message_id

    try:
        snap = await start(Where(interaction.guild_id, interaction.channel_id, show=show))
    except Exception as exc:
        await timer.settle()
        if timer.deferred:  # the match was not stored: take the "thinking..." message away
            interaction.extras.pop(PLACEHOLDER, None)
            with contextlib.suppress(discord.HTTPException):
                await interaction.delete_original_response()
        if isinstance(exc, NotHere):
            raise elsewhere(interaction, exc) from None
        raise
    interaction.extras.pop(PLACEHOLDER, None)  # the board fills it (or the editor does)
    content = "\n".join(filter(None, [content, bot.lobby.engine_note(snap)]))
    async with bot.editor.responding(snap.id) as shown:
        try:
            message = await interaction.edit_original_response(
                content=content or None, **await board_message(bot.lobby, snap)
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
    parts = await board_message(bot_of(interaction).lobby, snap)
    try:
        if deferred or interaction.response.is_done():
            await interaction.edit_original_response(**parts)
        else:
            await interaction.response.edit_message(**parts)
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
    only the deferral runs beside it, and it never raises. A click is deferred as an update
    of its message; a slash command (or `thinking`) with a "thinking..." message, public
    unless `ephemeral`.
    """

    def __init__(
        self, interaction: discord.Interaction, *, thinking: bool = False, ephemeral: bool = False
    ) -> None:
        self.interaction = interaction
        command = interaction.type is discord.InteractionType.application_command
        self.thinking = thinking or command
        self.ephemeral = ephemeral
        self.started = False
        self.deferred = False
        self.message_id: int | None = None  # the "thinking..." message, if Discord said
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        await asyncio.sleep(DEFER_AFTER)
        self.started = True  # from here on the request is not cancelled: it may have landed
        if self.interaction.response.is_done():
            return
        with contextlib.suppress(discord.HTTPException):
            await self.defer()

    async def defer(self) -> None:
        """Defer now (Discord's refusal is raised)."""
        response = await self.interaction.response.defer(
            thinking=self.thinking, ephemeral=self.ephemeral
        )
        self.deferred = True
        self.message_id = response.message_id if response is not None else None
        if self.thinking:
            self.interaction.extras[PLACEHOLDER] = "ephemeral" if self.ephemeral else "public"

    async def settle(self) -> None:
        """Stop the timer, or wait for a deferral already sent."""
        if self.started:
            await asyncio.shield(self.task)
        elif not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


class Reply:
    """A slash command's answer within Discord's 3 s: the work inside `async with` is deferred
    ("thinking...") if it takes more than DEFER_AFTER (a busy database), then `send` answers
    in the placeholder. A refusal raised inside goes through the error pipeline as usual."""

    def __init__(self, interaction: discord.Interaction, *, ephemeral: bool = False) -> None:
        self.interaction = interaction
        self.ephemeral = ephemeral
        self._timer: _Deferral | None = None

    async def __aenter__(self) -> Reply:
        self._timer = _Deferral(self.interaction, ephemeral=self.ephemeral)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._timer is not None:
            await self._timer.settle()

    async def send(
        self,
        content: str | None = None,
        *,
        embed: discord.Embed | None = None,
        file: discord.File | None = None,
        view: discord.ui.View | None = None,
        mentions: discord.AllowedMentions | None = None,
        new_message: bool = False,
    ) -> int | None:
        """Answer; the id of the message that shows it (if Discord said). `new_message`: after
        a deferral, send a new message (mentions in it notify; an edit's do not) and remove
        the placeholder."""
        assert self._timer is not None, "use Reply in `async with`"
        await self._timer.settle()
        i = self.interaction
        fields: dict[str, Any] = {"content": content}
        for key, value in (("embed", embed), ("view", view), ("allowed_mentions", mentions)):
            if value is not None:
                fields[key] = value
        if not self._timer.deferred:
            if file is not None:
                fields["file"] = file
            response = await i.response.send_message(ephemeral=self.ephemeral, **fields)
            return response.message_id if response is not None else None
        if new_message:
            if file is not None:
                fields["file"] = file
            sent = await i.followup.send(ephemeral=self.ephemeral, wait=True, **fields)
            i.extras.pop(PLACEHOLDER, None)
            with contextlib.suppress(discord.HTTPException):
                await i.delete_original_response()
            return sent.id
        if file is not None:
            fields["attachments"] = [file]
        message = await i.edit_original_response(**fields)
        i.extras.pop(PLACEHOLDER, None)
        return message.id


#: What the bot needs where it shows a board or a challenge: it edits that message with the
#: bot token through the channel (moves, clocks, the end), and the message is an embed.
#: Without them its moves would never show (docs/architecture.md, "Discord limits").
REACH = {
    "view_channel": "View Channel",
    "send_messages": "Send Messages",
    "embed_links": "Embed Links",
}
THREAD_SEND = ("send_messages_in_threads", "Send Messages in Threads")


def check_reach(interaction: discord.Interaction) -> None:
    """Refuse, in one line naming what is missing, a board or challenge where the bot could
    not keep it current (a channel that lets people use commands but not the bot in)."""
    if interaction.guild_id is None:
        return  # a DM with the bot: it can always edit its own messages there
    needed = dict(REACH)
    if isinstance(interaction.channel, discord.Thread):
        del needed["send_messages"]
        needed[THREAD_SEND[0]] = THREAD_SEND[1]
    perms = interaction.app_permissions
    missing = [label for name, label in needed.items() if not getattr(perms, name)]
    if missing:
        which = " and ".join(missing) if len(missing) < 3 else ", ".join(missing)
        raise BadRequest(
            f"I cannot play in this channel: I need the {which} "
            f"permission{'s' if len(missing) > 1 else ''} here (a server admin can grant "
            f"{'them' if len(missing) > 1 else 'it'})"
        )


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


async def send_challenge(
    interaction: discord.Interaction, opponent_id: int, opponent_name: str, game: str
) -> None:
    """A stored challenge with Accept/Decline buttons; the challenged person is pinged.
    Refused in a DM (nobody else can see it there) and where the bot could not keep its
    message current; a challenge whose message could not be sent is withdrawn (it would
    count against the challenger's limits until it expired)."""
    if interaction.guild_id is None:
        raise BadRequest(
            "challenges are made in a server channel your opponent can see: use /challenge there"
        )
    check_reach(interaction)
    bot = bot_of(interaction)
    me, opponent = person(interaction.user), Person("user", opponent_id, opponent_name)
    async with Reply(interaction) as reply:
        try:
            challenge = await bot.lobby.challenge(me, opponent, game, where(interaction))
        except NotHere as exc:
            raise elsewhere(interaction, exc) from None
        try:
            message_id = await reply.send(
                f"<@{opponent_id}>",
                embed=challenge_embed(
                    interaction.user.display_name, opponent_name, game, int(challenge.expires_at)
                ),
                view=challenge_view(challenge.id),
                # Only the challenged person is pinged: the content is their mention alone
                # (names are in the embed, and an embed pings nobody).
                mentions=discord.AllowedMentions(everyone=False, roles=False, users=True),
                new_message=True,  # an edited message would not notify them
            )
        except discord.HTTPException:
            with contextlib.suppress(LobbyError):
                await bot.lobby.answer_challenge(challenge.id, me, False, where(interaction))
            raise
    if message_id is not None:
        await bot.lobby.challenge_shown(challenge.id, message_id)


async def answer_challenge(
    interaction: discord.Interaction, challenge_id: int, accept: bool
) -> None:
    """Accept (the match starts on this message), decline or withdraw; a challenge already
    answered or expired is greyed out with how it ended."""
    bot = bot_of(interaction)
    message_id = interaction.message.id if interaction.message is not None else None
    via = where(interaction, message_id)
    timer = _Deferral(interaction)  # accepting stores a match: deferred if that is slow
    try:
        challenge, snap = await bot.lobby.answer_challenge(
            challenge_id, person(interaction.user), accept, via
        )
    except ChallengeOver as exc:
        await timer.settle()
        found = await bot.lobby.get_challenge(challenge_id)
        if found is not None and found.status != "accepted":  # an accepted one shows its board
            status = "expired" if found.status == "pending" else found.status
            with contextlib.suppress(discord.HTTPException):
                await _update(interaction, timer, content=None, embed=ended_embed(status))
        await notify_or_reply(interaction, str(exc))
        return
    finally:
        await timer.settle()
    if snap is None:
        await _update(interaction, timer, content=None, embed=ended_embed(challenge.status))
        return
    async with bot.editor.responding(snap.id) as shown:
        try:
            await _update(interaction, timer, content=None, **await board_message(bot.lobby, snap))
        except discord.HTTPException as exc:
            log.warning("could not show the board of match %s (%s)", snap.id, exc)
            await bot.editor.submit(snap)
            return
        shown(snap)


async def _update(
    interaction: discord.Interaction,
    timer: _Deferral,
    *,
    content: str | None,
    embed: discord.Embed,
    view: discord.ui.View | None = None,
    attachments: list[discord.File] | None = None,
) -> None:
    """Update a clicked message: the response, or an edit after a deferral."""
    extra: dict[str, Any] = {} if attachments is None else {"attachments": attachments}
    if timer.deferred or interaction.response.is_done():
        await interaction.edit_original_response(content=content, embed=embed, view=view, **extra)
    else:
        await interaction.response.edit_message(content=content, embed=embed, view=view, **extra)


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
