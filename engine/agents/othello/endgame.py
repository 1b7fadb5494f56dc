"""Exact Othello endgame solver (numba): the final disc difference with perfect play on both sides.

Negamax alpha-beta (principal variation search, fail-soft) in layers by the number of empty
squares, each with the speed-ups that pay at its size (details: docs/agents.md):

* 1-4 empties (`_solve1` .. `_solve4`, in `endlast.py` with their tables and the stable
  discs): no move generation; the empty squares are tried directly, odd quadrants
  first (parity), and the last move only counts its flips.
* 5..`SHALLOW_EMPTIES`: plain alpha-beta, moves in odd quadrants first, stability cut-off.
* above: a transposition table (lower and upper bounds), fastest-first ordering (fewest
  opponent replies, corners counted twice, few discs next to empty squares, odd quadrants),
  stability cut-offs and, from `ETC_EMPTIES`, enhanced transposition cut-offs; from
  `SORT_SEARCH_EMPTIES` a shallow search with the static evaluation adds to that order.

Moves and flips are the game's own kernels (`engine/games/othkernels.py`). The root is
`solve_root`: (score, best move in stats[_BEST]) for a window; a wide window is
solved as a series of narrow ones (`_aspiration`). Node counting and the
node limit (stats[_LIMIT], stats[_ABORT]) work as in `search.py`'s kernels, so the same chunked,
deadline-checked driver runs both.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from numba import types
from numba.np.numpy_support import from_dtype

from engine.agents.othello.endlast import (
    _NODES,
    _NONE,
    _NOT_A,
    _NOT_H,
    CORNERS,
    SQUARE_VALUE,
    STABILITY_THRESHOLD,
    _final,
    _next,
    _odd_mask,
    _solve1,
    _solve2,
    _solve3,
    _solve4_entry,
    stable_discs,
)
from engine.agents.othello.evals import evaluate
from engine.games.bits import ONE, ZERO, kernel, lsb_index, msb_index, popcnt, search_kernel
from engine.games.bits import typed_kernel as _typed
from engine.games.othkernels import flips, legal_mask

U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]

# stats slots, shared with search.py (which also uses 4); the node count's is endlast.py's
_LIMIT, _ABORT, _BEST = 1, 2, 3
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


TT_ENTRY = np.dtype(
    [("me", np.uint64), ("opp", np.uint64), ("lower", np.int8), ("upper", np.int8),
     ("move", np.int8), ("empties", np.int8)],  # empties -1: a free entry
    align=True,
)  # fmt: skip
"""An entry of the transposition table: the position, the bounds of its score, its best move
(24 bytes, in one piece: a probe reads one or two cache lines, not one in each of two arrays)."""
TTArray = npt.NDArray[np.void]


def new_table(bits: int) -> TTArray:
    """An empty transposition table of 2**bits entries."""
    tt = np.zeros(1 << bits, dtype=TT_ENTRY)
    tt["empties"] = -1
    return tt


class Tables(NamedTuple):
    """What the solver reads and writes besides its counters."""

    tt: TTArray  # the transposition table, below
    mv: I64Array  # per ply: the moves and their order scores
    fl: U64Array  # per ply: each move's flips
    edge: npt.NDArray[np.uint8]  # the stable discs of an edge (`endlast.edge_table`)


_TABLES = types.NamedTuple(
    (
        types.Array(from_dtype(TT_ENTRY), 1, "C"),
        types.int64[:, :, ::1],
        types.uint64[:, ::1],
        types.uint8[::1],
    ),
    Tables,
)  # type: ignore[no-untyped-call]

# -- the table --------------------------------------------------------------------------------


@kernel
def _slot(me: np.uint64, opp: np.uint64, size: int) -> int:
    h = me * np.uint64(0x9E3779B97F4A7C15) + opp * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(size - 2))  # type: ignore[return-value]


@search_kernel
def _find(me: np.uint64, opp: np.uint64, s: int, tt: TTArray) -> int:
    if tt[s]["empties"] >= 0 and tt[s]["me"] == me and tt[s]["opp"] == opp:
        return s
    if tt[s + 1]["empties"] >= 0 and tt[s + 1]["me"] == me and tt[s + 1]["opp"] == opp:
        return s + 1
    return -1


@search_kernel
def _store(
    me: np.uint64,
    opp: np.uint64,
    s: int,
    empties: int,
    alpha: int,
    beta: int,
    best: int,
    move: int,
    tt: TTArray,
) -> None:
    """Record what a search with window (alpha, beta) found: an exact score or a bound."""
    e = _find(me, opp, s, tt)
    if e < 0:
        # slot s keeps the deeper entry, s + 1 takes the rest
        if tt[s]["empties"] <= empties:
            if tt[s]["empties"] >= 0:
                tt[s + 1] = tt[s]
            e = s
        else:
            e = s + 1
        tt[e]["me"] = me
        tt[e]["opp"] = opp
        tt[e]["lower"] = -64
        tt[e]["upper"] = 64
        tt[e]["move"] = -1
        tt[e]["empties"] = empties
    if best < beta and best < tt[e]["upper"]:
        tt[e]["upper"] = best
    if best > alpha and best > tt[e]["lower"]:
        tt[e]["lower"] = best
    if move >= 0 and (best > alpha or tt[e]["move"] < 0):
        tt[e]["move"] = move


# -- the shallow layer ------------------------------------------------------------------------


@_typed(
    types.int64(
        types.uint64, types.uint64, types.int64, types.int64, types.int64[::1], types.uint8[::1]
    ),
    refcounts=False,
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
            f = flips(me, opp, sq)
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


@search_kernel
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
        f = flips(me, opp, sq)
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
        _TABLES,
        types.int64[::1],
    ),
    refcounts=False,
)
def _pvs(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    ply: int,
    tables: Tables,
    stats: I64Array,
) -> int:
    """Exact score with more than SHALLOW_EMPTIES empties (any window; PVS, fail-soft)."""
    stats[_NODES] += 1
    if stats[_NODES] >= stats[_LIMIT]:
        stats[_ABORT] = 1
        return 0
    # The tables are read through `tables.` at each use, not bound to names: a name that lives
    # across branches costs numba a reference count update per node.
    occ = me | opp
    n_empty = 64 - popcnt(occ)
    # stability cut-off: the opponent's stable discs bound our score from above
    if alpha >= STABILITY_THRESHOLD[n_empty] and ply > 0:
        top = 64 - 2 * popcnt(stable_discs(opp, me, tables.edge))
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
        return -_pvs(opp, me, -beta, -alpha, ply + 1, tables, stats)
    use_tt = n_empty >= TT_EMPTIES
    s = 0
    tt_move = -1
    if use_tt:
        s = _slot(me, opp, tables.tt.shape[0])
        e = _find(me, opp, s, tables.tt)
        if e >= 0:
            tt_move = int(tables.tt[e]["move"])
            if ply > 0:
                lo = int(tables.tt[e]["lower"])
                hi = int(tables.tt[e]["upper"])
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
        f = flips(me, opp, sq)
        tables.mv[ply, 0, n] = sq
        tables.fl[ply, n] = f
        if sq == tt_move:
            tables.mv[ply, 1, n] = 1 << 40
        else:
            tables.mv[ply, 1, n] = _order_score(me, opp, sq, f, odd, n_empty)
            if sort_depth >= 0:
                # the evaluation only breaks near-ties of fastest first: alone it orders worse
                ev = -_sort_search(opp ^ f, me | f | bit, sort_depth, -(1 << 30), 1 << 30)
                tables.mv[ply, 1, n] += ev >> 4
        n += 1
    # enhanced transposition cut-off: a child whose table bound already refutes this node
    if n_empty >= ETC_EMPTIES and ply > 0:
        for i in range(n):
            f = tables.fl[ply, i]
            c_me = opp ^ f
            c_opp = me | f | (ONE << np.uint64(tables.mv[ply, 0, i]))
            cs = _slot(c_me, c_opp, tables.tt.shape[0])
            ce = _find(c_me, c_opp, cs, tables.tt)
            if ce >= 0 and -int(tables.tt[ce]["upper"]) >= beta:
                return -int(tables.tt[ce]["upper"])
    best = _NONE
    best_move = -1
    for i in range(n):
        # selection sort step
        j_best = i
        for j in range(i + 1, n):
            if tables.mv[ply, 1, j] > tables.mv[ply, 1, j_best]:
                j_best = j
        if j_best != i:
            for r in range(2):
                t = tables.mv[ply, r, i]
                tables.mv[ply, r, i] = tables.mv[ply, r, j_best]
                tables.mv[ply, r, j_best] = t
            tf = tables.fl[ply, i]
            tables.fl[ply, i] = tables.fl[ply, j_best]
            tables.fl[ply, j_best] = tf
        sq = tables.mv[ply, 0, i]
        f = tables.fl[ply, i]
        c_me = opp ^ f
        c_opp = me | f | (ONE << np.uint64(sq))
        if n_empty - 1 <= SHALLOW_EMPTIES:
            v = -_below(c_me, c_opp, -beta, -alpha, stats, tables.edge)
        elif i == 0:
            v = -_pvs(c_me, c_opp, -beta, -alpha, ply + 1, tables, stats)
        else:
            v = -_pvs(c_me, c_opp, -alpha - 1, -alpha, ply + 1, tables, stats)
            if v > alpha and v < beta and stats[_ABORT] == 0:
                if ply == 0:
                    stats[_ROOT_MOVE] = sq  # proven better than every root move before it
                v = -_pvs(c_me, c_opp, -beta, -v, ply + 1, tables, stats)
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
        _store(me, opp, s, n_empty, alpha0, beta0, best, best_move, tables.tt)
    if ply == 0:
        stats[_BEST] = best_move
    return best


@search_kernel
def _aspiration(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    tables: Tables,
    stats: I64Array,
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
    tt = tables.tt
    s = _slot(me, opp, tt.shape[0])
    e = _find(me, opp, s, tt)
    if e >= 0:
        lo = int(tt[e]["lower"])
        hi = int(tt[e]["upper"])
        best_move = int(tt[e]["move"])
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
        v = _pvs(me, opp, a, b, 0, tables, stats)
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


@search_kernel
def solve_root(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    tables: Tables,
    stats: I64Array,
) -> int:
    """Exact score of the position for `me` within (alpha, beta) (fail-soft); the best move
    goes to stats[_BEST] (PASS_MOVE for a pass, -1 when the game is over)."""
    n_empty = 64 - popcnt(me | opp)
    stats[_BEST] = -1
    if n_empty > SHALLOW_EMPTIES:
        if beta - alpha <= 2 or legal_mask(me, opp) == ZERO:
            return _pvs(me, opp, alpha, beta, 0, tables, stats)
        return _aspiration(me, opp, alpha, beta, tables, stats)
    # small positions: try each root move with the small solvers
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            stats[_NODES] += 1
            return _final(me, opp)
        stats[_BEST] = PASS_MOVE
        if n_empty == 0:
            return _final(me, opp)
        return -_below(opp, me, -beta, -alpha, stats, tables.edge)
    best = _NONE
    stats[_NODES] += 1
    while moves:
        sq = lsb_index(moves)
        bit = ONE << np.uint64(sq)
        moves ^= bit
        f = flips(me, opp, sq)
        c_me = opp ^ f
        c_opp = me | f | bit
        v = (
            -_final(c_me, c_opp)
            if n_empty == 1
            else -_below(c_me, c_opp, -beta, -alpha, stats, tables.edge)
        )
        if v > best:
            best = v
            stats[_BEST] = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    return best


@search_kernel
def hint_move(me: np.uint64, opp: np.uint64, move: int, tt: TTArray) -> None:
    """Make `move` the first one searched at this position (unless the table has a move)."""
    s = _slot(me, opp, tt.shape[0])
    e = _find(me, opp, s, tt)
    if e >= 0:
        if tt[e]["move"] < 0:
            tt[e]["move"] = move
        return
    # a new entry with no bounds (-64, 64): only the move (the numbers typed int64, as in
    # `_pvs`'s call: literal ones would compile `_store` a second time)
    alpha, beta, best = np.int64(64), np.int64(-64), np.int64(0)
    _store(me, opp, s, 64 - popcnt(me | opp), alpha, beta, best, move, tt)  # type: ignore[arg-type]
