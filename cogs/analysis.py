"""An analysis on Discord: every move of a finished match judged, as a new public message:
each player's accuracy, the key moments (where the win chance swung most, with the better
move), the costly moves, the replay's GIF, the graph of the win chance over the game (a PNG
whose alt text says it in words) and a Retry button under it (`/analyse`, the Analyse
button)."""

from __future__ import annotations

import asyncio
import contextlib
import io

import discord

from cogs.actions import bot_of, person
from cogs.components import RetryButton
from cogs.names import safe_name
from lobby import present
from lobby.core import AnalysisReport
from lobby.errors import LobbyError
from lobby.moments import alt_text, moment_lines

#: An analysis still running after this many seconds gets a note saying so.
PROGRESS_AFTER = 2.0
VERDICT_COLOUR = 0x9B59B6
MAX_DESCRIPTION = 4096  # Discord's limit for an embed's description


def analysis_embed(report: AnalysisReport) -> discord.Embed:
    """Who played how well (each player's accuracy), the turning point, the key moments and
    the costly moves; the GIF below it."""
    r, a = report.replay, report.analysis
    names = (safe_name(r.names[0]), safe_name(r.names[1]))
    # The result line is plain words around the names: escaped whole.
    lines = present.analysis_lines(a, names, safe_name(r.result))
    lines += ["", "**Key moments** (win chance of the player who moved)", *moment_lines(a, names)]
    costly = present.notable_moves(a, names)
    if costly:
        lines += ["", "**Costly moves**", *costly]
    text = "\n".join(lines)
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1] + "…"
    embed = discord.Embed(
        title=present.analysis_title(r.match_id, r.game)[:256],
        description=text,
        colour=VERDICT_COLOUR,
    )
    how = "stored" if report.stored else f"computed in {a.seconds:.1f} s"
    embed.set_footer(text=f"Match #{r.match_id} · {len(a.moves)} moves · {how}")
    embed.set_image(url=f"attachment://replay-{r.match_id}.gif")
    return embed


def analysis_view(match_id: int, kind: str) -> discord.ui.View | None:
    """Under an analysis: each player may go back to their own mistakes (none in a match
    between two of the bot's players)."""
    if kind == "eve":
        return None
    view = discord.ui.View(timeout=None)
    view.add_item(RetryButton(match_id))
    return view


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
        attachments=[
            discord.File(io.BytesIO(report.gif), filename=f"replay-{n}.gif"),
            discord.File(
                io.BytesIO(report.chart),
                filename=f"win-chance-{n}.png",
                # the graph in words with the names escaped, as everywhere the bot shows them
                description=alt_text(
                    report.analysis,
                    (safe_name(report.replay.names[0]), safe_name(report.replay.names[1])),
                    n,
                    present.game_title(report.replay.game),
                ),
            ),
        ],
        view=analysis_view(n, (await lobby.snapshot(n)).match.kind),
    )
