"""The last moves of the exact Othello endgame solver (`endgame.py`): the tables it reads, the
solvers of the last 1-4 empty squares (no move generation: the
empty squares are tried directly, odd quadrants first, and the last move only counts its
flips) and stable discs. Details: docs/agents.md.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt

from engine.games.bits import ONE, ZERO, kernel, lsb_index, popcnt, search_kernel
from engine.games.othkernels import flips

U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]

# the stats slot of the node count, shared with `endgame.py` and `search.py`
_NODES = 0
_NONE = -99  # no move tried yet (below any score)

# -- tables -----------------------------------------------------------------------------------


def _neighbours() -> U64Array:
    out = np.zeros(64, dtype=np.uint64)
    for sq in range(64):
        m = 0
        for df in (-1, 0, 1):
            for dr in (-1, 0, 1):
                f, r = sq % 8 + df, sq // 8 + dr
                if (df or dr) and 0 <= f < 8 and 0 <= r < 8:
                    m |= 1 << (f + 8 * r)
        out[sq] = m
    return out


NEIGHBOURS = _neighbours()
QUADRANTS = np.array(
    [0x000000000F0F0F0F, 0x00000000F0F0F0F0, 0x0F0F0F0F00000000, 0xF0F0F0F000000000],
    dtype=np.uint64,
)
CORNERS = np.uint64(0x8100000000000081)
_INNER = np.uint64(0x007E7E7E7E7E7E00)  # b2..g7: all 8 neighbours on the board
_NOT_A = np.uint64(0xFEFEFEFEFEFEFEFE)
_NOT_H = np.uint64(0x7F7F7F7F7F7F7F7F)

# Static square values for ordering ties (corners high, X-squares low).
SQUARE_VALUE = np.array(
    [
        [18, 4, 16, 12, 12, 16, 4, 18],
        [4, 2, 6, 8, 8, 6, 2, 4],
        [16, 6, 14, 10, 10, 14, 6, 16],
        [12, 8, 10, 0, 0, 10, 8, 12],
        [12, 8, 10, 0, 0, 10, 8, 12],
        [16, 6, 14, 10, 10, 14, 6, 16],
        [4, 2, 6, 8, 8, 6, 2, 4],
        [18, 4, 16, 12, 12, 16, 4, 18],
    ],
    dtype=np.int64,
).reshape(64)


def _diagonals() -> U64Array:
    """The 15 + 15 diagonals (a1-h8 direction, then a8-h1 direction) as masks."""
    out = []
    for step in (9, 7):
        for k in range(-7, 8):
            m = 0
            for sq in range(64):
                f, r = sq % 8, sq // 8
                if (step == 9 and r - f == k) or (step == 7 and r + f - 7 == k):
                    m |= 1 << sq
            out.append(m)
    return np.array(out, dtype=np.uint64)


DIAGONALS = _diagonals()


def _edge_stable_table() -> npt.NDArray[np.uint8]:
    """EDGE_STABLE[p * 256 + o]: the discs of p (an 8-cell edge) that no sequence of moves on
    that edge can flip, whoever plays where (a disc may land on an edge square without flipping
    anything along the edge: its flips may run along another line)."""
    table = np.zeros(256 * 256, dtype=np.uint8)

    def place(p: int, o: int, x: int) -> tuple[int, int]:
        """p plays on x: (p, o) after the flips along the line."""
        flipped = 0
        for step in (1, -1):
            run = 0
            y = x + step
            while 0 <= y < 8 and o >> y & 1:
                run |= 1 << y
                y += step
            if run and 0 <= y < 8 and p >> y & 1:
                flipped |= run
        return p | flipped | (1 << x), o & ~flipped

    @cache
    def stable(p: int, o: int) -> int:
        s = p
        empty = ~(p | o) & 0xFF
        for x in range(8):
            if not empty >> x & 1:
                continue
            np_, no = place(p, o, x)
            s &= stable(np_, no)
            no2, np2 = place(o, p, x)
            s &= stable(np2, no2)
            if not s:
                break
        return s

    for p in range(256):
        for o in range(256):
            if not p & o:
                table[p * 256 + o] = stable(p, o)
    return table


_EDGE_TABLE: npt.NDArray[np.uint8] | None = None


def edge_table() -> npt.NDArray[np.uint8]:
    """The edge stability table, built on first use (about a second of pure Python)."""
    global _EDGE_TABLE
    if _EDGE_TABLE is None:
        _EDGE_TABLE = _edge_stable_table()
    return _EDGE_TABLE


# file a <-> one byte (bit r = rank r+1), by multiplication
_FILE_A = np.uint64(0x0101010101010101)
_FILE_H = np.uint64(0x8080808080808080)
_TO_BYTE = np.uint64(0x0102040810204080)
_UNPACK = np.array(
    [sum(1 << (8 * r) for r in range(8) if b >> r & 1) for b in range(256)], dtype=np.uint64
)

# Below this alpha (by empties) a stability cut-off is too unlikely to be worth computing.
STABILITY_THRESHOLD = np.array(
    [99, 99, 99, 99, 6, 8, 10, 12, 14, 16, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40] + [42] * 44,
    dtype=np.int64,
)

# -- the last moves -----------------------------------------------------------------------


@kernel
def _final(me: np.uint64, opp: np.uint64) -> int:
    """Disc difference of a finished game, empties to the winner."""
    a = popcnt(me)
    b = popcnt(opp)
    d = a - b
    if d > 0:
        return d + (64 - a - b)
    if d < 0:
        return d - (64 - a - b)
    return 0


def _count_flip_table() -> npt.NDArray[np.int64]:
    """COUNT_FLIP[x, p]: the discs a disc on position x of a full line flips along it, where
    bit i of p says position i holds the mover's disc (every other position, the opponent's;
    positions past a short line's end read 0, so nothing is outflanked there)."""
    out = np.zeros((8, 256), dtype=np.int64)
    for x in range(8):
        for p in range(256):
            n = 0
            for step in (1, -1):
                y = x + step
                while 0 <= y < 8 and not p >> y & 1:
                    y += step
                if 0 <= y < 8:
                    n += abs(y - x) - 1
            out[x, p] = n
    return out


