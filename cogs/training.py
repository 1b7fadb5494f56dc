"""`/train` and `/agents`: learning agents on Discord.

`/train` is for the bot's owner (and its admins in its home server: the memory is global). It
answers at once with a progress embed, then the lobby trains in the engine pool in the
background while this cog edits that message about once per second (the interaction token is
used for 14 minutes, then the channel message is edited instead: tokens expire after 15).
`/agents` lists every agent with its description, level, rating and what it has learned, split
over several embeds and messages so that Discord's limits (25 fields, 1024 per field, 6000 per
message) always hold.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from cogs.games import GAME_CHOICES, opponent_choices
from engine.agents import opponents, registry
from lobby import present
from lobby.errors import BadRequest
from lobby.overview import AgentOverview
from lobby.training import TrainingJob, TrainingProgress

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger(__name__)

MAX_GAMES = 100_000
TOKEN_SECONDS = 14 * 60  # interaction tokens live 15 minutes
FIELD_VALUE = 1024
FIELDS_PER_EMBED = 25
MESSAGE_CHARS = 5800  # Discord allows 6000 across a message's embeds; keep a margin
EMBEDS_PER_MESSAGE = 10
COLOUR = 0x9B59B6


def progress_embed(p: TrainingProgress) -> discord.Embed:
    colour = 0x3B88C3 if not p.finished else (0x2ECC71 if p.error is None else 0xE67E22)
    title, _, rest = p.text().partition("\n")
    embed = discord.Embed(title=title[:256], description=rest, colour=colour)
    if p.total:
        filled = round(20 * p.done / p.total)
        embed.description = f"`{'█' * filled}{'░' * (20 - filled)}`\n{rest}"
    embed.set_footer(text="Results are stored after every batch of games.")
    return embed


def agent_pages(overviews: list[AgentOverview], games: list[str]) -> list[list[discord.Embed]]:
    """The /agents answer: messages of embeds, every one within Discord's limits."""
    pages: list[list[discord.Embed]] = [[]]
    used = 0

    def new_embed(game: str, more: bool, need: int = 0) -> discord.Embed:
        """A new embed, on a new message if it (and `need` more characters) would not fit."""
        nonlocal used
        title = f"{present.game_title(game)} agents" + (" (continued)" if more else "")
        desc = present.agents_intro(game)
        embed = discord.Embed(title=title, description=None if more else desc, colour=COLOUR)
        size = len(title) + (0 if more else len(desc))
        if used + size + need > MESSAGE_CHARS or len(pages[-1]) >= EMBEDS_PER_MESSAGE:
            pages.append([])
            used = 0
        pages[-1].append(embed)
        used += size
        return embed

    for game in games:
        embed = new_embed(game, more=False)
        for a in (o for o in overviews if o.game == game):
            heading, lines = present.agent_lines(a)
            name = heading[:256]
            value = _fit(lines, FIELD_VALUE)
            if (
                len(embed.fields) >= FIELDS_PER_EMBED
                or used + len(name) + len(value) > MESSAGE_CHARS
            ):
                embed = new_embed(game, more=True, need=len(name) + len(value))
            embed.add_field(name=name, value=value, inline=False)
            used += len(name) + len(value)
    return [p for p in pages if p]


def _fit(lines: list[str], limit: int) -> str:
    """Whole lines (a heat map is one multi-line item) while they fit; the first one cut."""
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        if i == 0 and len(line) > limit:
            line = line[: limit - 1] + "…"
        extra = len(line) + (1 if out else 0)
        if size + extra > limit:
            continue  # skip what does not fit (e.g. a heat map), keep shorter lines after it
        out.append(line)
        size += extra
    return "\n".join(out) or "-"


class Training(commands.Cog):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot
        self.progress_interval = 1.0  # seconds between progress edits

    @app_commands.command(name="train", description="Train a learning agent by self-play")
    @app_commands.describe(
        game="Which game",
        agent="One of the bot's learning players (trainer or weightgrid)",
        games=f"How many self-play games (1-{MAX_GAMES})",
        opponent="Train against this player instead of itself (optional)",
    )
    @app_commands.choices(game=GAME_CHOICES)
    async def train(
        self,
        interaction: discord.Interaction,
        game: str,
        agent: app_commands.Range[str, 1, 100],
        games: app_commands.Range[int, 1, MAX_GAMES],
        opponent: app_commands.Range[str, 1, 100] | None = None,
    ) -> None:
        if not await self.bot.may_administer(interaction):
            raise BadRequest(
                "only the bot's owner (or its admins in its home server) can train its players"
            )
        raw_ok = await self.bot.may_use_raw_specs(interaction)
        job = self.bot.lobby.train(game, agent, games, opponent, raw_ok=raw_ok)
        response = await interaction.response.send_message(embed=progress_embed(job.progress))
        message_id = getattr(response, "message_id", None)
        self.bot.lobby.spawn(self.follow(interaction, job, message_id))

    async def follow(
        self, interaction: discord.Interaction, job: TrainingJob, message_id: int | None
    ) -> None:
        """Edit the progress message about once per second until the job ends."""
        assert job.task is not None
        started = time.monotonic()
        while True:
            done, _ = await asyncio.wait({job.task}, timeout=self.progress_interval)
            embed = progress_embed(job.progress)
            try:
                if time.monotonic() - started < TOKEN_SECONDS:
                    await interaction.edit_original_response(embed=embed)
                elif message_id is not None and interaction.channel_id is not None:
                    channel = self.bot.get_partial_messageable(interaction.channel_id)
                    await channel.get_partial_message(message_id).edit(embed=embed)
            except discord.HTTPException as exc:  # a deleted message does not stop training
                log.warning("cannot show training progress: %s", exc)
            if done:
                return

    @train.autocomplete("agent")
    async def _agent_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        game = getattr(interaction.namespace, "game", None)
        names: list[str] = []
        for g in [game] if game in registry.GAMES else list(registry.GAMES):
            names += [o.name for o in opponents.opponents(g) if o.learns and o.name not in names]
        hits = [n for n in names if current.lower() in n]
        return [app_commands.Choice(name=n, value=n) for n in hits[:25]]

    @train.autocomplete("opponent")
    async def _opponent_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return opponent_choices(getattr(interaction.namespace, "game", None), current)

    @app_commands.command(name="agents", description="The AI agents: levels, ratings, learning")
    @app_commands.describe(game="Only this game (default: all)")
    @app_commands.choices(game=GAME_CHOICES)
    async def agents(self, interaction: discord.Interaction, game: str | None = None) -> None:
        games: list[str] = [game] if game else list(registry.GAMES)
        overviews = []
        for g in games:
            overviews += await self.bot.lobby.agents_overview(g)
        pages = agent_pages(overviews, games)
        await interaction.response.send_message(embeds=pages[0])
        for page in pages[1:]:
            await interaction.followup.send(embeds=page)


async def setup(bot: BoardBot) -> None:
    await bot.add_cog(Training(bot))
