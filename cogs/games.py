"""The slash commands (thin: options in, lobby call, board or table out), and the boards'
buttons and selects registered with their handlers (`setup`)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands
from discord.ext import commands

from cogs import actions, analysis, retry
from cogs.actions import Reply, new_board, person
from cogs.coach import MAX_MATCH_ID
from cogs.components import (
    AnalyseButton,
    BestButton,
    ChallengeButton,
    ColumnButton,
    HintButton,
    MoveSelect,
    NextButton,
    OldChallengeButton,
    RematchButton,
    ResignButton,
    RetryButton,
    RetryColumn,
    RetrySelect,
    StopButton,
)
from cogs.names import safe_name
from cogs.prefs import Prefs
from cogs.settings import Settings
from engine.agents import opponents
from engine.games.catalog import GAMES, INFO, OFFERS, offer
from lobby import present
from lobby.core import Person, Snapshot
from lobby.errors import BadRequest

if TYPE_CHECKING:
    from cogs.client import BoardBot

#: The `game` option of /play, /challenge and /botmatch: every offer (a game or a variant).
OFFER_CHOICES = [app_commands.Choice(name=o.title, value=o.key) for o in OFFERS]
#: The `game` option of the listings: the games themselves (ratings are per game).
GAME_CHOICES = [app_commands.Choice(name=i.title, value=i.name) for i in INFO.values()]


def opponent_choices(game: str | None, current: str) -> list[app_commands.Choice[str]]:
    """The opponents people may choose (levels first), each with what it is in plain words;
    filtered by what is typed. Autocomplete is a help only: the lobby checks the name."""
    seen: dict[str, str] = {}
    try:
        games = [offer(game).game] if game else list(GAMES)
    except ValueError:
        games = list(GAMES)
    for g in games:
        for opp in opponents.opponents(g):
            seen.setdefault(opp.name, opp.description)
    current = current.strip().lower()
    hits = [(n, d) for n, d in seen.items() if current in n or (current and current in d)]
    return [app_commands.Choice(name=_choice_name(n, d), value=n) for n, d in hits[:MAX_CHOICES]]


def _choice_name(name: str, description: str) -> str:
    text = f"{name}: {description}"
    return text if len(text) <= 100 else text[:99] + "…"


MAX_CHOICES = 25
#: At most this many matches are listed in one line (a refusal asking which).
MAX_LISTED = 5


def listing_embed(listing: present.Listing, colour: int) -> discord.Embed:
    embed = discord.Embed(
        title=listing.title, description="\n".join(listing.lines) or listing.empty, colour=colour
    )
    if listing.legend:
        embed.set_footer(text=listing.legend)
    return embed


class Games(commands.Cog):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot

    @app_commands.command(name="play", description="Play Connect Four or Othello against the bot")
    @app_commands.describe(
        game="Which game",
        opponent="A level (easy, medium, hard, expert) or one of the bot's other players",
        first="Who starts",
    )
    @app_commands.choices(game=OFFER_CHOICES)
    async def play(
        self,
        interaction: discord.Interaction,
        game: str,
        opponent: app_commands.Range[str, 1, 100] = "easy",
        first: Literal["me", "bot", "random"] = "me",
    ) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        raw_ok = await self.bot.may_use_raw_specs(interaction)
        await new_board(
            interaction, lambda w: lobby.start_pve(who, game, opponent, first, w, raw_ok=raw_ok)
        )

    @app_commands.command(name="challenge", description="Challenge someone to a game")
    @app_commands.describe(opponent="Who you want to play", game="Which game")
    @app_commands.choices(game=OFFER_CHOICES)
    async def challenge(
        self, interaction: discord.Interaction, opponent: discord.User, game: str
    ) -> None:
        if opponent.bot:
            raise BadRequest("bots cannot accept challenges; use /play to play the bot")
        await actions.send_challenge(interaction, opponent.id, opponent.display_name, game)

    @app_commands.command(name="botmatch", description="Watch two of the bot's players play")
    @app_commands.describe(
        game="Which game",
        first="The bot's player that moves first",
        second="The bot's player that moves second",
        delay="Seconds between moves (1-30)",
    )
    @app_commands.choices(game=OFFER_CHOICES)
    async def botmatch(
        self,
        interaction: discord.Interaction,
        game: str,
        first: app_commands.Range[str, 1, 100],
        second: app_commands.Range[str, 1, 100],
        delay: app_commands.Range[float, 1.0, 30.0] = 1.5,
    ) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        raw_ok = await self.bot.may_use_raw_specs(interaction)
        await new_board(
            interaction,
            lambda w: lobby.start_eve(game, first, second, w, delay, starter=who, raw_ok=raw_ok),
        )

    @play.autocomplete("opponent")
    @botmatch.autocomplete("first")
    @botmatch.autocomplete("second")
    async def _opponent_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        game = getattr(interaction.namespace, "game", None)
        return opponent_choices(game, current)

    @app_commands.command(name="leaderboard", description="The best players of a game")
    @app_commands.describe(game="Which game", scope="This server or everyone")
    @app_commands.choices(game=GAME_CHOICES)
    async def leaderboard(
        self,
        interaction: discord.Interaction,
        game: str,
        scope: Literal["server", "global"] = "server",
    ) -> None:
        if scope == "server" and interaction.guild_id is None:
            raise BadRequest("there is no server here; use scope:global")
        guild = interaction.guild_id if scope == "server" else None
        rows = await self.bot.lobby.leaderboard(game, guild)
        where = "this server" if guild else "everyone"
        embed = listing_embed(present.leaderboard(game, rows, where, name=safe_name), 0xF1C40F)
        await interaction.response.send_message(embed=embed)

    @app_commands.command(name="stats", description="Ratings and results of a player")
    @app_commands.describe(user="Whose stats (default: yours)")
    async def stats(
        self, interaction: discord.Interaction, user: discord.User | None = None
    ) -> None:
        target = user or interaction.user
        async with Reply(interaction) as reply:  # a first look stores the player: may be slow
            player, rows = await self.bot.lobby.stats(person(target))
            embed = listing_embed(present.stats(safe_name(player.display_name), rows), 0x3B88C3)
            chart = await self.bot.lobby.rating_chart(player)
            if chart is None:
                await reply.send(embed=embed)
                return
            embed.set_image(url="attachment://rating.png")
            picture = discord.File(io.BytesIO(chart), filename="rating.png")
            await reply.send(embed=embed, file=picture)

    @app_commands.command(name="history", description="Recent matches of a player")
    @app_commands.describe(user="Whose history (default: yours)")
    async def history(
        self, interaction: discord.Interaction, user: discord.User | None = None
    ) -> None:
        target = user or interaction.user
        async with Reply(interaction) as reply:  # a first look stores the player: may be slow
            player, rows = await self.bot.lobby.history(person(target))
            embed = listing_embed(
                present.history(safe_name(player.display_name), rows, names=safe_name), 0x3B88C3
            )
            await reply.send(embed=embed)

    @app_commands.command(name="resign", description="Resign your match in this channel")
    @app_commands.describe(match="The match number (needed when you play several here)")
    async def resign(
        self,
        interaction: discord.Interaction,
        match: app_commands.Range[int, 1, MAX_MATCH_ID] | None = None,
    ) -> None:
        """The person's one match in this channel, or the one they name: never a guess (with
        several, they are listed and nothing is resigned). The reply names the match."""
        lobby, me = self.bot.lobby, person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:
            if match is None:
                mine = await lobby.live_matches_of(me, interaction.channel_id)
                mine = [m for m in mine if m.kind != "eve"]
                if not mine:
                    raise BadRequest("you have no match in progress in this channel")
                if len(mine) > 1:
                    listed = [await self._described(m.id, me) for m in mine[:MAX_LISTED]]
                    more = len(mine) - len(listed)
                    raise BadRequest(
                        f"you have {len(mine)} matches in progress here: "
                        + "; ".join(listed)
                        + (f"; and {more} more" if more > 0 else "")
                        + ". Say which with /resign match:<number>"
                    )
                match = mine[0].id
            snap = await lobby.resign(match, me)
            await reply.send(f"You resigned {self._what(snap, me)}.")

    async def _described(self, match_id: int, me: Person) -> str:
        # names as they are: the error pipeline makes the whole line safe
        return self._what(await self.bot.lobby.snapshot(match_id), me, name=present.plain)

    @staticmethod
    def _what(snap: Snapshot, me: Person, name: present.Names = safe_name) -> str:
        """'match #5 (Connect Four against bob)'."""
        others = [s for s in snap.seats if s.player.discord_id != me.ident] or list(snap.seats)
        game = present.match_title(snap.match.game, snap.match.variant)
        return f"match #{snap.id} ({game} against {name(others[0].name)})"


async def setup(bot: BoardBot) -> None:
    """The Games cog (and `/prefs`, how boards are shown, and `/settings`, a server's), and
    the boards' buttons and selects, each handed what a click on it does.
    A click reaches its component through the custom id, so they work after a restart too."""
    bot.add_dynamic_items(
        ColumnButton.handled_by(lambda i, b: actions.play_move(i, b.match_id, b.ply, b.col)),
        MoveSelect.handled_by(lambda i, s: actions.play_move(i, s.match_id, s.ply, s.move)),
        ResignButton.handled_by(lambda i, b: actions.resign_button(i, b.match_id)),
        HintButton.handled_by(lambda i, b: actions.hint_button(i, b.match_id)),
        AnalyseButton.handled_by(lambda i, b: analysis.show_analysis(i, b.match_id)),
        RematchButton.handled_by(lambda i, b: actions.rematch(i, b.match_id)),
        StopButton.handled_by(lambda i, b: actions.stop_botmatch(i, b.match_id)),
        ChallengeButton.handled_by(
            lambda i, b: actions.answer_challenge(i, b.challenge_id, b.accept)
        ),
        OldChallengeButton.handled_by(lambda i, b: actions.old_challenge(i)),
        RetryButton.handled_by(lambda i, b: retry.start_retry(i, b.match_id)),
        RetryColumn.handled_by(lambda i, b: retry.try_move(i, b.match_id, b.ply, b.col)),
        RetrySelect.handled_by(lambda i, s: retry.try_move(i, s.match_id, s.ply, s.move)),
        BestButton.handled_by(lambda i, b: retry.show_best(i, b.match_id, b.ply)),
        NextButton.handled_by(lambda i, b: retry.next_mistake(i, b.match_id, b.ply)),
    )
    await bot.add_cog(Games(bot))
    await bot.add_cog(Prefs(bot))
    await bot.add_cog(Settings(bot))
