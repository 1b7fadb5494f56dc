"""The opening book: the exact score (Pons' convention, so the win or loss with its distance) of
every 7x6 position of the first `BOOK_PLY` discs and a column reaching it, built offline by our
own solver (``python -m tools book``, `tools/c4book.py`; how: docs/agents.md) and read from
`data/c4book.txt`. The solver reads it (`arrays`) before searching, so that the first positions,
the slowest to solve, cost nothing; past the book the 12-disc database (`edge.py`) bounds the
search.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.games.connect4 import Connect4State

ROWS, COLS, K = 6, 7, 4
BOOK_PLY = 4  # the shipped book's depth (tests and benchmarks check it to that depth)
MAX_PLY = 8  # deepest book `python -m tools book` builds; lookups stop there
MAX_SCORE = ROWS * COLS // 2  # Pons' scores lie within +-21 on 7x6
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
    """Book lines into {key: (score, 0-based column)}; BookError names the bad line."""
    book: dict[int, tuple[int, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        try:
            key, outcome, col = int(parts[0]), int(parts[1]), int(parts[2]) - 1
        except (ValueError, IndexError):
            raise BookError(f"book line {n}: expected '<key> <score> <column>'") from None
        if len(parts) != 3 or abs(outcome) > MAX_SCORE or not 0 <= col < COLS or key < 0:
            raise BookError(f"book line {n}: {line.strip()!r} is out of range")
        book[key] = (outcome, col)
    return book


@functools.cache
def load(path: Path = BOOK_PATH) -> dict[int, tuple[int, int]]:
    """The book as {key: (score, column)}; empty when the file is missing."""
    if not path.exists():
        return {}
    return parse(path.read_text())


@functools.cache
def arrays(path: Path = BOOK_PATH) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int8]]:
    """(sorted keys, their scores) for the solver's kernels."""
    book = load(path)
    keys_ = np.array(sorted(book), dtype=np.uint64)
    scores = np.array([book[int(k)][0] for k in keys_], dtype=np.int8)
    return keys_, scores


def lookup(state: Connect4State, path: Path = BOOK_PATH) -> tuple[int, int] | None:
    """(score for the side to move, a 0-based column reaching it), or None if not in the book."""
    if (state.rows, state.cols, state.k) != (ROWS, COLS, K) or state.ply > MAX_PLY:
        return None
    return lookup_in(load(path), state)


def lookup_in(book: dict[int, tuple[int, int]], state: Connect4State) -> tuple[int, int] | None:
    """(score, column) of `state` in a book of any board size, or None."""
    key, mirrored = keys(state)
    if key in book:
        return book[key]
    if mirrored in book:
        outcome, col = book[mirrored]
        return outcome, state.cols - 1 - col
    return None
