"""`/tournament`: tournaments in a channel (create, join, leave, start, standings, cancel), its
standings in one message edited at every change, each game's board posted in the channel as
its match starts, and the winner announced (in the server's announcement channel if it has
one, else in the tournament's channel). The rules are the lobby's (`lobby/tournaments.py`);
names are shown escaped and nothing the bot says here mentions anyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from cogs.actions import Reply, check_reach, person, where
from cogs.channels import elsewhere
from cogs.names import safe_name
from cogs.render import board_message
from cogs.settings import may_administer
from engine.games.catalog import OFFERS, offer
from lobby.core import TRANSIENT, Snapshot
from lobby.errors import LobbyError
from lobby.settings import NotHere
from lobby.tournament_rounds import BoardCall, TournamentNews, TournamentView
from lobby.words import plural

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger(__name__)

COLOUR = 0xE67E22
OFFER_CHOICES = [app_commands.Choice(name=o.title, value=o.key) for o in OFFERS]
FORMAT_NAMES = {"swiss": "Swiss", "round-robin": "round robin", "knockout": "knockout"}
#: Names in the standings are cut to this many characters (32 lines fit an embed).
NAME_CHARS = 24
#: An embed field holds at most 1024 characters (Discord).
FIELD_CHARS = 1024
NONE = discord.AllowedMentions.none()
#: Pauses before posting a board again after Discord failed (5xx, a rate limit).
POST_PAUSES = (1.0, 2.0, 5.0, 15.0)


def short(name: str) -> str:
    return safe_name(name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…")


def points(value: float) -> str:
    return f"{value:g}"


def status_line(view: TournamentView) -> str:
    t = view.tournament
    if t.status == "open":
        when = f" It starts <t:{int(t.starts_at)}:R>." if t.starts_at is not None else ""
        return f"Open: `/tournament join` to play.{when}"
    if t.status == "running":
        return f"Round {t.round} of {t.rounds}."
    if t.status == "cancelled":
        return "Cancelled."
    return f"Finished. Winner: **{short(view.winner)}**" if view.winner else "Finished."


def standings_embed(view: TournamentView) -> discord.Embed:
    """The tournament in one embed: what it is, where it stands, the standings (score, then
    Buchholz) and the current round's pairings."""
    t = view.tournament
    title = f"Tournament #{t.id}: {offer(t.game).title}, {FORMAT_NAMES.get(t.format, t.format)}"
    lines = [status_line(view), ""]
    for p in view.placings:
        marks = " (bot)" if p.agent else ""
        marks += " (left)" if p.left else ""
        lines.append(
            f"{p.rank}. **{short(p.name)}**{marks}: {points(p.score)}"
            f" (Buchholz {points(p.buchholz)})"
        )
    if not view.placings:
        lines.append("Nobody has joined yet.")
    embed = discord.Embed(title=title[:256], description="\n".join(lines)[:4096], colour=COLOUR)
    pairings = _pairings(view)
    if pairings:
        embed.add_field(name=f"Round {t.round}", value=pairings, inline=False)
    clock = f"{t.turn_seconds:g} s a move" if t.turn_seconds else "the server's clock"
    embed.set_footer(text=f"Clock: {clock}. Ties are broken by Buchholz.")
    return embed


OUTCOME_TEXT = {"first": "1-0", "second": "0-1", "draw": "½-½", "lost": "0-0"}


def _pairings(view: TournamentView) -> str:
    if view.tournament.status != "running":
        return ""
    lines: list[str] = []
    size = 0
    for g in view.current():
        first = short(view.names.get(g.first_id, "?"))
        if g.second_id is None:
            line = f"{first}: a bye"
        else:
            second = short(view.names.get(g.second_id, "?"))
            result = OUTCOME_TEXT.get(g.outcome or "", "playing")
            line = f"{first} - {second}: {result}"
        if size + len(line) + 1 > FIELD_CHARS - 2:
            lines.append("…")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def winner_line(view: TournamentView) -> str:
    t = view.tournament
    title = f"{offer(t.game).title} tournament #{t.id}"
    if view.winner is None:
        return f"🏆 The {title} is over."
    return f"🏆 **{short(view.winner)}** wins the {title}!"


