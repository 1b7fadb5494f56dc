"""Exact Othello endgame solver (numba): the final disc difference with perfect play on both sides.

Negamax alpha-beta (principal variation search, fail-soft) in layers by the number of empty
squares, each with the speed-ups that pay at its size (details: docs/agents.md):

* 1-4 empties (`_solve1` .. `_solve4`): no move generation; the empty squares are tried
  directly, odd quadrants first (parity), and the last move only counts its flips.
* 5..`SHALLOW_EMPTIES`: plain alpha-beta, moves in odd quadrants first, stability cut-off.
* above: a transposition table (lower and upper bounds), fastest-first ordering (fewest
  opponent replies, corners counted twice, few discs next to empty squares, odd quadrants),
  stability cut-offs and, from `ETC_EMPTIES`, enhanced transposition cut-offs; from
  `SORT_SEARCH_EMPTIES` a shallow search with the static evaluation adds to that order.

The root is `solve_root`: (score, best move in stats[_BEST]) for a window; a wide window is
solved as a series of narrow ones (`_aspiration`). Node counting and the
node limit (stats[_LIMIT], stats[_ABORT]) work as in `minimax.py`'s kernels, so the same chunked,
deadline-checked driver runs both.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
from numba import types

from engine.agents.othello.evals import evaluate
from engine.games.bits import ONE, ZERO, kernel, lsb_index, msb_index, popcnt
from engine.games.bits import _ctlz64 as _clz
from engine.games.bits import typed_kernel as _typed

U64Array = npt.NDArray[np.uint64]
I8Array = npt.NDArray[np.int8]
I64Array = npt.NDArray[np.int64]

# stats slots, shared with minimax.py (which also uses 4)
_NODES, _LIMIT, _ABORT, _BEST = 0, 1, 2, 3
_ROOT_MOVE = 5
"""The best root move proven so far by an unfinished solve (-1: none yet)."""

SHALLOW_EMPTIES = 6
"""At most this many empties: the shallow layer (no table, parity ordering)."""
TT_EMPTIES = 8
"""At least this many empties: the transposition table is used."""
ETC_EMPTIES = 10
"""At least this many empties: enhanced transposition cut-offs."""
SORT_SEARCH_EMPTIES = 18
"""At least this many empties: a shallow search with the evaluation (depth 1 at 18-20 empties,
2 at 21-23, ...) adds to the fastest-first order."""
ASPIRATION_STEP = 4
"""After a root window fails, the next is this far past the bound it returned."""

MAX_PLY = 80
MAX_MOVES = 36
PASS_MOVE = 64
_NONE = -99  # no move tried yet (below any score)

# -- tables -----------------------------------------------------------------------------------


def _rays() -> U64Array:
    """RAYS[sq, d]: the squares from sq (excluded) to the edge in direction d; d < 4 go up the
    square indices (E, N, NE, NW), d >= 4 down (W, S, SW, SE)."""
    steps = [(1, 0), (0, 1), (1, 1), (-1, 1), (-1, 0), (0, -1), (-1, -1), (1, -1)]
    out = np.zeros((64, 8), dtype=np.uint64)
    for sq in range(64):
        for d, (df, dr) in enumerate(steps):
            f, r = sq % 8 + df, sq // 8 + dr
            m = 0
            while 0 <= f < 8 and 0 <= r < 8:
                m |= 1 << (f + 8 * r)
                f, r = f + df, r + dr
            out[sq, d] = m
    return out


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


RAYS = _rays()
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

# -- flips and the last moves -----------------------------------------------------------------


_INNER_FILES = np.uint64(0x7E7E7E7E7E7E7E7E)


@kernel
def _moves_dir(me: np.uint64, mask: np.uint64, s: np.uint64, s2: np.uint64) -> np.uint64:
    """Squares past a run of `mask` discs next to `me`, both ways along one axis (a parallel
    prefix fill: four steps instead of six)."""
    fl = mask & (me << s)
    fl |= mask & (fl << s)
    pre = mask & (mask << s)
    fl |= pre & (fl << s2)
    fl |= pre & (fl << s2)
    fr = mask & (me >> s)
    fr |= mask & (fr >> s)
    pre = mask & (mask >> s)
    fr |= pre & (fr >> s2)
    fr |= pre & (fr >> s2)
    return (fl << s) | (fr >> s)


@kernel
def legal_mask(me: np.uint64, opp: np.uint64) -> np.uint64:
    """The legal moves of `me` (as `othkernels.legal_mask`, a few times faster)."""
    inner = opp & _INNER_FILES
    m = _moves_dir(me, inner, np.uint64(1), np.uint64(2))
    m |= _moves_dir(me, opp, np.uint64(8), np.uint64(16))
    m |= _moves_dir(me, inner, np.uint64(7), np.uint64(14))
    m |= _moves_dir(me, inner, np.uint64(9), np.uint64(18))
    return m & ~(me | opp)


_HIGH = np.uint64(0x8000000000000000)


@kernel
def flip(me: np.uint64, opp: np.uint64, sq: int) -> np.uint64:
    """The opponent discs a disc of `me` on the empty square `sq` flips (0: not a legal move).

    Branch-free: along each ray the first square that is not an opponent disc is found (the
    lowest set bit going up the square indices, the highest going down); if it holds a disc of
    `me`, the opponent discs before it flip.
    """
    f = ZERO
    for d in range(4):
        r = RAYS[sq, d]
        x = r & ~opp
        m = x & (ZERO - x) & me  # the outflanking disc, or 0
        f |= r & (m - ((m | (ZERO - m)) >> np.uint64(63)))
    for d in range(4, 8):
        r = RAYS[sq, d]
        x = (r & ~opp) | ONE  # never 0: clz stays below 64
        m = (_HIGH >> np.uint64(_clz(x))) & me & r
        f |= r & (ZERO - (m << ONE))
    return f


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
        f = flip(me, opp, x1)
        if f:
            best = -_solve1(opp ^ f, me | f | (ONE << np.uint64(x1)), x2)
            if best >= beta:
                return best
    if NEIGHBOURS[x2] & opp:
        f = flip(me, opp, x2)
        if f:
            v = -_solve1(opp ^ f, me | f | (ONE << np.uint64(x2)), x1)
            if v > best:
                best = v
    if best != _NONE:
        return best
    # me passes
    best = -_NONE
    if NEIGHBOURS[x1] & me:
        f = flip(opp, me, x1)
        if f:
            best = _solve1(me ^ f, opp | f | (ONE << np.uint64(x1)), x2)
            if best <= alpha:
                return best
    if NEIGHBOURS[x2] & me:
        f = flip(opp, me, x2)
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
        f = flip(me, opp, x)
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
        f = flip(me, opp, x)
        if f:
            return -_solve3(opp ^ f, me | f | (ONE << np.uint64(x)), -beta, -alpha, a, b, c)
    return _NONE


@kernel
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


@kernel
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


@kernel
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


@kernel
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


# -- the table --------------------------------------------------------------------------------
# keys[i] = (me, opp); vals[i] = (lower, upper, move, empties), empties -1 = free.


@kernel
def _slot(me: np.uint64, opp: np.uint64, size: int) -> int:
    h = me * np.uint64(0x9E3779B97F4A7C15) + opp * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(size - 2))  # type: ignore[return-value]


@kernel
def _find(me: np.uint64, opp: np.uint64, s: int, keys: U64Array, vals: I8Array) -> int:
    if vals[s, 3] >= 0 and keys[s, 0] == me and keys[s, 1] == opp:
        return s
    if vals[s + 1, 3] >= 0 and keys[s + 1, 0] == me and keys[s + 1, 1] == opp:
        return s + 1
    return -1


@kernel
def _store(
    me: np.uint64,
    opp: np.uint64,
    s: int,
    empties: int,
    alpha: int,
    beta: int,
    best: int,
    move: int,
    keys: U64Array,
    vals: I8Array,
) -> None:
    """Record what a search with window (alpha, beta) found: an exact score or a bound."""
    e = _find(me, opp, s, keys, vals)
    if e < 0:
        # slot s keeps the deeper entry, s + 1 takes the rest
        if vals[s, 3] <= empties:
            if vals[s, 3] >= 0:
                keys[s + 1, 0] = keys[s, 0]
                keys[s + 1, 1] = keys[s, 1]
                for i in range(4):
                    vals[s + 1, i] = vals[s, i]
            e = s
        else:
            e = s + 1
        keys[e, 0] = me
        keys[e, 1] = opp
        vals[e, 0] = -64
        vals[e, 1] = 64
        vals[e, 2] = -1
        vals[e, 3] = empties
    if best < beta and best < vals[e, 1]:
        vals[e, 1] = best
    if best > alpha and best > vals[e, 0]:
        vals[e, 0] = best
    if move >= 0 and (best > alpha or vals[e, 2] < 0):
        vals[e, 2] = move


# -- the shallow layer ------------------------------------------------------------------------


@_typed(
    types.int64(
        types.uint64, types.uint64, types.int64, types.int64, types.int64[::1], types.uint8[::1]
    )
)
def _shallow(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    stats: I64Array,
    table: npt.NDArray[np.uint8],
) -> int:
    """Alpha-beta with 5..SHALLOW_EMPTIES empties: odd quadrants first, no transposition
    table, the stability cut-off."""
    stats[_NODES] += 1
    occ = me | opp
    empty = ~occ
    n_empty = 64 - popcnt(occ)
    # stability cut-off, as in _pvs
    if alpha >= STABILITY_THRESHOLD[n_empty]:
        top = 64 - 2 * popcnt(stable_discs(opp, me, table))
        if top <= alpha:
            return top
        if top < beta:
            beta = top
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            return _final(me, opp)
        return -_shallow(opp, me, -beta, -alpha, stats, table)
    odd = _odd_mask(empty)
    best = _NONE
    for group in range(2):
        ms = moves & odd if group == 0 else moves & ~odd
        while ms:
            sq = lsb_index(ms)
            bit = ONE << np.uint64(sq)
            ms ^= bit
            f = flip(me, opp, sq)
            c_me = opp ^ f
            c_opp = me | f | bit
            if n_empty == 5:
                v = -_solve4_entry(c_me, c_opp, -beta, -alpha, stats)
            else:
                v = -_shallow(c_me, c_opp, -beta, -alpha, stats, table)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        return best
    return best


@kernel
def _below(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    stats: I64Array,
    table: npt.NDArray[np.uint8],
) -> int:
    """Exact score of a position with at most SHALLOW_EMPTIES empties (and at least one)."""
    n_empty = 64 - popcnt(me | opp)
    if n_empty > 4:
        return _shallow(me, opp, alpha, beta, stats, table)
    empty = ~(me | opp)
    if n_empty == 4:
        return _solve4_entry(me, opp, alpha, beta, stats)
    if n_empty == 3:
        odd = _odd_mask(empty)
        a = empty & odd
        b = empty & ~odd
        x1, a, b = _next(a, b)
        x2, a, b = _next(a, b)
        x3, a, b = _next(a, b)
        return _solve3(me, opp, alpha, beta, x1, x2, x3)
    if n_empty == 2:
        x1 = lsb_index(empty)
        x2 = msb_index(empty)
        return _solve2(me, opp, alpha, beta, x1, x2)
    stats[_NODES] += 1
    return _solve1(me, opp, lsb_index(empty))


# -- the deep layers --------------------------------------------------------------------------


@_typed(types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64))
def _sort_search(me: np.uint64, opp: np.uint64, depth: int, alpha: int, beta: int) -> int:
    """A small alpha-beta over the static evaluation, to order moves near the root."""
    if depth <= 0:
        return evaluate(me, opp)
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            return evaluate(me, opp)
        return -_sort_search(opp, me, depth - 1, -beta, -alpha)
    best = -(1 << 30)
    while moves:
        sq = lsb_index(moves)
        bit = ONE << np.uint64(sq)
        moves ^= bit
        f = flip(me, opp, sq)
        v = -_sort_search(opp ^ f, me | f | bit, depth - 1, -beta, -alpha)
        if v > best:
            best = v
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    return best


@kernel
def _order_score(
    me: np.uint64, opp: np.uint64, sq: int, f: np.uint64, odd: np.uint64, n_empty: int
) -> int:
    """Fastest first: few (corner-weighted) replies, little potential mobility, parity."""
    bit = ONE << np.uint64(sq)
    c_me = opp ^ f
    c_opp = me | f | bit
    mob = legal_mask(c_me, c_opp)
    score = -(popcnt(mob) + popcnt(mob & CORNERS)) << 6
    empty = ~(c_me | c_opp)
    # opponent's potential mobility: its... our discs next to an empty square
    score -= popcnt(c_opp & _neigh_of(empty)) << 2
    # our discs that are stable around the corners
    cs = (
        ((c_opp & np.uint64(0x0100000000000001)) << np.uint64(1))
        | ((c_opp & np.uint64(0x8000000000000080)) >> np.uint64(1))
        | ((c_opp & np.uint64(0x0000000000000081)) << np.uint64(8))
        | ((c_opp & np.uint64(0x8100000000000000)) >> np.uint64(8))
        | CORNERS
    ) & c_opp
    score += popcnt(cs) << 5
    if bit & odd:
        score += 8
    score += int(SQUARE_VALUE[sq])
    return score


@kernel
def _neigh_of(x: np.uint64) -> np.uint64:
    e = (x << np.uint64(1)) & _NOT_A
    w = (x >> np.uint64(1)) & _NOT_H
    row = x | e | w
    return row | (row << np.uint64(8)) | (row >> np.uint64(8))


@_typed(
    types.int64(
        types.uint64,
        types.uint64,
        types.int64,
        types.int64,
        types.int64,
        types.uint64[:, ::1],
        types.int8[:, ::1],
        types.int64[::1],
        types.int64[:, :, ::1],
        types.uint64[:, ::1],
        types.uint8[::1],
    )
)
def _pvs(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    ply: int,
    keys: U64Array,
    vals: I8Array,
    stats: I64Array,
    mv: I64Array,
    fl: U64Array,
    table: npt.NDArray[np.uint8],
) -> int:
    """Exact score with more than SHALLOW_EMPTIES empties (any window; PVS, fail-soft)."""
    stats[_NODES] += 1
    if stats[_NODES] >= stats[_LIMIT]:
        stats[_ABORT] = 1
        return 0
    occ = me | opp
    n_empty = 64 - popcnt(occ)
    # stability cut-off: the opponent's stable discs bound our score from above
    if alpha >= STABILITY_THRESHOLD[n_empty] and ply > 0:
        top = 64 - 2 * popcnt(stable_discs(opp, me, table))
        if top <= alpha:
            return top
        if top < beta:
            beta = top
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            return _final(me, opp)
        if ply == 0:
            stats[_BEST] = PASS_MOVE
        return -_pvs(opp, me, -beta, -alpha, ply + 1, keys, vals, stats, mv, fl, table)
    use_tt = n_empty >= TT_EMPTIES
    s = 0
    tt_move = -1
    if use_tt:
        s = _slot(me, opp, keys.shape[0])
        e = _find(me, opp, s, keys, vals)
        if e >= 0:
            tt_move = int(vals[e, 2])
            if ply > 0:
                lo = int(vals[e, 0])
                hi = int(vals[e, 1])
                if lo >= beta:
                    return lo
                if hi <= alpha:
                    return hi
                if lo == hi:
                    return lo
                if lo > alpha:
                    alpha = lo
                if hi < beta:
                    beta = hi
    alpha0 = alpha
    beta0 = beta
    # the move list
    odd = _odd_mask(~occ)
    n = 0
    sort_depth = -1
    if n_empty >= SORT_SEARCH_EMPTIES:
        sort_depth = (n_empty - 15) // 3
    while moves:
        sq = lsb_index(moves)
        bit = ONE << np.uint64(sq)
        moves ^= bit
        f = flip(me, opp, sq)
        mv[ply, 0, n] = sq
        fl[ply, n] = f
        if sq == tt_move:
            mv[ply, 1, n] = 1 << 40
        else:
            mv[ply, 1, n] = _order_score(me, opp, sq, f, odd, n_empty)
            if sort_depth >= 0:
                # the evaluation only breaks near-ties of fastest first: alone it orders worse
                ev = -_sort_search(opp ^ f, me | f | bit, sort_depth, -(1 << 30), 1 << 30)
                mv[ply, 1, n] += ev >> 4
        n += 1
    # enhanced transposition cut-off: a child whose table bound already refutes this node
    if n_empty >= ETC_EMPTIES and ply > 0:
        for i in range(n):
            f = fl[ply, i]
            c_me = opp ^ f
            c_opp = me | f | (ONE << np.uint64(mv[ply, 0, i]))
            cs = _slot(c_me, c_opp, keys.shape[0])
            ce = _find(c_me, c_opp, cs, keys, vals)
            if ce >= 0 and -int(vals[ce, 1]) >= beta:
                return -int(vals[ce, 1])
    best = _NONE
    best_move = -1
    for i in range(n):
        # selection sort step
        j_best = i
        for j in range(i + 1, n):
            if mv[ply, 1, j] > mv[ply, 1, j_best]:
                j_best = j
        if j_best != i:
            for r in range(2):
                t = mv[ply, r, i]
                mv[ply, r, i] = mv[ply, r, j_best]
                mv[ply, r, j_best] = t
            tf = fl[ply, i]
            fl[ply, i] = fl[ply, j_best]
            fl[ply, j_best] = tf
        sq = mv[ply, 0, i]
        f = fl[ply, i]
        c_me = opp ^ f
        c_opp = me | f | (ONE << np.uint64(sq))
        if n_empty - 1 <= SHALLOW_EMPTIES:
            v = -_below(c_me, c_opp, -beta, -alpha, stats, table)
        elif i == 0:
            v = -_pvs(c_me, c_opp, -beta, -alpha, ply + 1, keys, vals, stats, mv, fl, table)
        else:
            v = -_pvs(c_me, c_opp, -alpha - 1, -alpha, ply + 1, keys, vals, stats, mv, fl, table)
            if v > alpha and v < beta and stats[_ABORT] == 0:
                if ply == 0:
                    stats[_ROOT_MOVE] = sq  # proven better than every root move before it
                v = -_pvs(c_me, c_opp, -beta, -v, ply + 1, keys, vals, stats, mv, fl, table)
        if stats[_ABORT]:
            return 0
        if ply == 0 and (i == 0 or v > alpha):
            stats[_ROOT_MOVE] = sq
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    if use_tt:
        _store(me, opp, s, n_empty, alpha0, beta0, best, best_move, keys, vals)
    if ply == 0:
        stats[_BEST] = best_move
    return best


@kernel
def _aspiration(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    keys: U64Array,
    vals: I8Array,
    stats: I64Array,
    mv: I64Array,
    fl: U64Array,
    table: npt.NDArray[np.uint8],
) -> int:
    """`_pvs` at the root for a wide window, as a series of narrow ones.

    Null-window searches prove much less than a wide one (the FFO #40-#44 trees are a third
    smaller with the exact score's window (s - 1, s + 1) than with (-64, 64)), so the score is
    narrowed down by windows (g - 1, g + 1): first g = 0 (win, draw or loss), then
    `ASPIRATION_STEP` past the fail-soft bound while only one side is known, then halfway
    between the bounds, until they meet or leave (alpha, beta). Scores are even, so each
    window tells "above g", "below g" or "exactly g".

    The proven bounds and the best move are kept in the root's table entry, so a search the
    node limit interrupted (and the driver calls again) resumes from them.
    """
    lo = -64
    hi = 64
    best_move = -1
    s = _slot(me, opp, keys.shape[0])
    e = _find(me, opp, s, keys, vals)
    if e >= 0:
        lo = int(vals[e, 0])
        hi = int(vals[e, 1])
        best_move = int(vals[e, 2])
    while True:
        if lo >= beta or lo == hi:
            stats[_BEST] = best_move
            return lo
        if hi <= alpha:
            return hi
        # the next window from the bounds alone (a resumed search takes the same steps)
        if lo == -64 and hi == 64:
            g = 0
        elif hi == 64:
            g = lo + ASPIRATION_STEP
        elif lo == -64:
            g = hi - ASPIRATION_STEP
        else:
            g = lo + 2 * ((hi - lo) // 4)
        # inside the known bounds (progress) and the caller's window
        g = min(max(g, lo, alpha + 1), hi, beta - 1)
        a = max(g - 1, alpha)
        b = min(g + 1, beta)
        v = _pvs(me, opp, a, b, 0, keys, vals, stats, mv, fl, table)
        if stats[_ABORT]:
            return 0
        if v >= b:
            lo = v
            best_move = int(stats[_BEST])
        elif v <= a:
            hi = v
        else:
            lo = v
            hi = v
            best_move = int(stats[_BEST])


@kernel
def solve_root(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    keys: U64Array,
    vals: I8Array,
    stats: I64Array,
    mv: I64Array,
    fl: U64Array,
    table: npt.NDArray[np.uint8],
) -> int:
    """Exact score of the position for `me` within (alpha, beta) (fail-soft); the best move
    goes to stats[_BEST] (PASS_MOVE for a pass, -1 when the game is over)."""
    n_empty = 64 - popcnt(me | opp)
    stats[_BEST] = -1
    if n_empty > SHALLOW_EMPTIES:
        if beta - alpha <= 2 or legal_mask(me, opp) == ZERO:
            return _pvs(me, opp, alpha, beta, 0, keys, vals, stats, mv, fl, table)
        return _aspiration(me, opp, alpha, beta, keys, vals, stats, mv, fl, table)
    # small positions: try each root move with the small solvers
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            stats[_NODES] += 1
            return _final(me, opp)
        stats[_BEST] = PASS_MOVE
        if n_empty == 0:
            return _final(me, opp)
        return -_below(opp, me, -beta, -alpha, stats, table)
    best = _NONE
    stats[_NODES] += 1
    while moves:
        sq = lsb_index(moves)
        bit = ONE << np.uint64(sq)
        moves ^= bit
        f = flip(me, opp, sq)
        c_me = opp ^ f
        c_opp = me | f | bit
        v = (
            -_final(c_me, c_opp)
            if n_empty == 1
            else -_below(c_me, c_opp, -beta, -alpha, stats, table)
        )
        if v > best:
            best = v
            stats[_BEST] = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    return best


@kernel
def hint_move(me: np.uint64, opp: np.uint64, move: int, keys: U64Array, vals: I8Array) -> None:
    """Make `move` the first one searched at this position (unless the table has a move)."""
    s = _slot(me, opp, keys.shape[0])
    e = _find(me, opp, s, keys, vals)
    if e >= 0:
        if vals[e, 2] < 0:
            vals[e, 2] = move
        return
    # a new entry with no bounds (-64, 64): only the move
    _store(me, opp, s, 64 - popcnt(me | opp), 64, -64, 0, move, keys, vals)
