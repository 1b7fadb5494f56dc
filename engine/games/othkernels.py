"""Numba kernels for Othello bitboards: move generation, flips, perft and random playouts.

Everything here works on `np.uint64` bitboards from the point of view of the side to move:
`me` holds the mover's discs, `opp` the opponent's. Square index = file + 8 * rank, so a1 = 0,
h1 = 7, a8 = 56, h8 = 63; shifting left by 1 moves east, by 8 north.

The functions are plain module-level `engine.games.bits.kernel` functions rather than methods so
that search agents compiled with numba can call them directly from their own kernels; the
`OthelloState` class in `othello.py` is only a thin immutable wrapper around them.

Wrap-around: an east/west or diagonal shift would carry a disc from the h file onto the a file of
the next rank (or back). Move generation and flips therefore only let the *flanked* discs live on
files b..g (`_INNER`): a line that flips discs on a horizontal or diagonal never has them on the a
or h file, and the one step past the run is computed from a b..g square, so it cannot wrap.
"""

from __future__ import annotations

import numpy as np

from engine.games.bits import ONE, ZERO, inline_kernel, kernel, popcount, xorshift

_INNER = np.uint64(0x7E7E7E7E7E7E7E7E)  # files b..g
_S1 = np.uint64(1)  # east / west
_S7 = np.uint64(7)  # north-west / south-east
_S8 = np.uint64(8)  # north / south
_S9 = np.uint64(9)  # north-east / south-west


@inline_kernel
def _moves_dir(me: np.uint64, mask: np.uint64, s: np.uint64) -> np.uint64:
    """Empty-or-not squares reached past a run of `mask` discs that starts next to `me`.

    Six fill steps cover the longest possible run of flanked discs on an 8-square line.
    """
    t = mask & (me << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    left = t << s
    t = mask & (me >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    return left | (t >> s)


@kernel
def legal_mask(me: np.uint64, opp: np.uint64) -> np.uint64:
    """Bitboard of the empty squares where the side to move flips at least one disc."""
    inner = opp & _INNER
    moves = _moves_dir(me, inner, _S1)
    moves |= _moves_dir(me, opp, _S8)
    moves |= _moves_dir(me, inner, _S7)
    moves |= _moves_dir(me, inner, _S9)
    return moves & ~(me | opp)


@inline_kernel
def _flips_dir(me: np.uint64, mask: np.uint64, m: np.uint64, s: np.uint64) -> np.uint64:
    """Discs flipped along both rays of one axis: the `mask` run from `m`, if `me` closes it."""
    t = mask & (m << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    # The run is contiguous from m, so the only `me` square one step past it is its far end.
    f = t if (t << s) & me else ZERO
    t = mask & (m >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    if (t >> s) & me:
        f |= t
    return f


@kernel
def flips(me: np.uint64, opp: np.uint64, sq: int) -> np.uint64:
    """Bitboard of the opponent discs that a disc on `sq` flips (0 if the move is illegal).

    Occupancy of `sq` is not checked here; callers test `legal_mask` first.
    """
    m = ONE << np.uint64(sq)
    inner = opp & _INNER
    f = _flips_dir(me, inner, m, _S1)
    f |= _flips_dir(me, opp, m, _S8)
    f |= _flips_dir(me, inner, m, _S7)
    f |= _flips_dir(me, inner, m, _S9)
    return f


@kernel
def bit_index(bit: np.uint64) -> int:
    """Square index of a one-bit board (binary search; avoids float log2 rounding)."""
    n = 0
    if bit >> np.uint64(32):
        bit >>= np.uint64(32)
        n += 32
    if bit >> np.uint64(16):
        bit >>= np.uint64(16)
        n += 16
    if bit >> np.uint64(8):
        bit >>= np.uint64(8)
        n += 8
    if bit >> np.uint64(4):
        bit >>= np.uint64(4)
        n += 4
    if bit >> np.uint64(2):
        bit >>= np.uint64(2)
        n += 2
    if bit >> ONE:
        n += 1
    return n


@kernel
def _perft(me: np.uint64, opp: np.uint64, depth: int) -> int:
    """Leaves below a position with `depth` >= 1 plies to go.

    The last ply is bulk-counted: a position with moves contributes one leaf per move, one
    without moves contributes exactly one leaf (a pass, or a finished game).
    """
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if depth == 1 or legal_mask(opp, me) == ZERO:
            return 1  # a finished game is one leaf however much depth remains
        return _perft(opp, me, depth - 1)
    if depth == 1:
        return int(popcount(moves))
    total = 0
    while moves:
        bit = moves & (~moves + ONE)
        f = flips(me, opp, bit_index(bit))
        total += _perft(opp ^ f, me | f | bit, depth - 1)
        moves ^= bit
    return total


@kernel
def perft(me: np.uint64, opp: np.uint64, depth: int) -> int:
    """Number of leaf paths `depth` plies deep; a pass is a ply, a finished game one leaf."""
    if depth <= 0:
        return 1
    return _perft(me, opp, depth)


@kernel
def _nth_bit(x: np.uint64, n: int) -> np.uint64:
    """The `n`-th lowest set bit of `x` (0-based) as a one-bit board."""
    for _ in range(n):
        x &= x - ONE
    return x & (~x + ONE)


@kernel
def _seed_state(seed: int) -> np.uint64:
    """A nonzero xorshift state from any integer seed (splitmix-style scrambling)."""
    s = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x6A09E667F3BCC909)
    s ^= s >> np.uint64(31)
    return s if s != ZERO else np.uint64(0x2545F4914F6CDD1D)


@kernel
def _playout(me: np.uint64, opp: np.uint64, rng: np.uint64) -> tuple[int, np.uint64]:
    """Play uniformly random moves to the end; (result for the starting mover, new rng state)."""
    sign = 1
    passed = False
    while True:
        moves = legal_mask(me, opp)
        if moves == ZERO:
            if passed:
                break
            passed = True
        else:
            passed = False
            rng = xorshift(rng)
            bit = _nth_bit(moves, int(rng % np.uint64(popcount(moves))))
            f = flips(me, opp, bit_index(bit))
            me, opp = me | f | bit, opp ^ f
        me, opp = opp, me
        sign = -sign
    diff = popcount(me) - popcount(opp)
    if diff == 0:
        return 0, rng
    return (sign if diff > 0 else -sign), rng


@kernel
def random_playout(me: np.uint64, opp: np.uint64, seed: int) -> int:
    """Result of one uniformly random game for the side to move: 1 win, 0 draw, -1 loss."""
    return _playout(me, opp, _seed_state(seed))[0]


@kernel
def playouts(me: np.uint64, opp: np.uint64, n: int, seed: int) -> int:
    """Sum of `n` random playout results for the side to move (wins minus losses).

    One RNG stream runs through all games, so this measures raw playout speed without
    reseeding costs; agents use it as a cheap Monte Carlo evaluation.
    """
    rng = _seed_state(seed)
    total = 0
    for _ in range(n):
        r, rng = _playout(me, opp, rng)
        total += r
    return total
