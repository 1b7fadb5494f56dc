"""The exact score of every 7x6 position of 12 discs: the 12-ply database with win distances of
the `bitbully-databases` package (MIT licence, Markus Thill), read by our own code.

The file is a sorted run of 5-byte records: a 32-bit big-endian signed code of the board, then
one signed byte, the value for the first player (who is to move after 12 discs): 0 a draw,
100 - n a win with the n-th disc from now, -(100 - n) a loss to the opponent's n-th disc from
now. The code reads the columns left to right, each bottom up: "10" a first player's disc, "11"
a second player's, "0" ends the column (a full column too), and one "0" closes the code: 32
bits for 12 discs. A board is looked up as it is and mirrored.

The solver's kernels look a position of 12 discs up here instead of searching below it. The
file (21 MB) is mapped into memory read-only, once per process, and shared by the processes of
a machine through the page cache.
"""

from __future__ import annotations

import functools
import importlib.util
import mmap
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.games.bits import kernel, search_kernel

U8 = npt.NDArray[np.uint8]

PLY = 12  # the discs of every position in the database
ROWS, COLS = 6, 7
RECORD = 5
MISSING = -1000  # what `lookup` returns for a code not in the file
PACKAGE = "bitbully_databases"
FILE = "assets/book_12ply_distances.dat"
#: No database, typed as the mapped one is (read-only): the kernels compile once for both.
EMPTY = np.zeros(0, dtype=np.uint8)
EMPTY.flags.writeable = False


def path() -> Path | None:
    """The database file of the installed package, or None when the package is missing. The
    package's folder is found without importing it: only its data file is used."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / FILE
    return found if found.is_file() else None


@functools.cache
def data() -> U8:
    """The database as read-only bytes mapped into memory (empty without the package)."""
    where = path()
    if where is None:
        return EMPTY
    with where.open("rb") as f:
        view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(view, dtype=np.uint8)


@kernel
def code(cur: np.uint64, mask: np.uint64, mirrored: bool) -> int:
    """The file's code of a 7x6 position whose side to move is the first player (`cur`)."""
    value = 0
    bits = 0
    for i in range(COLS):
        c = COLS - 1 - i if mirrored else i
        for r in range(ROWS):
            cell = np.uint64(1) << np.uint64(c * (ROWS + 1) + r)
            if not mask & cell:
                break
            value = value << 2 | (2 if cur & cell else 3)
            bits += 2
        value <<= 1  # the column's end
        bits += 1
    value <<= 32 - bits  # the closing zero (and nothing else for 12 discs)
    return value - (1 << 32) if value >= 1 << 31 else value


@search_kernel
def _record(book: U8, i: int) -> int:
    """The signed code of record `i`."""
    j = i * RECORD
    value = (int(book[j]) << 24) | (int(book[j + 1]) << 16) | (int(book[j + 2]) << 8)
    value |= int(book[j + 3])
    return value - (1 << 32) if value >= 1 << 31 else value


@search_kernel
def _find(book: U8, target: int) -> int:
    """The stored value of a code, or MISSING."""
    lo = 0
    hi = book.shape[0] // RECORD - 1
    while lo <= hi:
        mid = (lo + hi) >> 1
        got = _record(book, mid)
        if got == target:
            value = int(book[mid * RECORD + 4])
            return value - 256 if value >= 128 else value
        if got < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return MISSING


@search_kernel
def lookup(book: U8, cur: np.uint64, mask: np.uint64) -> int:
    """Pons' score of a 7x6 position of 12 discs for the side to move, or MISSING.

    The value v for the side to move becomes the winner's disc: d = 100 - |v| discs from now,
    number 12 + d of the game, and Pons' score (44 - (12 + d)) // 2 for the side of that disc.
    """
    value = _find(book, code(cur, mask, False))
    if value == MISSING:
        value = _find(book, code(cur, mask, True))
        if value == MISSING:
            return MISSING
    if value == 0:
        return 0
    d = 100 - abs(value)
    score = (44 - PLY - d) // 2
    return score if value > 0 else -score
