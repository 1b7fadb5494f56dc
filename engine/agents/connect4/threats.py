"""Threats on a Connect Four bitboard in Pascal Pons' layout (four in a row only): the cells
that would complete a line, the moves that do not hand the opponent a win, an immediate win.

`h` is rows + 1 (the column stride), `bottom` the bottom cell of every column, `board` every
cell of the board.
"""

from __future__ import annotations

import numpy as np

from engine.games.bits import kernel


@kernel
def winning_cells(pos: np.uint64, mask: np.uint64, h: int, board: np.uint64) -> np.uint64:
    """Empty cells that would complete a line of four for the discs `pos` (Pons' k = 4 trick).

    The four steps are 1 (vertical), h (horizontal), h - 1 and h + 1 (the diagonals). Cells
    need not be playable yet: these are all threats.
    """
    one = np.uint64(1)
    r = (pos << one) & (pos << np.uint64(2)) & (pos << np.uint64(3))
    for step in (h, h - 1, h + 1):
        d = np.uint64(step)
        d2 = np.uint64(2 * step)
        d3 = np.uint64(3 * step)
        p = (pos << d) & (pos << d2)
        r |= p & (pos << d3)
        r |= p & (pos >> d)
        p = (pos >> d) & (pos >> d2)
        r |= p & (pos << d)
        r |= p & (pos >> d3)
    return r & (board ^ mask)


@kernel
def non_losing(
    cur: np.uint64, mask: np.uint64, h: int, bottom: np.uint64, board: np.uint64
) -> np.uint64:
    """Playable cells that do not let the opponent win next move (0: every move loses).

    A forced block is the only candidate; two forced blocks mean the game is lost; and no move
    may go right under an opponent threat.
    """
    possible = (mask + bottom) & board
    opp_win = winning_cells(cur ^ mask, mask, h, board)
    forced = possible & opp_win
    if forced:
        if forced & (forced - np.uint64(1)):
            return np.uint64(0)
        possible = forced
    return possible & ~(opp_win >> np.uint64(1))


@kernel
def can_win_next(
    cur: np.uint64, mask: np.uint64, h: int, bottom: np.uint64, board: np.uint64
) -> bool:
    """Whether the side to move has a move that wins on the spot."""
    return bool((winning_cells(cur, mask, h, board) & (mask + bottom) & board) != np.uint64(0))
