"""Every k-cell window of a Connect Four board, as bitboard masks (Pons' layout).

A window is k cells in a line (vertical, horizontal, or either diagonal) that lie on the board.
Several agents score positions by what each window holds (onestep, the minimax evaluations, the
planner's lines), so the masks are computed once per board size and shared.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

#: (d_col, d_row) steps of the four line directions: vertical, horizontal, diagonal up, down.
DIRECTIONS: tuple[tuple[int, int], ...] = ((0, 1), (1, 0), (1, 1), (1, -1))


def bit(col: int, row: int, rows: int) -> int:
    """The bit index of a cell: one (rows+1)-bit column per column, row 0 at the bottom."""
    return col * (rows + 1) + row


@lru_cache(maxsize=64)
def window_cells(rows: int, cols: int, k: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Every window as a tuple of (col, row) cells, in a fixed order."""
    out: list[tuple[tuple[int, int], ...]] = []
    for dc, dr in DIRECTIONS:
        for col in range(cols):
            for row in range(rows):
                cells = tuple((col + dc * i, row + dr * i) for i in range(k))
                if all(0 <= c < cols and 0 <= r < rows for c, r in cells):
                    out.append(cells)
    return tuple(out)


@lru_cache(maxsize=64)
def window_masks(rows: int, cols: int, k: int) -> tuple[int, ...]:
    """Every window as a bitboard mask."""
    return tuple(
        sum(1 << bit(c, r, rows) for c, r in cells) for cells in window_cells(rows, cols, k)
    )


@lru_cache(maxsize=64)
def window_array(rows: int, cols: int, k: int) -> npt.NDArray[np.uint64]:
    """The window masks as a uint64 array, for numba kernels."""
    return np.array(window_masks(rows, cols, k), dtype=np.uint64)


def count_windows(own: int, empty: int, masks: tuple[int, ...], k: int, discs: int) -> int:
    """Windows holding exactly `discs` of `own` and `k - discs` empty cells."""
    n = 0
    for w in masks:
        if (own & w).bit_count() == discs and (empty & w).bit_count() == k - discs:
            n += 1
    return n
