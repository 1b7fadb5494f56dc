"""The shipped puzzle pool: one text file a game in `engine/puzzles/data/`, read once per
process.

A file's lines are tab-separated fields, `#` lines are comments:
`id  moves  answer  plies  value  line  rating`, where `moves` and `line` are the game's moves
(`GameState.move_to_str`) separated by spaces (`-` for none). The kind follows from the game.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
GAMES = ("connect4", "othello")
KINDS = {"connect4": "win", "othello": "best"}
PREFIXES = {"connect4": "c4", "othello": "oth"}
FIELDS = ("id", "moves", "answer", "plies", "value", "line", "rating")


@dataclass(frozen=True)
class Puzzle:
    """A position with one proven best move."""

    id: str  # stable across regenerations: the game's prefix and a hash of the position
    game: str  # "connect4" | "othello"
    moves: tuple[str, ...]  # the game's moves from the start position (GameState.move_to_str)
    answer: str  # the one best move, same notation
    kind: str  # "win" (Connect Four: the side to move wins in `plies`) | "best" (Othello)
    plies: int  # Connect Four: plies to the win, both sides' moves (odd, 3..15);
    # Othello: the number of empty squares (10..16)
    value: int  # Connect Four: `plies` again; Othello: the exact final disc margin for the
    # side to move with best play on both sides
    line: tuple[str, ...]  # the solver's principal line from the position, the answer first
    rating: float  # a starting rating (openskill's mu scale, 25 = average), from the difficulty


def path(game: str) -> Path:
    """The shipped file of `game`'s puzzles; ValueError on an unknown game."""
    if game not in GAMES:
        raise ValueError(f"no puzzles for {game!r}: choose one of {', '.join(GAMES)}")
    return DATA / f"{game}.txt"


def _moves(text: str) -> tuple[str, ...]:
    return () if text == "-" else tuple(text.split(" "))


def _text(moves: Iterable[str]) -> str:
    return " ".join(moves) or "-"


def to_line(p: Puzzle) -> str:
    """A puzzle as one line of a pool file."""
    fields = (p.id, _text(p.moves), p.answer, str(p.plies), str(p.value), _text(p.line))
    return "\t".join((*fields, f"{p.rating:.2f}"))


def from_line(game: str, text: str) -> Puzzle:
    """A puzzle from one line of `game`'s pool file; ValueError if it is malformed."""
    parts = text.rstrip("\n").split("\t")
    if len(parts) != len(FIELDS):
        raise ValueError(f"a puzzle line has {len(FIELDS)} tab-separated fields: {text!r}")
    pid, moves, answer, plies, value, line, rating = parts
    if not pid.startswith(PREFIXES[game] + "-"):
        raise ValueError(f"a {game} puzzle's id starts with {PREFIXES[game]}-: {pid!r}")
    return Puzzle(
        pid, game, _moves(moves), answer, KINDS[game], int(plies), int(value), _moves(line),
        float(rating),
    )  # fmt: skip


def read(game: str, file: Path) -> tuple[Puzzle, ...]:
    """Every puzzle of a pool file (a missing file holds none)."""
    if not file.exists():
        return ()
    lines = file.read_text(encoding="utf-8").splitlines()
    return tuple(from_line(game, s) for s in lines if s.strip() and not s.startswith("#"))


@functools.cache
def load_pool(game: str) -> tuple[Puzzle, ...]:
    """The shipped pool of `game`, read once per process; ValueError on an unknown game."""
    return read(game, path(game))


@functools.cache
def _by_id() -> dict[str, Puzzle]:
    return {p.id: p for game in GAMES for p in load_pool(game)}


def puzzle_by_id(puzzle_id: str) -> Puzzle | None:
    """The shipped puzzle with this id, or None."""
    return _by_id().get(puzzle_id)
