"""Connect Four line helpers shared by the searching agents (minimax, planner, solver, perfect,
book): which empty cells would complete a line, and the one centre-first column order."""

from __future__ import annotations

import numpy as np

from engine.games.bits import ALL, ZERO, kernel


@kernel
def win_cells(bb: np.uint64, mask: np.uint64, board: np.uint64, rows: int, k: int) -> np.uint64:
    """Empty cells where a disc would complete k in a row for `bb` (any k, any size).

    For each direction d, a cell p completes a line when j discs run from p+d upwards and
    k-1-j from p-d downwards; shifting by i*d >= 64 would be undefined, such runs are empty.
    """
    out = ZERO
    for d in (1, rows + 1, rows, rows + 2):
        for j in range(k):
            a = ALL
            for i in range(1, j + 1):
                s = i * d
                a = a & (bb >> np.uint64(s)) if s < 64 else ZERO
            if a == ZERO:
                continue
            for i in range(1, k - j):
                s = i * d
                a = a & (bb << np.uint64(s)) if s < 64 else ZERO
            out |= a
    return out & board & ~mask


def centre_order(cols: int) -> list[int]:
    """Columns from the centre outwards: 3, 2, 4, 1, 5, 0, 6 on 7 columns.

    Tie rule: of two columns as far from the centre (every pair but the middle one of an odd
    width), the LEFT one comes first: 2, 3, 1, 4, 0, 5 on 6 columns.
    """
    return sorted(range(cols), key=lambda c: (abs(2 * c - (cols - 1)), c))
