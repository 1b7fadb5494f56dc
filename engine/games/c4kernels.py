"""Numba kernels for Connect Four bitboards (Pascal Pons' layout).

A board of `rows` x `cols` is stored column by column in one uint64: the cell (col, row), row 0
at the bottom, is bit ``col * (rows + 1) + row``. Each column has one extra, always empty
sentinel bit on top, so shifting a line of discs by a direction step can never wrap from one
column into the next: a wrapped line would have to pass through a sentinel. That is what lets
`is_win` test every line on the board with a handful of shift-and operations, and it limits the
board to ``(rows + 1) * cols <= 64`` bits. When that product is exactly 64 the last sentinel is
bit 63, so every value here is an np.uint64 (a signed int64 or a Python int would overflow or
silently promote to float64 inside numba).

A position is two bitboards: `current` (discs of the side to move) and `mask` (all discs).
Playing swaps the point of view: the new `current` is the old opponent, ``current ^ mask``.

All kernels are module-level `engine.games.bits.kernel` functions on plain ints and np.uint64
so that search agents can call them from their own numba code. From Python, pass bitboards as
np.uint64 (a Python int would be typed int64 and mix badly with the uint64
constants); numba hands uint64 results back as Python ints.
"""

from __future__ import annotations

import numpy as np

from engine.games.bits import ONE, ZERO, kernel, popcount, seed_rng, xorshift


@kernel
def column_mask(col: int, rows: int) -> np.uint64:
    """The playable cells of one column (sentinel excluded)."""
    return ((ONE << np.uint64(rows)) - ONE) << np.uint64(col * (rows + 1))


@kernel
def bottom_mask(rows: int, cols: int) -> np.uint64:
    """The bottom cell of every column; ``mask + bottom_mask`` yields each column's next cell."""
    b = ZERO
    for c in range(cols):
        b |= ONE << np.uint64(c * (rows + 1))
    return b


@kernel
def board_mask(rows: int, cols: int) -> np.uint64:
    """Every playable cell: ``mask == board_mask`` means the board is full."""
    return bottom_mask(rows, cols) * ((ONE << np.uint64(rows)) - ONE)


@kernel
def top_mask(rows: int, cols: int) -> np.uint64:
    """The top playable cell of every column: a column is full when its top bit is in `mask`."""
    return bottom_mask(rows, cols) << np.uint64(rows - 1)


@kernel
def legal_mask(mask: np.uint64, rows: int, cols: int) -> np.uint64:
    """One bit per playable column: the cell a disc dropped there would land in.

    Adding the bottom row carries each column's lowest empty cell into place; in a full column
    the carry lands on the sentinel, which the board mask removes.
    """
    return (mask + bottom_mask(rows, cols)) & board_mask(rows, cols)


@kernel
def move_bit(mask: np.uint64, col: int, rows: int) -> np.uint64:
    """The cell a disc dropped in `col` lands in, or 0 if the column is full."""
    return (mask + (ONE << np.uint64(col * (rows + 1)))) & column_mask(col, rows)


@kernel
def play_bit(current: np.uint64, mask: np.uint64, move: np.uint64) -> tuple[np.uint64, np.uint64]:
    """Play the disc `move` (a single legal cell bit); returns the next (current, mask)."""
    return current ^ mask, mask | move


@kernel
def is_win(bb: np.uint64, rows: int, k: int) -> bool:
    """Whether `bb` holds k discs in a row in any direction.

    After j rounds of ``t = (t >> d) & bb``, bit p of t is set iff cells p, p+d, ..., p+j*d all
    hold discs, so k-1 rounds find every line of k. The steps are 1 (vertical), rows+1
    (horizontal), rows (diagonal going down to the right) and rows+2 (going up to the right).
    """
    for d in (1, rows + 1, rows, rows + 2):
        if d >= 64:  # no two cells of a 64-bit board are that far apart
            continue
        s = np.uint64(d)
        t = bb
        for _ in range(k - 1):
            t = (t >> s) & bb
            if t == ZERO:
                break
        if t:
            return True
    return False