class Tournament(commands.Cog):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot
        #: One standings edit at a time per tournament (the newest state each time).
        self._locks: dict[int, asyncio.Lock] = {}
        self._announced: set[int] = set()

    group = app_commands.Group(
        name="tournament", description="Tournaments in this channel", guild_only=True
    )

    @group.command(name="create", description="Create a tournament in this channel")
    @app_commands.describe(
        game="Which game",
        format="Swiss, round robin or knockout",
        rounds="Swiss only: how many rounds (by default enough for one winner)",
        clock="A person's seconds per move (the server's clock by default)",
        start="Start by itself in this many minutes (else with /tournament start)",
    )
    @app_commands.choices(game=OFFER_CHOICES)
    async def create(
        self,
        interaction: discord.Interaction,
        game: str,
        format: Literal["swiss", "round-robin", "knockout"],
        rounds: app_commands.Range[int, 1, 12] | None = None,
        clock: app_commands.Range[int, 30, 86400] | None = None,
        start: app_commands.Range[int, 1, 10080] | None = None,
    ) -> None:
        check_reach(interaction)
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction) as reply:
            try:
                view = await lobby.tournaments.create(
                    who, where(interaction), game, format, rounds, clock, start
                )  # checked there, types too: a forged request can send anything
            except NotHere as exc:
                raise elsewhere(interaction, exc) from None
            message_id = await reply.send(embed=standings_embed(view), mentions=NONE)
        if message_id is None:
            with contextlib.suppress(discord.HTTPException):
                message_id = (await interaction.original_response()).id
        if message_id is not None:
            await lobby.tournaments.shown(view.id, message_id)

    @group.command(name="join", description="Join this channel's tournament, or enter a bot")
    @app_commands.describe(bot="Enter one of the bot's players instead (creator or managers)")
    async def join(
        self, interaction: discord.Interaction, bot: app_commands.Range[str, 1, 100] | None = None
    ) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:
            if bot is None:
                await lobby.tournaments.join(who, where(interaction))
                text = "You are in. Your games start here when the tournament starts."
            else:
                admin = await may_administer(interaction)
                await lobby.tournaments.enter(bot, where(interaction), who, admin)
                text = f"{safe_name(bot.strip())} is in."
            await reply.send(text)

    @group.command(name="leave", description="Leave this channel's tournament")
    async def leave(self, interaction: discord.Interaction) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:
            view = await lobby.tournaments.leave(who, where(interaction))
            running = view.tournament.status != "open"
            await reply.send(
                "You left: your remaining games are forfeited." if running else "You left."
            )

    @group.command(name="start", description="Start this channel's tournament")
    async def start(self, interaction: discord.Interaction) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:
            admin = await may_administer(interaction)
            view = await lobby.tournaments.start(where(interaction), who, admin)
            players, rounds = len(view.placings), view.tournament.rounds
            await reply.send(
                f"Started: {plural(players, 'player')}, {plural(rounds or 0, 'round')}."
            )

    @group.command(name="standings", description="This channel's tournament as it stands")
    async def standings(self, interaction: discord.Interaction) -> None:
        async with Reply(interaction, ephemeral=True) as reply:
            view = await self.bot.lobby.tournaments.standings(where(interaction))
            await reply.send(embed=standings_embed(view), mentions=NONE)

    @group.command(name="cancel", description="Cancel this channel's tournament")
    async def cancel(self, interaction: discord.Interaction) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:
            admin = await may_administer(interaction)
            await lobby.tournaments.cancel(where(interaction), who, admin)
            await reply.send("Cancelled: its games end unrated.")

    # ------------------------------------------------------------------ the lobby's news

    async def on_news(self, news: TournamentNews) -> None:
        """A tournament changed: post its new games' boards, edit its standings, announce
        its winner."""
        try:
            await self._show(news)
        except TRANSIENT as exc:  # boards left unposted are posted at the next start
            log.warning("tournament %s not shown yet: %s", news.view.id, exc)

    async def _show(self, news: TournamentNews) -> None:
        for snap in news.boards:
            if snap.match.message_id is None:  # its message could not be made first
                await self._post_board(news.view, snap)
            else:  # its message waits for the board
                await self.bot.editor.submit(await self.bot.lobby.snapshot(snap.id))
        t = news.view.tournament
        lock = self._locks.setdefault(t.id, asyncio.Lock())
        async with lock:
            view = await self.bot.lobby.tournaments.view(t.id)  # the newest, in order
            await self._edit_standings(view)
            if view.tournament.status == "finished" and view.tournament.announced_at is None:
                await self._announce(view)
        if not view.tournament.active:
            self._locks.pop(t.id, None)

    async def make_board(self, game: BoardCall) -> int | None:
        """The message a game's board fills, posted before its match is stored (the lobby
        calls it; the editor fills it in). None if Discord would not take it: the board is
        posted after the match is stored, or its game ends unrated (`_post_board`)."""
        if game.channel_id is None:
            return None
        first, second = (short(n) for n in game.names)
        text = f"Tournament #{game.tournament_id}, round {game.round}: {first} - {second}"
        channel = self.bot.get_partial_messageable(game.channel_id, guild_id=game.guild_id)
        for pause in (*POST_PAUSES, None):
            try:
                return (await channel.send(text, allowed_mentions=NONE)).id
            except discord.HTTPException as exc:
                if pause is None or exc.status in (403, 404) or 400 <= exc.status < 429:
                    log.warning("tournament %s: a board's message not posted: %s",
                                game.tournament_id, exc)  # fmt: skip
                    return None
                await asyncio.sleep(pause)
        return None

    async def _post_board(self, view: TournamentView, snap: Snapshot) -> None:
        """A game's board in the tournament's channel, attached to its match. Discord failing
        is tried again a few times; a board that cannot be posted (the channel is gone or
        refuses the bot) ends its game unrated: nobody could follow it."""
        m = snap.match
        if m.channel_id is None:
            return
        lobby = self.bot.lobby
        names = " - ".join(short(s.name) for s in snap.seats)
        text = f"Tournament #{view.id}, round {view.tournament.round}: {names}"
        channel = self.bot.get_partial_messageable(m.channel_id, guild_id=m.guild_id)
        for pause in (*POST_PAUSES, None):
            fields = await board_message(lobby, await lobby.snapshot(m.id))  # as it is now
            files = fields.pop("attachments")
            try:
                message = await channel.send(text, files=files, allowed_mentions=NONE, **fields)
                break
            except discord.HTTPException as exc:
                if pause is None or exc.status in (403, 404) or 400 <= exc.status < 429:
                    log.warning("tournament %s: the board of match %s cannot be posted: %s",
                                view.id, m.id, exc)  # fmt: skip
                    with contextlib.suppress(LobbyError):
                        await lobby.abandon(m.id, "unreachable")
                    return
                await asyncio.sleep(pause)
        await lobby.attach_message(m.id, m.guild_id, m.channel_id, message.id)
        await self.bot.editor.submit(await lobby.snapshot(m.id))  # a move made meanwhile

    async def _edit_standings(self, view: TournamentView) -> None:
        t = view.tournament
        if t.channel_id is None:
            return
        channel = self.bot.get_partial_messageable(t.channel_id, guild_id=t.guild_id)
        embed = standings_embed(view)
        if t.message_id is not None:
            try:
                await channel.get_partial_message(t.message_id).edit(
                    embed=embed, allowed_mentions=NONE
                )
                return
            except discord.NotFound:
                pass  # deleted: a new one below
            except discord.HTTPException as exc:
                log.warning("tournament %s: standings not edited: %s", t.id, exc)
                return
        if t.active:
            with contextlib.suppress(discord.HTTPException):
                message = await channel.send(embed=embed, allowed_mentions=NONE)
                await self.bot.lobby.tournaments.shown(t.id, message.id)

    async def _announce(self, view: TournamentView) -> None:
        """The winner, once: in the server's announcement channel, else the tournament's."""
        t = view.tournament
        if t.id in self._announced:
            return
        target = t.channel_id
        try:
            found = await self.bot.lobby.server_settings(t.guild_id)
            target = found.value("announcements") or target
        except TRANSIENT as exc:
            log.warning("tournament %s: announcement channel not read: %s", t.id, exc)
        except LobbyError as exc:
            log.warning("tournament %s: announcement channel not read: %s", t.id, exc)
        if target is None:
            return
        channel = self.bot.get_partial_messageable(target, guild_id=t.guild_id)
        try:
            await channel.send(winner_line(view), allowed_mentions=NONE)
        except discord.HTTPException as exc:
            log.warning("tournament %s: winner not announced: %s", t.id, exc)
            return
        self._announced.add(t.id)
        await self.bot.lobby.tournaments.announced(t.id)


async def setup(bot: BoardBot) -> None:
    cog = Tournament(bot)
    await bot.add_cog(cog)
    if bot.lobby is not None:  # None: only the commands are read (`command_payloads`)
        bot.lobby.tournaments.listeners.append(cog.on_news)
        bot.lobby.tournaments.show_boards(cog.make_board)
