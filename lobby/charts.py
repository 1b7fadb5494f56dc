"""Charts as small PNGs drawn with Pillow (the bot does not install matplotlib): a player's
rating over their rated games, one line per game (the rating shown everywhere: mu - 3 sigma),
and the win chance over an analysed match (`lobby.moments` gives its values and words)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from itertools import pairwise

from PIL import Image, ImageDraw, ImageFont

from engine.games.catalog import title
from lobby.models import RatingPoint

WIDTH, HEIGHT = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 40, 40  # the plot's margins: axes labels and the title
BG, AXIS, GRID, TEXT = (30, 31, 34), (150, 150, 150), (60, 62, 68), (235, 235, 235)
LINES = [(88, 101, 242), (250, 204, 21), (87, 242, 135), (237, 66, 69)]  # one per game


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values from at most `low` to at least `high` (a span of at least 2)."""
    if high - low < 2:
        low, high = (low + high) / 2 - 1, (low + high) / 2 + 1
    span = high - low
    raw = span / (count - 1)
    step = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * step >= raw:
            step *= m
            break
    first = math.floor(low / step) * step
    out = [round(first, 6)]
    while out[-1] < high:
        out.append(round(out[-1] + step, 6))
    return out


def rating_chart(name: str, points: Sequence[RatingPoint]) -> bytes:
    """The PNG of `points` (one player's history, any games)."""
    img = Image.new("RGB", (WIDTH, HEIGHT), BG)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=13)
    draw.text((LEFT, 14), f"Rating of {name[:40]} (mu - 3 sigma)", fill=TEXT, font=font)
    by_game: dict[str, list[RatingPoint]] = {}
    for p in points:
        by_game.setdefault(p.game, []).append(p)
    if not by_game:
        draw.text(
            (WIDTH // 2, HEIGHT // 2), "No rated games yet", fill=TEXT, font=font, anchor="mm"
        )
        return _png(img)
    values = [p.ordinal for p in points]
    ticks = _ticks(min(values), max(values))
    low, high = ticks[0], ticks[-1]
    most = max(p.games for p in points)
    first = min(p.games for p in points)
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP

    def xy(games: int, value: float) -> tuple[float, float]:
        fx = 0.5 if most == first else (games - first) / (most - first)
        return x0 + fx * (x1 - x0), y0 - (value - low) / (high - low) * (y0 - y1)

    for t in ticks:
        _, y = xy(first, t)
        draw.line((x0, y, x1, y), fill=GRID)
        draw.text((x0 - 6, y), f"{t:g}", fill=AXIS, font=font, anchor="rm")
    draw.line((x0, y0, x1, y0), fill=AXIS)
    draw.line((x0, y0, x0, y1), fill=AXIS)
    draw.text((x0, y0 + 14), f"game {first}", fill=AXIS, font=font, anchor="lm")
    draw.text((x1, y0 + 14), f"game {most}", fill=AXIS, font=font, anchor="rm")
    legend_x = x0 + 110
    for i, (game, series) in enumerate(sorted(by_game.items())):
        colour = LINES[i % len(LINES)]
        line = [xy(p.games, p.ordinal) for p in series]
        if len(line) == 1:
            x, y = line[0]
            draw.ellipse((x - 3, y - 3, x + 3, y + 3), fill=colour)
        else:
            draw.line(line, fill=colour, width=3, joint="curve")
        draw.line((legend_x, y0 + 14, legend_x + 18, y0 + 14), fill=colour, width=3)
        label = f"{title(game)} {series[-1].ordinal:.1f}"
        draw.text((legend_x + 24, y0 + 14), label, fill=TEXT, font=font, anchor="lm")
        legend_x += 40 + int(draw.textlength(label, font=font))
    return _png(img)


CHART_HEIGHT = 240
FIRST, SECOND, MOMENT = (88, 101, 242), (250, 204, 21), (237, 66, 69)


def win_chart(
    names: tuple[str, str], chances: Sequence[float | None], marks: Sequence[int]
) -> bytes:
    """The PNG of the first player's win chance at the start and after each move (`chances`,
    0..1; None: not known, a gap), the first player's side above the middle line filled in
    their colour, the second's below in theirs; `marks`: the plies after which a key moment is
    ringed."""
    img = Image.new("RGB", (WIDTH, CHART_HEIGHT), BG)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=13)
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, CHART_HEIGHT - BOTTOM, TOP
    draw.text((x0, 14), f"Win chance: {names[0][:28]} (top)", fill=FIRST, font=font)
    draw.text((x1, 14), f"{names[1][:28]} (bottom)", fill=SECOND, font=font, anchor="ra")
    n = max(1, len(chances) - 1)
    mid = (y0 + y1) / 2

    def xy(ply: float, chance: float) -> tuple[float, float]:
        return x0 + ply / n * (x1 - x0), y0 - chance * (y0 - y1)

    def fill(i: float, a: float, j: float, b: float) -> None:
        (xa, ya), (xb, yb) = xy(i, a), xy(j, b)
        colour = FIRST if a + b >= 1.0 else SECOND
        draw.polygon([(xa, mid), (xa, ya), (xb, yb), (xb, mid)], fill=_dim(colour))

    points = [(i, c) for i, c in enumerate(chances) if c is not None]
    for (i, a), (j, b) in pairwise(points):
        if j != i + 1:
            continue  # a gap where the chance is not known
        if (a - 0.5) * (b - 0.5) < 0:  # it crosses the middle: each side in its colour
            cross = i + (0.5 - a) / (b - a)
            fill(i, a, cross, 0.5)
            fill(cross, 0.5, j, b)
        else:
            fill(i, a, j, b)
        draw.line((*xy(i, a), *xy(j, b)), fill=TEXT, width=2)
    for t, text in ((1.0, "100%"), (0.5, "50%"), (0.0, "100%")):
        _, y = xy(0, t)
        draw.line((x0, y, x1, y), fill=GRID if t == 0.5 else AXIS)
        draw.text((x0 - 6, y), text, fill=AXIS, font=font, anchor="rm")
    draw.text((x0, y0 + 14), "start", fill=AXIS, font=font, anchor="lm")
    draw.text((x1, y0 + 14), f"move {len(chances) - 1}", fill=AXIS, font=font, anchor="rm")
    known = dict(points)
    for ply in marks:
        if ply in known:
            x, y = xy(ply, known[ply])
            draw.ellipse((x - 5, y - 5, x + 5, y + 5), outline=MOMENT, width=2)
    return _png(img)


def _dim(colour: tuple[int, int, int]) -> tuple[int, int, int]:
    """A colour halfway to the background: the fill under the line."""
    r, g, b = ((c + d) // 2 for c, d in zip(colour, BG, strict=True))
    return r, g, b


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
