"""A position as a picture shows it, in plain data: the board's size and look, every disc (or
empty hole) and the ringed ones, the coordinates on its edges. Each game's kit describes its
positions this way (`picture`); `tools.pictures` draws any such description with Pillow, so
the drawing knows no game and the engine no drawing library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from engine.games.base import GameState, Move


@dataclass(frozen=True, slots=True)
class Disc:
    """One cell drawn as a disc: `seat` 0 or 1, or None for an empty hole."""

    col: int
    row: int  # from the top
    seat: int | None
    ringed: bool = False  # the last move, or part of a winning line


@dataclass(frozen=True, slots=True)
class Picture:
    cols: int
    rows: int
    #: The board's colour: "blue" (Connect Four's frame), "green" (Othello's felt).
    board: str
    #: Lines between the squares (Othello), or a frame with holes (Connect Four).
    grid: bool
    #: The colours of seat 0's and seat 1's discs: "red", "yellow", "black", "white".
    pieces: tuple[str, str]
    discs: tuple[Disc, ...]
    #: The labels of the columns (under the board, and above it too when `labels_above`) and
    #: of the rows, top row first (on both sides; none when empty).
    col_labels: tuple[str, ...]
    row_labels: tuple[str, ...] = ()
    labels_above: bool = False


class PictureKit(Protocol):
    """What a game's kit provides for pictures (engine/kits.py)."""

    def picture(self, state: GameState, last: Move | None) -> Picture:
        """`state` as a picture shows it, `last` (the move that led to it) ringed."""
        ...
