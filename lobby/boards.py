"""Boards everyone can read: a position in words (for screen readers, and for clients where an
emoji grid misaligns) and as a picture, shared by both front ends.

The words and the picture come from what each game's kit says a position looks like
(`engine.picture`), so nothing here names a game: a board without row labels is read by column
from the bottom (discs that fall), one with row labels by square, each colour's squares in turn.
"""

from __future__ import annotations

import io
from typing import cast

from engine.kits import kit
from engine.picture import Picture, PictureKit
from lobby.present import Names, match_title, plain, result_line
from lobby.records import Snapshot
from tools.pictures import Replay, frame

#: Discord's limit for an attachment's description (its alt text) and an embed field's value.
MAX_WORDS = 1024
#: How a board is shown: the emoji grid (and its words), or a picture with the words as alt text.
STYLES = ("emoji", "image")


def picture_of(snap: Snapshot) -> Picture:
    return cast(PictureKit, kit(snap.state.game)).picture(snap.state, snap.last_move)


def position_words(pic: Picture) -> str:
    """The discs on the board: 'column 4: red, yellow; column 5: red' (by column, bottom
    first, empty columns left out), or 'black: d5 e4; white: d4 e5' (by square)."""
    if not pic.row_labels:
        parts = []
        for col, label in enumerate(pic.col_labels):
            stack = sorted((d for d in pic.discs if d.col == col and d.seat is not None),
                           key=lambda d: -d.row)  # fmt: skip
            if stack:
                colours = ", ".join(pic.pieces[d.seat] for d in stack if d.seat is not None)
                parts.append(f"column {label}: {colours}")
        return "; ".join(parts) if parts else "the board is empty"
    parts = []
    for seat, colour in enumerate(pic.pieces):
        squares = sorted(
            (pic.col_labels[d.col] + pic.row_labels[d.row] for d in pic.discs if d.seat == seat),
        )
        parts.append(f"{colour}: {' '.join(squares) or 'none'}")
    return "; ".join(parts)


def describe(snap: Snapshot, *, name: Names = plain, limit: int = MAX_WORDS) -> str:
    """The board in words: the game, whose turn (or how it ended), the last move, the legal
    moves and the position; at most `limit` characters. `name` shows a player's name."""
    pic = picture_of(snap)
    state, m = snap.state, snap.match
    colour = pic.pieces
    what = match_title(m.game, m.variant)
    if snap.live:
        seat = state.to_move()
        who = snap.seats[seat]
        thinking = " (thinking)" if who.is_agent else ""
        lines = [f"{what}, move {m.ply + 1}: {colour[seat]} ({name(who.name)}) to play{thinking}."]
    else:
        ended = result_line(snap)
        for seat in (0, 1):  # the result names a player: say their colour too
            raw = snap.seats[seat].name
            if m.result == str(seat) and ended.startswith(raw):
                ended = f"{colour[seat]} ({name(raw)})" + ended[len(raw) :]
        lines = [f"{what}: {ended}."]
    if snap.last_move is not None and m.ply > 0:
        mover = 1 - state.to_move()  # a pass is a move too: the side to move always turns
        text = state.move_to_str(snap.last_move)
        where = f"column {text}" if not pic.row_labels else text
        lines.append(f"Last move: {colour[mover]} {'passed' if text == 'pass' else where}.")
    if snap.live:
        legal = [state.move_to_str(mv) for mv in state.legal_moves()]
        legal = [t for t in legal if t != "pass"] or ["pass"]
        if pic.row_labels:  # squares in reading order, as the position lists them
            legal.sort()
        lines.append(f"Legal moves: {', '.join(legal)}.")
    lines.append(f"Position: {position_words(pic)}.")
    text = " ".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def board_png(snap: Snapshot) -> bytes:
    """The position as a PNG (the replay's picture): the names above, the last move ringed,
    whose turn or how it ended under it."""
    names = (snap.seats[0].name, snap.seats[1].name)
    replay = Replay(snap.id, snap.match.game, snap.match.variant, names, (), "")
    buf = io.BytesIO()
    frame(replay, snap.state, snap.last_move, result_line(snap)).save(buf, format="PNG")
    return buf.getvalue()
