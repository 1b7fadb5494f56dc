"""Puzzles on Discord: `/puzzle play`, `/puzzle daily` and `/puzzle stats`, and the answers
given with the board's own inputs (`cogs/puzzleinputs.py`).

- `/puzzle play game:` shows the asker their next puzzle, for them alone (ephemeral); an
  answer turns that message into the verdict, the solver's line and a Next puzzle button.
- `/puzzle daily game:` shows the day's puzzle in the channel for everyone; each answer is
  told to its player alone. The first `/puzzle daily` of a game asked in a server on a UTC
  day also posts it in the server's announcement channel, if one is set (`/settings`).
- `/puzzle stats [user]`: puzzle ratings, answers and streaks.

Boards follow `/prefs board:` like match boards: the emoji grid with the position in words,
or a picture with those words as alt text. Names are escaped; nothing mentions anyone."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from cogs.actions import DEFER_AFTER, Reply, bot_of, person
from cogs.errors import PLACEHOLDER
from cogs.names import safe_name
from cogs.puzzleinputs import NextPuzzleButton, PuzzleColumn, PuzzleSelect
from cogs.render import MAX_OPTIONS, WORDS_FIELD
from engine.games.catalog import game_info
from engine.games.connect4 import Connect4State
from lobby.puzzle import (
    PuzzleShown,
    PuzzleVerdict,
    prompt_lines,
    puzzle_png,
    puzzle_words,
    stats_lines,
    title,
    verdict_lines,
)

if TYPE_CHECKING:
    from cogs.client import BoardBot

log = logging.getLogger(__name__)

PUZZLE_COLOUR, SOLVED_COLOUR, MISSED_COLOUR = 0x9B59B6, 0x2ECC71, 0xE74C3C
GAME_CHOICES = [
    app_commands.Choice(name=game_info(g).title, value=g) for g in ("connect4", "othello")
]
#: What a puzzle message is made of: `embed`, `view` and `attachments` (its picture, if any).
Fields = dict[str, Any]


# ---------------------------------------------------------------------------- what is shown


def puzzle_view(shown: PuzzleShown) -> discord.ui.View:
    """The position's inputs: a button per column, or selects of the legal squares."""
    view = discord.ui.View(timeout=None)
    state, legal = shown.state, shown.state.legal_moves()
    if isinstance(state, Connect4State):
        per_row = (state.cols + 1) // 2 if state.cols <= 10 else 5
        for col in range(state.cols):
            view.add_item(
                PuzzleColumn(shown.key, col, disabled=col not in legal, row=col // per_row)
            )
        return view
    squares = sorted((mv for mv in legal if state.move_to_str(mv) != "pass"),
                     key=state.move_to_str)  # fmt: skip
    parts = [squares[i : i + MAX_OPTIONS] for i in range(0, len(squares), MAX_OPTIONS)]
    for part, chunk in enumerate(parts):
        options = [discord.SelectOption(label=state.move_to_str(mv), value=str(mv)) for mv in chunk]
        view.add_item(PuzzleSelect(shown.key, part, options, "Your answer", row=part))
    return view


def next_view(game: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(NextPuzzleButton(game))
    return view


async def puzzle_fields(
    shown: PuzzleShown, verdict: PuzzleVerdict | None = None, style: str = "emoji"
) -> Fields:
    """The puzzle's embed (the board, what to find, the verdict if answered) in `style`, with
    its inputs (none once answered: a Next puzzle button instead)."""
    lines = [shown.state.render_emoji(last=shown.last), ""] if style != "image" else []
    lines += prompt_lines(shown, name=safe_name)
    colour = PUZZLE_COLOUR
    if verdict is not None:
        lines += ["", *verdict_lines(verdict)]
        if verdict.solved is not None:
            colour = SOLVED_COLOUR if verdict.solved else MISSED_COLOUR
    embed = discord.Embed(title=title(shown), description="\n".join(lines), colour=colour)
    embed.set_footer(text=f"Puzzle {shown.key}")
    files: list[discord.File] = []
    if style == "image":
        png = await asyncio.to_thread(puzzle_png, shown)  # Pillow: off the event loop
        name = f"puzzle-{shown.key.replace('.', '-')}.png"
        files.append(discord.File(io.BytesIO(png), filename=name, description=puzzle_words(shown)))
        embed.set_image(url=f"attachment://{name}")
    else:
        embed.add_field(name=WORDS_FIELD, value=puzzle_words(shown), inline=False)
    answered = verdict is not None and verdict.solved is not None
    view = next_view(shown.game) if answered else puzzle_view(shown)
    return {"embed": embed, "view": view, "attachments": files}


def stats_embed(lines: list[str]) -> discord.Embed:
    return discord.Embed(title=lines[0], description="\n".join(lines[1:]), colour=PUZZLE_COLOUR)


# ---------------------------------------------------------------------------- answering


async def _respond(interaction: discord.Interaction, work: Awaitable[Fields], *, new: bool) -> None:
    """Answer a click with what `work` gives: the clicked message updated, or (`new`) a new
    message for the clicker alone. Work slower than DEFER_AFTER (a solver's judgement) is
    deferred first; a refusal is one ephemeral line (the error pipeline)."""
    job = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({job}, timeout=DEFER_AFTER)
        if not done:
            await interaction.response.defer(ephemeral=True, thinking=new)
            if new:
                interaction.extras[PLACEHOLDER] = "ephemeral"
        fields = await job
    finally:
        job.cancel()
    if interaction.response.is_done():
        interaction.extras.pop(PLACEHOLDER, None)
        await interaction.edit_original_response(**fields)
    elif new:
        files = fields.pop("attachments")
        await interaction.response.send_message(ephemeral=True, files=files, **fields)
    else:
        await interaction.response.edit_message(**fields)


def _own_message(interaction: discord.Interaction) -> bool:
    """Whether the click came from a message only the clicker sees (their /puzzle play)."""
    message = interaction.message
    return message is not None and message.flags.ephemeral


async def answer(interaction: discord.Interaction, key: str, move: int) -> None:
    """A move given as the answer to puzzle `key`: judged for the clicker; a public puzzle
    (the daily) stays as it is for the others."""
    lobby, who = bot_of(interaction).lobby, person(interaction.user)

    async def work() -> Fields:
        verdict = await lobby.puzzles.answer(key, move, who)
        style = await lobby.board_style(who)
        return await puzzle_fields(verdict.shown, verdict, style)

    await _respond(interaction, work(), new=not _own_message(interaction))


async def next_puzzle(interaction: discord.Interaction, game: str) -> None:
    lobby, who = bot_of(interaction).lobby, person(interaction.user)

    async def work() -> Fields:
        shown = await lobby.puzzles.next(game, who, interaction.guild_id)
        return await puzzle_fields(shown, style=await lobby.board_style(who))

    await _respond(interaction, work(), new=not _own_message(interaction))


# ---------------------------------------------------------------------------- the commands


class PuzzleCommands(
    commands.GroupCog, group_name="puzzle", group_description="Puzzles: one move to find"
):
    def __init__(self, bot: BoardBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="play", description="Your next puzzle (only you see it)")
    @app_commands.describe(game="Which game")
    @app_commands.choices(game=GAME_CHOICES)
    async def play(self, interaction: discord.Interaction, game: str) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction, ephemeral=True) as reply:
            shown = await lobby.puzzles.next(game, who, interaction.guild_id)
            await _send(reply, await puzzle_fields(shown, style=await lobby.board_style(who)))

    @app_commands.command(name="daily", description="Today's puzzle, the same for everyone")
    @app_commands.describe(game="Which game")
    @app_commands.choices(game=GAME_CHOICES)
    async def daily(self, interaction: discord.Interaction, game: str) -> None:
        lobby, who = self.bot.lobby, person(interaction.user)
        async with Reply(interaction) as reply:
            shown, channel = await lobby.puzzles.daily(game, interaction.guild_id)
            await _send(reply, await puzzle_fields(shown, style=await lobby.board_style(who)))
        if channel is not None and channel != interaction.channel_id:
            await self._announce(channel, shown)

    async def _announce(self, channel_id: int, shown: PuzzleShown) -> None:
        """The daily puzzle in the server's announcement channel (as emoji: it is everyone's)."""
        fields = await puzzle_fields(shown)
        fields.pop("attachments")
        try:
            await self.bot.get_partial_messageable(channel_id).send(
                allowed_mentions=discord.AllowedMentions.none(), **fields
            )
        except discord.HTTPException as exc:
            log.warning("the daily puzzle was not posted in channel %s: %s", channel_id, exc)

    @app_commands.command(name="stats", description="Puzzle ratings, answers and streaks")
    @app_commands.describe(user="Whose (default: yours)")
    async def stats(
        self, interaction: discord.Interaction, user: discord.User | None = None
    ) -> None:
        target = user or interaction.user
        async with Reply(interaction) as reply:
            found = await self.bot.lobby.puzzles.stats(person(target))
            await reply.send(embed=stats_embed(stats_lines(found, name=safe_name)))


async def _send(reply: Reply, fields: Fields) -> None:
    files = fields["attachments"]
    await reply.send(embed=fields["embed"], view=fields["view"], file=files[0] if files else None)


async def setup(bot: BoardBot) -> None:
    """The /puzzle commands, and the puzzles' inputs each handed what a click on it does."""
    bot.add_dynamic_items(
        PuzzleColumn.handled_by(lambda i, b: answer(i, b.key, b.col)),
        PuzzleSelect.handled_by(lambda i, s: answer(i, s.key, s.move)),
        NextPuzzleButton.handled_by(lambda i, b: next_puzzle(i, b.game)),
    )
    await bot.add_cog(PuzzleCommands(bot))
