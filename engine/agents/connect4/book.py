"""The opening book of the `perfect` agent: the exact outcome of every 7x6 position of the first
`BOOK_PLY` discs and a column keeping it, built offline by our own solver (``python -m tools
book``, `tools/c4book.py`; how: docs/agents.md) and read from `data/c4book.txt`.
"""

from __future__ import annotations

import functools
from pathlib import Path

from engine.games.connect4 import Connect4State

ROWS, COLS, K = 6, 7, 4
BOOK_PLY = 4  # the shipped book's depth (tests and benchmarks check it to that depth)
MAX_PLY = 8  # deepest book `python -m tools book` builds; lookups stop there
#: The shipped book, the one the agent reads. `python -m tools book` builds into the user data
#: folder (or --out) and copies over this file only when told to (--replace-shipped).
BOOK_PATH = Path(__file__).parent.parent / "data" / "c4book.txt"


class BookError(ValueError):
    """A book file that does not parse or does not cover what it claims."""


def keys(state: Connect4State) -> tuple[int, int]:
    """(key, mirror key) of a position."""
    _, _, _, cur, mask = state.mirror_key()
    return state.current + state.mask, cur + mask


def canonical(state: Connect4State, col: int) -> tuple[int, int]:
    """The book key of a position and `col` seen in that key's orientation."""
    key, mirrored = keys(state)
    return (mirrored, state.cols - 1 - col) if mirrored < key else (key, col)


def parse(text: str) -> dict[int, tuple[int, int]]:
    """Book lines into {key: (outcome, 0-based column)}; BookError names the bad line."""
    book: dict[int, tuple[int, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        try:
            key, outcome, col = int(parts[0]), int(parts[1]), int(parts[2]) - 1
        except (ValueError, IndexError):
            raise BookError(f"book line {n}: expected '<key> <outcome> <column>'") from None
        if len(parts) != 3 or outcome not in (-1, 0, 1) or not 0 <= col < COLS or key < 0:
            raise BookError(f"book line {n}: {line.strip()!r} is out of range")
        book[key] = (outcome, col)
    return book


@functools.cache
def load(path: Path = BOOK_PATH) -> dict[int, tuple[int, int]]:
    """The book as {key: (outcome, column)}; empty when the file is missing."""
    if not path.exists():
        return {}
    return parse(path.read_text())


def lookup(state: Connect4State, path: Path = BOOK_PATH) -> tuple[int, int] | None:
    """(outcome for the side to move, a 0-based column keeping it), or None if not in the book."""
    if (state.rows, state.cols, state.k) != (ROWS, COLS, K) or state.ply > MAX_PLY:
        return None
    return lookup_in(load(path), state)


def lookup_in(book: dict[int, tuple[int, int]], state: Connect4State) -> tuple[int, int] | None:
    """(outcome, column) of `state` in a book of any board size, or None."""
    key, mirrored = keys(state)
    if key in book:
        return book[key]
    if mirrored in book:
        outcome, col = book[mirrored]
        return outcome, state.cols - 1 - col
    return None
