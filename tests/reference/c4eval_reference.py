"""Plain-Python references for the Connect Four evaluations (`engine.agents.connect4.evals`):
remaining checkers per direction (with the column they point at), the board value with its
won-board term, and the open windows through one disc. The tests check the kernels against them.
"""

from __future__ import annotations

import numpy as np

from engine.agents.connect4.evals import WON_BOARD, no_window, opportunities_score, tables
from engine.games import c4kernels as kern
from engine.games.c4windows import DIRECTIONS, bit, window_cells


def _board(rows: int, cols: int) -> int:
    return sum(((1 << rows) - 1) << (c * (rows + 1)) for c in range(cols))


def remaining_checkers(
    own: int, opp: int, rows: int, cols: int, k: int
) -> list[tuple[int, int | None]]:
    """Seed 002's per-direction result (remaining, best column) for the player owning `own`.

    Directions in `DIRECTIONS` order: vertical, horizontal, diagonal up (to the right), diagonal
    down (to the right). The column is 0-based, None when no window is possible (remaining is
    then `no_window(k)`). Tie-breaks: among the windows with the fewest remaining checkers the
    first in `c4windows.window_cells` order wins (leftmost start column, then lowest start row);
    inside that window the move named is the column needing the most discs (its empty window
    cells plus filler), the leftmost of equal columns.
    """
    mask = own | opp
    empty = _board(rows, cols) & ~mask
    heights = [((mask >> (c * (rows + 1))) & ((1 << rows) - 1)).bit_count() for c in range(cols)]
    best: list[tuple[int, int | None]] = [(no_window(k), None)] * len(DIRECTIONS)
    for cells in window_cells(rows, cols, k):
        wmask = sum(1 << bit(c, r, rows) for c, r in cells)
        if wmask & opp or not wmask & empty:
            continue
        need_by_col: dict[int, int] = {}
        for c, r in cells:
            if empty >> bit(c, r, rows) & 1:
                need_by_col[c] = max(need_by_col.get(c, 0), r - heights[c] + 1)
        total = sum(need_by_col.values())
        d = DIRECTIONS.index((cells[1][0] - cells[0][0], cells[1][1] - cells[0][1]))
        total = min(total, no_window(k))
        if total < best[d][0]:
            most = max(need_by_col.values())
            best[d] = (total, min(c for c, n in need_by_col.items() if n == most))
    return best


def board_value(own: int, opp: int, rows: int, cols: int, k: int) -> int:
    """Seed 000's board value for the player owning `own`: +-10000 if won/lost, else the
    open-window (opportunity) count difference."""
    if kern.is_win(np.uint64(own), rows, k):
        return WON_BOARD
    if kern.is_win(np.uint64(opp), rows, k):
        return -WON_BOARD
    wmask = tables(rows, cols, k)[0]
    return int(opportunities_score(np.uint64(own), np.uint64(opp), wmask))


def stripes_through(own: int, opp: int, cell: int, rows: int, cols: int, k: int) -> int:
    """Seed 000's count for one chip: the open windows through the cell `cell` (a bit index)."""
    wmask = tables(rows, cols, k)[0]
    return sum(1 for w in wmask.tolist() if w >> cell & 1 and not w & opp)