@kernel
def winning_cells(bb: np.uint64, rows: int, k: int) -> np.uint64:
    """Every disc of `bb` that lies in some line of k or more (0 if there is none).

    The start bits of each line (as in `is_win`) are smeared k-1 steps back up the line. A game
    stops at its first win, so all such lines pass through the last disc played.
    """
    cells = ZERO
    for d in (1, rows + 1, rows, rows + 2):
        if d >= 64:
            continue
        s = np.uint64(d)
        t = bb
        for _ in range(k - 1):
            t = (t >> s) & bb
        for _ in range(k):
            cells |= t
            t <<= s
    return cells


@kernel
def winning_moves_mask(
    current: np.uint64, mask: np.uint64, rows: int, cols: int, k: int
) -> np.uint64:
    """The landing cells of the moves that win on the spot for the side to move."""
    legal = legal_mask(mask, rows, cols)
    wins = ZERO
    while legal:
        move = legal & (~legal + ONE)
        legal ^= move
        if is_win(current | move, rows, k):
            wins |= move
    return wins


@kernel
def mirror(bb: np.uint64, rows: int, cols: int) -> np.uint64:
    """`bb` reflected left to right (column c goes to cols-1-c), for symmetric lookups."""
    h = rows + 1
    col = (ONE << np.uint64(rows)) - ONE  # not `h` bits: a 64-bit shift is undefined
    out = ZERO
    for c in range(cols):
        bits = (bb >> np.uint64(c * h)) & col
        out |= bits << np.uint64((cols - 1 - c) * h)
    return out


@kernel
def _playout(
    current: np.uint64, mask: np.uint64, rows: int, cols: int, k: int, state: np.uint64
) -> tuple[int, np.uint64]:
    """`random_playout` threading the RNG state through, so `playouts` can chain games."""
    if is_win(current ^ mask, rows, k):
        return -1, state
    board = board_mask(rows, cols)
    h = np.uint64(rows + 1)
    col_bits = (ONE << np.uint64(rows)) - ONE
    ncols = np.uint64(cols)
    sign = 1
    while mask != board:
        # Draw columns until one is open: cheaper than enumerating the legal moves, and still
        # uniform over them. Multiply-shift maps the top 32 random bits onto 0..cols-1.
        while True:
            state = xorshift(state)
            shift = (((state >> np.uint64(32)) * ncols) >> np.uint64(32)) * h
            move = (mask + (ONE << shift)) & (col_bits << shift)
            if move:
                break
        if is_win(current | move, rows, k):
            return sign, state
        current, mask = current ^ mask, mask | move
        sign = -sign
    return 0, state


@kernel
def random_playout(
    current: np.uint64, mask: np.uint64, rows: int, cols: int, k: int, seed: int
) -> int:
    """Play uniformly random moves to the end: 1 win, 0 draw, -1 loss for the side to move now."""
    return _playout(current, mask, rows, cols, k, seed_rng(seed))[0]


@kernel
def playouts(
    current: np.uint64, mask: np.uint64, rows: int, cols: int, k: int, n: int, seed: int
) -> tuple[int, int, int]:
    """Run n random playouts; (wins, draws, losses) for the side to move now."""
    state = seed_rng(seed)
    wins = draws = losses = 0
    for _ in range(n):
        result, state = _playout(current, mask, rows, cols, k, state)
        if result > 0:
            wins += 1
        elif result == 0:
            draws += 1
        else:
            losses += 1
    return wins, draws, losses


@kernel
def _perft(
    current: np.uint64,
    mask: np.uint64,
    bottom: np.uint64,
    board: np.uint64,
    rows: int,
    k: int,
    depth: int,
) -> int:
    """`perft` below a position that is neither won nor full, with depth >= 1."""
    legal = (mask + bottom) & board
    if depth == 1:
        return popcount(legal)
    total = 0
    while legal:
        move = legal & (~legal + ONE)
        legal ^= move
        child = mask | move
        if child == board or is_win(current | move, rows, k):
            total += 1
        else:
            total += _perft(current ^ mask, child, bottom, board, rows, k, depth - 1)
    return total


@kernel
def perft(current: np.uint64, mask: np.uint64, rows: int, cols: int, k: int, depth: int) -> int:
    """Count the move paths of length `depth`, a finished game ending its path early.

    A won or full position is a leaf counting 1 whatever depth is left (it is not expanded), and
    every position counts 1 at depth 0.
    """
    board = board_mask(rows, cols)
    if depth <= 0 or mask == board or is_win(current ^ mask, rows, k):
        return 1
    return _perft(current, mask, bottom_mask(rows, cols), board, rows, k, depth)
