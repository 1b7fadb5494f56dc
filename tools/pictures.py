"""Pictures of a match for both front ends: a PNG of a position and an animated GIF of a whole
game (a frame per move, the last move ringed, coordinates on the edges, the result on the
last frame), drawn with Pillow from what each game's kit says a position looks like
(`engine.picture`).

Frames are palette images with one fixed palette, so the GIF needs no colour quantising and
Pillow stores each frame as the small rectangle that changed: a 60-move Othello game stays
far below Discord's attachment limit."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from PIL import Image, ImageDraw, ImageFont

from engine.games import new_game
from engine.games.base import GameState, Move
from engine.kits import kit
from engine.picture import Picture, PictureKit

#: The palette, by index: what each index is for.
BG, TEXT, DIM, RING, C4_BOARD, HOLE, RED, YELLOW, GREEN, LINE, BLACK, WHITE = range(12)
_COLOURS = [
    (30, 31, 34),  # background (Discord's dark theme)
    (235, 235, 235),  # text
    (150, 150, 150),  # dim text (coordinates)
    (249, 115, 22),  # ring around the last move and a winning line
    (29, 78, 216),  # Connect Four board
    (20, 21, 24),  # an empty hole
    (220, 38, 38),  # red disc
    (250, 204, 21),  # yellow disc
    (21, 128, 61),  # Othello board
    (10, 70, 35),  # Othello grid lines
    (17, 17, 17),  # black disc
    (245, 245, 245),  # white disc
]
_PALETTE = [v for rgb in _COLOURS for v in rgb] + [0] * (768 - 3 * len(_COLOURS))

CELL = 44  # pixels per board square
EDGE = 22  # the margin that holds coordinates
TOP = 30  # the line of names above the board
BOTTOM = 30  # the line under the board: the last move, or the result
FRAME_MS = 700  # each move's frame
LAST_FRAME_MS = 4000  # the final position stays longer


@dataclass(frozen=True, slots=True)
class Replay:
    """What the pictures of one match need: the game, its moves and the words around them."""

    match_id: int
    game: str
    variant: str | None
    names: tuple[str, str]
    moves: tuple[str, ...]  # as stored, in order (passes included)
    result: str  # the last frame's line, e.g. "Ann wins (four in a row)"


@lru_cache(maxsize=4)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def positions(replay: Replay) -> list[tuple[GameState, Move | None]]:
    """Each position of the game with the move that led to it (None for the start)."""
    state = new_game(replay.game, replay.variant)
    out: list[tuple[GameState, Move | None]] = [(state, None)]
    for text in replay.moves:
        move = state.parse_move(text)
        state = state.play(move)
        out.append((state, move))
    return out


#: The palette index of each colour a game's picture names (engine/picture.py).
COLOURS = {
    "blue": C4_BOARD,
    "green": GREEN,
    "red": RED,
    "yellow": YELLOW,
    "black": BLACK,
    "white": WHITE,
}


def _picture(state: GameState, last: Move | None) -> Picture:
    return cast(PictureKit, kit(state.game)).picture(state, last)


def _size(pic: Picture) -> tuple[int, int]:
    """(width, height) of a picture."""
    return 2 * EDGE + pic.cols * CELL, TOP + 2 * EDGE + pic.rows * CELL + BOTTOM


def _disc(draw: ImageDraw.ImageDraw, x: int, y: int, fill: int, ring: bool) -> None:
    pad = 5
    box = (x + pad, y + pad, x + CELL - pad, y + CELL - pad)
    draw.ellipse(box, fill=fill)
    if ring:
        draw.ellipse(box, outline=RING, width=4)


def _board(draw: ImageDraw.ImageDraw, pic: Picture) -> None:
    """The board: a frame with holes, or squares with lines between them."""
    x0, y0 = EDGE, TOP + EDGE
    width, height = pic.cols * CELL, pic.rows * CELL
    if not pic.grid:
        draw.rectangle((x0, y0, x0 + width - 1, y0 + height - 1), fill=COLOURS[pic.board])
        return
    draw.rectangle((x0, y0, x0 + width, y0 + height), fill=COLOURS[pic.board])
    for i in range(pic.cols + 1):
        draw.line((x0 + i * CELL, y0, x0 + i * CELL, y0 + height), fill=LINE, width=1)
    for i in range(pic.rows + 1):
        draw.line((x0, y0 + i * CELL, x0 + width, y0 + i * CELL), fill=LINE, width=1)


def _labels(draw: ImageDraw.ImageDraw, pic: Picture) -> None:
    """The coordinates on the edges."""
    x0, y0 = EDGE, TOP + EDGE
    font = _font(14)
    for c, label in enumerate(pic.col_labels):
        x = x0 + c * CELL + CELL // 2
        if pic.labels_above:
            draw.text((x, y0 - EDGE // 2), label, fill=DIM, font=font, anchor="mm")
        draw.text((x, y0 + pic.rows * CELL + EDGE // 2), label, fill=DIM, font=font, anchor="mm")
    for r, label in enumerate(pic.row_labels):
        y = y0 + r * CELL + CELL // 2
        draw.text((x0 - EDGE // 2, y), label, fill=DIM, font=font, anchor="mm")
        draw.text((x0 + pic.cols * CELL + EDGE // 2, y), label, fill=DIM, font=font, anchor="mm")


def frame(replay: Replay, state: GameState, last: Move | None, caption: str) -> Image.Image:
    """One picture: names above, the board with coordinates, `caption` under it."""
    pic = _picture(state, last)
    width, height = _size(pic)
    img = Image.new("P", (width, height), BG)
    img.putpalette(_PALETTE)
    draw = ImageDraw.Draw(img)
    a, b = replay.names
    pieces = (COLOURS[pic.pieces[0]], COLOURS[pic.pieces[1]])
    font = _font(15)
    for seat, (name, x) in enumerate(((a, EDGE), (b, width // 2 + 4))):
        draw.ellipse((x, 8, x + 14, 22), fill=pieces[seat], outline=DIM)
        draw.text((x + 20, 15), name[:24], fill=TEXT, font=font, anchor="lm")
    _board(draw, pic)
    for d in pic.discs:
        fill = HOLE if d.seat is None else pieces[d.seat]
        _disc(draw, EDGE + d.col * CELL, TOP + EDGE + d.row * CELL, fill, d.ringed)
    _labels(draw, pic)
    draw.text((width // 2, height - BOTTOM // 2), caption, fill=TEXT, font=font, anchor="mm")
    return img


def _captions(replay: Replay, states: Sequence[tuple[GameState, Move | None]]) -> list[str]:
    out = ["Start"]
    for ply, (text, (before, _)) in enumerate(zip(replay.moves, states, strict=False)):
        who = replay.names[before.to_move()]
        out.append(f"{ply + 1}. {who}: {'passes' if text == 'pass' else text}")
    out[-1] = replay.result
    return out


def _bytes(img: Image.Image, **options: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, **options)  # type: ignore[arg-type]
    return buf.getvalue()


def final_png(replay: Replay) -> bytes:
    """The final position, with the result under it."""
    states = positions(replay)
    state, last = states[-1]
    return _bytes(frame(replay, state, last, replay.result), format="PNG", optimize=True)


def replay_gif(replay: Replay) -> bytes:
    """The whole game: the start, a frame per move, the result on the last frame (looping)."""
    states = positions(replay)
    captions = _captions(replay, states)
    frames = [frame(replay, s, m, c) for (s, m), c in zip(states, captions, strict=True)]
    durations = [FRAME_MS] * (len(frames) - 1) + [LAST_FRAME_MS]
    return _bytes(
        frames[0],
        format="GIF",
        save_all=True,
        append_images=frames[1:],
        duration=durations,
        loop=0,
        disposal=1,
    )
