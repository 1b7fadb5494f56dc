"""Learning from one's mistakes on Discord: `/retry`, and the Retry button under an analysis,
show the position before the player's worst move with the board's own inputs; a move tried
there is judged by the solvers, the next mistake is a click away, and the best move shows
only when asked for.

The retry components (`cogs/components.py`) carry the match and the ply of the mistake in
their custom ids, and the lobby finds the rest again from the stored analysis, so a retry
shown before a restart goes on after it. Only the player whose mistake it is may act on it:
anyone else, and any forged id, gets one ephemeral line and nothing changes. The functions
below are the components' handlers (registered in `cogs/games.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import discord

from cogs.actions import DEFER_AFTER, bot_of, person
from cogs.components import BestButton, NextButton, RetryColumn, RetrySelect
from cogs.errors import PLACEHOLDER
from cogs.names import safe_name
from cogs.render import MAX_OPTIONS
from engine.analysis import Review
from engine.games.connect4 import Connect4State
from lobby import present
from lobby.retry import RetryStep, attempt_line, best_line, holds, step_lines

RETRY_COLOUR, HELD_COLOUR, MISSED_COLOUR = 0xE67E22, 0x2ECC71, 0xE74C3C


# ---------------------------------------------------------------------------- what is shown


def retry_embed(
    step: RetryStep, tried: Review | None = None, best: Review | None = None
) -> discord.Embed:
    """The position before the mistake, what to find, and the verdict on a tried move (and
    the best move once asked for)."""
    names = (safe_name(step.names[0]), safe_name(step.names[1]))
    lines = [step.state.render_emoji(last=step.last), "", *step_lines(step, names)]
    colour = RETRY_COLOUR
    if tried is not None:
        lines += ["", f"**Your try**: {attempt_line(step.game, tried)}"]
        held = holds(tried)
        colour = RETRY_COLOUR if held is None else HELD_COLOUR if held else MISSED_COLOUR
    if best is not None:
        lines += ["", best_line(step.game, best)]
    embed = discord.Embed(
        title=f"Learn from your mistakes: match #{step.match_id} ({present.game_title(step.game)})",
        description="\n".join(lines),
        colour=colour,
    )
    embed.set_footer(text=f"Match #{step.match_id} · move {step.ply + 1} · for {names[step.seat]}")
    return embed


def retry_view(step: RetryStep, *, best_shown: bool = False) -> discord.ui.View:
    """The board's inputs for the position (every legal move), Show the best move, Next."""
    view = discord.ui.View(timeout=None)
    m, ply, state = step.match_id, step.ply, step.state
    legal = state.legal_moves()
    if isinstance(state, Connect4State):
        per_row = (state.cols + 1) // 2 if state.cols <= 10 else 5
        for col in legal:
            view.add_item(RetryColumn(m, ply, col, row=col // per_row))
        last_row = (state.cols - 1) // per_row + 1
    else:
        squares = [mv for mv in legal if state.move_to_str(mv) != "pass"]
        parts = [squares[i : i + MAX_OPTIONS] for i in range(0, len(squares), MAX_OPTIONS)]
        for part, chunk in enumerate(parts):
            options = [
                discord.SelectOption(label=state.move_to_str(mv), value=str(mv)) for mv in chunk
            ]
            view.add_item(RetrySelect(m, ply, part, options, "Your new move", row=part))
        last_row = len(parts)
    if not best_shown:
        view.add_item(BestButton(m, ply, row=last_row))
    if step.index + 1 < step.count:
        view.add_item(NextButton(m, ply, row=last_row))
    return view


def last_embed(match_id: int) -> discord.Embed:
    return discord.Embed(
        title=f"Learn from your mistakes: match #{match_id}",
        description="That was your last mistake in this match. Well done.",
        colour=HELD_COLOUR,
    )


# ---------------------------------------------------------------------------- the handlers

Shown = tuple[discord.Embed, discord.ui.View | None]


async def _answer(
    interaction: discord.Interaction, work: Awaitable[Shown], *, new: bool = False
) -> None:
    """Answer with what `work` gives: a new public message (`new`) or the clicked message,
    updated. A refusal is one ephemeral line (the error pipeline) and changes nothing; work
    slower than DEFER_AFTER (a solve, an analysis to compute) is deferred first."""
    job = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({job}, timeout=DEFER_AFTER)
        if not done:
            await interaction.response.defer(thinking=new)
            if new:
                interaction.extras[PLACEHOLDER] = "public"
        embed, view = await job
    finally:
        job.cancel()
    fields: dict[str, Any] = {"embed": embed, "view": view}
    if interaction.response.is_done():
        interaction.extras.pop(PLACEHOLDER, None)
        await interaction.edit_original_response(**fields)
    elif new:
        await interaction.response.send_message(**fields)
    else:
        await interaction.response.edit_message(**fields)


async def start_retry(interaction: discord.Interaction, match_id: int | None) -> None:
    """`/retry` and the Retry button: a new message at the person's worst mistake."""
    lobby, who = bot_of(interaction).lobby, person(interaction.user)

    async def work() -> Shown:
        step = await lobby.retry(match_id, who)
        return retry_embed(step), retry_view(step)

    await _answer(interaction, work(), new=True)


async def try_move(interaction: discord.Interaction, match_id: int, ply: int, move: int) -> None:
    """A move tried at the mistake of `ply`: the message shows the verdict, the inputs stay."""
    lobby, who = bot_of(interaction).lobby, person(interaction.user)

    async def work() -> Shown:
        step, tried = await lobby.retry_move(match_id, ply, move, who)  # refused before a solve
        if not _best_shown(interaction):
            return retry_embed(step, tried), retry_view(step)
        _, best = await lobby.retry_best(match_id, ply, who)  # asked for before: it stays
        return retry_embed(step, tried, best), retry_view(step, best_shown=True)

    await _answer(interaction, work())


def _best_shown(interaction: discord.Interaction) -> bool:
    """Whether the clicked retry already shows its best move (it has no button for it)."""
    message = interaction.message
    if message is None:
        return False
    ids: list[str] = []
    for row in message.components:
        children = row.children if isinstance(row, discord.ActionRow) else [row]
        ids += [getattr(c, "custom_id", None) or "" for c in children]
    return not any(i.startswith("rb:") for i in ids)


async def show_best(interaction: discord.Interaction, match_id: int, ply: int) -> None:
    lobby, who = bot_of(interaction).lobby, person(interaction.user)

    async def work() -> Shown:
        step, best = await lobby.retry_best(match_id, ply, who)
        return retry_embed(step, best=best), retry_view(step, best_shown=True)

    await _answer(interaction, work())


async def next_mistake(interaction: discord.Interaction, match_id: int, ply: int) -> None:
    lobby, who = bot_of(interaction).lobby, person(interaction.user)

    async def work() -> Shown:
        step = await lobby.retry_next(match_id, ply, who)
        if step is None:
            return last_embed(match_id), None
        return retry_embed(step), retry_view(step)

    await _answer(interaction, work())
