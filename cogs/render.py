"""What Discord shows of a match and a challenge: the board embed and its buttons/selects, the
challenge and how it ended (an analysis: `cogs/coach.py`).

The board itself is the engine's emoji rendering with the position in words under it (for
screen readers), or, for people who prefer it (`/prefs board:image`), a picture whose alt text
is those words; the words come from `lobby.present` and `lobby.boards`, shared with the
console. Every component carries its match id (and, for moves, the ply) in a
DynamicItem custom id, so boards keep working after a restart and stale clicks are refused.
"""

from __future__ import annotations

import asyncio
import io
import logging
from typing import Any

import discord

from cogs.components import (
    AnalyseButton,
    ChallengeButton,
    ColumnButton,
    HintButton,
    MoveSelect,
    RematchButton,
    ResignButton,
    StopButton,
)
from cogs.names import safe_name
from engine.games.catalog import offer
from engine.games.connect4 import Connect4State
from lobby import boards, present
from lobby.core import TRANSIENT, Lobby, Snapshot
from lobby.errors import LobbyError

log = logging.getLogger(__name__)

MAX_OPTIONS = 25  # Discord's limit per select menu
COLOURS = {"live": 0x3B88C3, "finished": 0x2ECC71, "abandoned": 0x95A5A6}


#: The name of the field that holds the board in words under an emoji board.
WORDS_FIELD = "Board in words"


def board_embed(snap: Snapshot, *, emoji: bool = True) -> discord.Embed:
    """The board's embed: the emoji grid with the position in words under it, or (`emoji`
    False: the board is the message's picture) the status lines alone."""
    lines = [snap.state.render_emoji(last=snap.last_move), ""] if emoji else []
    lines.append(present.status(snap, name=safe_name))
    score = present.score_line(snap)
    if score:
        lines.append(score)
    embed = discord.Embed(
        title=present.title(snap, name=safe_name)[:256],
        description="\n".join(lines),
        colour=COLOURS.get(snap.match.status, 0x3B88C3),
    )
    if emoji:
        embed.add_field(name=WORDS_FIELD, value=board_words(snap), inline=False)
    embed.set_footer(text=present.footer(snap))
    return embed


def board_words(snap: Snapshot) -> str:
    """The position in words (names escaped), within an embed field's and alt text's limit."""
    return boards.describe(snap, name=safe_name, limit=boards.MAX_WORDS)


def board_file(snap: Snapshot, png: bytes) -> discord.File:
    """The board's picture, its alt text the position in words; named by the ply so that a
    client shows the new picture after an edit."""
    name = f"board-{snap.id}-{snap.match.ply}{'' if snap.live else '-end'}.png"
    return discord.File(io.BytesIO(png), filename=name, description=board_words(snap))


async def board_message(lobby: Lobby, snap: Snapshot) -> dict[str, Any]:
    """What a board message is made of (`embed`, `view`, `attachments`), in the style its
    people prefer: the emoji grid and its words, or a picture with them as alt text. The
    attachments are always given, so a board that changed style loses its old picture."""
    style = await lobby.board_style_for(snap)
    hints, analysis = await _allowed(lobby, snap)
    files: list[discord.File] = []
    if style == "image":
        png = await asyncio.to_thread(boards.board_png, snap)  # Pillow: off the event loop
        files.append(board_file(snap, png))
    return {
        "embed": board_embed(snap, emoji=not files),
        "view": board_view(snap, hints=hints, analysis=analysis),
        "attachments": files,
    }


async def _allowed(lobby: Lobby, snap: Snapshot) -> tuple[bool, bool]:
    """Whether the board offers hints and an analysis: a server may allow neither in rated
    games (`/settings`). A store that cannot say now leaves both (the lobby still refuses)."""
    if not snap.match.rated:
        return True, True
    try:
        found = await lobby.server_settings(snap.match.guild_id)
    except TRANSIENT as exc:
        log.warning("settings for the board of match %s not read: %s", snap.id, exc)
        return True, True
    except LobbyError as exc:
        log.warning("settings for the board of match %s not read: %s", snap.id, exc)
        return True, True
    return bool(found.value("rated_hints")), bool(found.value("rated_analysis"))


def board_view(snap: Snapshot, *, hints: bool = True, analysis: bool = True) -> discord.ui.View:
    """Buttons (Connect Four) or selects (Othello) for the player to move, plus controls;
    `hints`, `analysis`: whether the server allows them here (a rated game's may not)."""
    view = discord.ui.View(timeout=None)
    m = snap.match
    if not snap.live:
        if m.kind != "eve":
            view.add_item(RematchButton(m.id))
        if m.ply > 0 and analysis:
            view.add_item(AnalyseButton(m.id))
        return view
    if m.kind == "eve":
        view.add_item(StopButton(m.id))
        return view
    waiting = snap.seat_to_move.is_agent  # the bot is thinking: show, but disable, the inputs
    legal = snap.state.legal_moves()
    if isinstance(snap.state, Connect4State):  # a column button each; else a select of squares
        cols = snap.state.cols
        per_row = (cols + 1) // 2 if cols <= 10 else 5
        for col in range(cols):
            view.add_item(
                ColumnButton(
                    m.id, m.ply, col, disabled=waiting or col not in legal, row=col // per_row
                )
            )
        resign_row = (cols - 1) // per_row + 1
    else:
        squares = [mv for mv in legal if snap.state.move_to_str(mv) != "pass"]
        parts = [squares[i : i + MAX_OPTIONS] for i in range(0, len(squares), MAX_OPTIONS)]
        for part, chunk in enumerate(parts):
            options = [
                discord.SelectOption(label=snap.state.move_to_str(mv), value=str(mv))
                for mv in chunk
            ]
            first, last = snap.state.move_to_str(chunk[0]), snap.state.move_to_str(chunk[-1])
            placeholder = "Your move" if len(parts) == 1 else f"Your move ({first}-{last})"
            view.add_item(
                MoveSelect(m.id, m.ply, part, options, placeholder, disabled=waiting, row=part)
            )
        resign_row = len(parts)
    view.add_item(ResignButton(m.id, row=resign_row))
    if m.kind == "pve" and not waiting and hints:  # against the bot, on the person's turn
        view.add_item(HintButton(m.id, row=resign_row))
    return view


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