def _diagonal_through() -> U64Array:
    """DIAG_THROUGH[sq]: the a1-h8 and the a8-h1 diagonal through sq."""
    out = np.zeros((64, 2), dtype=np.uint64)
    for sq in range(64):
        f, r = sq % 8, sq // 8
        out[sq, 0] = DIAGONALS[r - f + 7]
        out[sq, 1] = DIAGONALS[15 + r + f]
    return out


COUNT_FLIP = _count_flip_table()
DIAG_THROUGH = _diagonal_through()


@kernel
def count_last_flip(p: np.uint64, sq: int) -> int:
    """How many discs `p` flips by playing `sq` on an otherwise full board (every disc not of
    `p` is the opponent's): each line through sq is read into one byte, a table does the rest
    (four look-ups instead of a whole flip and a popcount: the last move only needs a count)."""
    f = sq & 7
    r = sq >> 3
    sh = np.uint64(56)
    n: int = COUNT_FLIP[f, int((p >> np.uint64(8 * r)) & np.uint64(0xFF))]
    n += COUNT_FLIP[r, int((((p >> np.uint64(f)) & _FILE_A) * _TO_BYTE) >> sh)]
    n += COUNT_FLIP[f, int(((p & DIAG_THROUGH[sq, 0]) * _FILE_A) >> sh)]
    n += COUNT_FLIP[f, int(((p & DIAG_THROUGH[sq, 1]) * _FILE_A) >> sh)]
    return n


@kernel
def _solve1(me: np.uint64, opp: np.uint64, sq: int) -> int:
    """Exact score with one empty square `sq`, `me` to move."""
    a2 = 2 * popcnt(me)
    n = count_last_flip(me, sq)
    if n:
        return a2 - 62 + 2 * n
    n = count_last_flip(opp, sq)
    if n:
        return a2 - 64 - 2 * n
    d = a2 - 63
    return d + 1 if d > 0 else d - 1


@kernel
def _solve2(me: np.uint64, opp: np.uint64, alpha: int, beta: int, x1: int, x2: int) -> int:
    """Exact score with the two empty squares x1, x2."""
    best = _NONE
    if NEIGHBOURS[x1] & opp:
        f = flips(me, opp, x1)
        if f:
            best = -_solve1(opp ^ f, me | f | (ONE << np.uint64(x1)), x2)
            if best >= beta:
                return best
    if NEIGHBOURS[x2] & opp:
        f = flips(me, opp, x2)
        if f:
            v = -_solve1(opp ^ f, me | f | (ONE << np.uint64(x2)), x1)
            if v > best:
                best = v
    if best != _NONE:
        return best
    # me passes
    best = -_NONE
    if NEIGHBOURS[x1] & me:
        f = flips(opp, me, x1)
        if f:
            best = _solve1(me ^ f, opp | f | (ONE << np.uint64(x1)), x2)
            if best <= alpha:
                return best
    if NEIGHBOURS[x2] & me:
        f = flips(opp, me, x2)
        if f:
            v = _solve1(me ^ f, opp | f | (ONE << np.uint64(x2)), x1)
            if v < best:
                best = v
    if best != -_NONE:
        return best
    return _final(me, opp)


@kernel
def _try3(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    x: int,
    y: int,
    z: int,
) -> int:
    """Score of `me` playing x (y, z left), or _NONE if x is not a legal move."""
    if NEIGHBOURS[x] & opp:
        f = flips(me, opp, x)
        if f:
            return -_solve2(opp ^ f, me | f | (ONE << np.uint64(x)), -beta, -alpha, y, z)
    return _NONE


@kernel
def _solve3(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    x1: int,
    x2: int,
    x3: int,
) -> int:
    """Exact score with three empty squares (in parity order)."""
    for side in range(2):
        best = _NONE
        v = _try3(me, opp, alpha, beta, x1, x2, x3)
        if v > best:
            best = v
            if best >= beta:
                return best if side == 0 else -best
            if best > alpha:
                alpha = best
        v = _try3(me, opp, alpha, beta, x2, x1, x3)
        if v > best:
            best = v
            if best >= beta:
                return best if side == 0 else -best
            if best > alpha:
                alpha = best
        v = _try3(me, opp, alpha, beta, x3, x1, x2)
        if v > best:
            best = v
        if best != _NONE:
            return best if side == 0 else -best
        me, opp = opp, me
        alpha, beta = -beta, -alpha
    return _final(me, opp)  # swapped twice: back to the original side


@kernel
def _try4(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    x: int,
    a: int,
    b: int,
    c: int,
) -> int:
    if NEIGHBOURS[x] & opp:
        f = flips(me, opp, x)
        if f:
            return -_solve3(opp ^ f, me | f | (ONE << np.uint64(x)), -beta, -alpha, a, b, c)
    return _NONE


@search_kernel
def _solve4(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    x1: int,
    x2: int,
    x3: int,
    x4: int,
    stats: I64Array,
) -> int:
    """Exact score with four empty squares (in parity order). Counts itself and its children
    (the 3-empty positions) as nodes; smaller positions are not counted."""
    for side in range(2):
        best = _NONE
        v = _try4(me, opp, alpha, beta, x1, x2, x3, x4)
        if v > best:
            best = v
            if best >= beta:
                stats[_NODES] += 2 + side
                return best if side == 0 else -best
            if best > alpha:
                alpha = best
        v = _try4(me, opp, alpha, beta, x2, x1, x3, x4)
        if v > best:
            best = v
            if best >= beta:
                stats[_NODES] += 3 + side
                return best if side == 0 else -best
            if best > alpha:
                alpha = best
        v = _try4(me, opp, alpha, beta, x3, x1, x2, x4)
        if v > best:
            best = v
            if best >= beta:
                stats[_NODES] += 4 + side
                return best if side == 0 else -best
            if best > alpha:
                alpha = best
        v = _try4(me, opp, alpha, beta, x4, x1, x2, x3)
        if v > best:
            best = v
        if best != _NONE:
            stats[_NODES] += 5 + side
            return best if side == 0 else -best
        me, opp = opp, me
        alpha, beta = -beta, -alpha
    stats[_NODES] += 2
    return _final(me, opp)


@kernel
def _odd_mask(empty: np.uint64) -> np.uint64:
    """The quadrants holding an odd number of empty squares."""
    m = ZERO
    for q in range(4):
        if popcnt(empty & QUADRANTS[q]) & 1:
            m |= QUADRANTS[q]
    return m


@kernel
def _next(a: np.uint64, b: np.uint64) -> tuple[int, np.uint64, np.uint64]:
    """The lowest square of `a`, or of `b` once `a` is empty, and what is left of both."""
    if a:
        return lsb_index(a), a & (a - ONE), b
    return lsb_index(b), a, b & (b - ONE)


@search_kernel
def _solve4_entry(me: np.uint64, opp: np.uint64, alpha: int, beta: int, stats: I64Array) -> int:
    """`_solve4` with the four empty squares put in parity order."""
    empty = ~(me | opp)
    odd = _odd_mask(empty)
    a = empty & odd
    b = empty & ~odd
    x1, a, b = _next(a, b)
    x2, a, b = _next(a, b)
    x3, a, b = _next(a, b)
    x4, a, b = _next(a, b)
    return _solve4(me, opp, alpha, beta, x1, x2, x3, x4, stats)


# -- stability --------------------------------------------------------------------------------


@kernel
def _full_lines(occ: np.uint64) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """Squares whose horizontal, vertical, a1-h8 and a8-h1 lines are full."""
    h = ZERO
    for r in range(8):
        row = np.uint64(0xFF) << np.uint64(8 * r)
        if occ & row == row:
            h |= row
    v = occ & (occ >> np.uint64(8))
    v &= v >> np.uint64(16)
    v &= v >> np.uint64(32)
    v = (v & np.uint64(0xFF)) * _FILE_A
    d9 = ZERO
    for k in range(2, 13):
        m = DIAGONALS[k]
        if occ & m == m:
            d9 |= m
    d7 = ZERO
    for k in range(17, 28):
        m = DIAGONALS[k]
        if occ & m == m:
            d7 |= m
    return h, v, d9, d7


@search_kernel
def _edge_stable(me: np.uint64, opp: np.uint64, table: npt.NDArray[np.uint8]) -> np.uint64:
    s = ZERO
    low = np.uint64(0xFF)
    s |= np.uint64(table[int(me & low) * 256 + int(opp & low)])
    sh = np.uint64(56)
    s |= np.uint64(table[int(me >> sh) * 256 + int(opp >> sh)]) << sh
    pa = int(((me & _FILE_A) * _TO_BYTE) >> sh)
    oa = int(((opp & _FILE_A) * _TO_BYTE) >> sh)
    s |= _UNPACK[table[pa * 256 + oa]]
    s7 = np.uint64(7)
    ph = int((((me & _FILE_H) >> s7) * _TO_BYTE) >> sh)
    oh = int((((opp & _FILE_H) >> s7) * _TO_BYTE) >> sh)
    s |= _UNPACK[table[ph * 256 + oh]] << s7
    return np.uint64(s)


@search_kernel
def stable_discs(me: np.uint64, opp: np.uint64, table: npt.NDArray[np.uint8]) -> np.uint64:
    """Discs of `me` that can never be flipped (edges exactly, inner discs conservatively:
    full lines and stable neighbours in all four directions)."""
    occ = me | opp
    h, v, d9, d7 = _full_lines(occ)
    stable = _edge_stable(me, opp, table) & me
    candidates = me & _INNER
    stable |= candidates & h & v & d9 & d7
    if stable == ZERO:
        return stable
    s1, s7, s8, s9 = np.uint64(1), np.uint64(7), np.uint64(8), np.uint64(9)
    while True:
        old = stable
        sh = (stable >> s1) | (stable << s1) | h
        sv = (stable >> s8) | (stable << s8) | v
        sd9 = (stable >> s9) | (stable << s9) | d9
        sd7 = (stable >> s7) | (stable << s7) | d7
        stable |= sh & sv & sd9 & sd7 & candidates
        if stable == old:
            return stable
