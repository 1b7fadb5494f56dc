"""The Connect Four search behind minimax and expectiminimax: numba negamax with alpha-beta and a
transposition table, the root of each iteration and the chance layers of expectiminimax. The
agents and the chunked, deadline-checked driver: `minimax.py`. How the search works:
docs/agents.md.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np
import numpy.typing as npt

from engine.agents.connect4 import evals
from engine.agents.connect4.lines import win_cells
from engine.games import c4kernels as kern
from engine.games.bits import ONE, ZERO, kernel, typed_kernel

WIN = 1_000_000_000
MATE_BOUND = WIN - 10_000  # scores beyond this are proven wins / losses
INF = WIN + 1
TT_BITS = 20

EXACT, LOWER, UPPER = 0, 1, 2
_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)
_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_VALUE_BIAS = 1 << 31  # TT values are stored biased, as unsigned 32-bit numbers

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]


class Variant(NamedTuple):
    """What the search reads of a variant, built once per move."""

    g: I64  # rows, cols, k, evaluation id, transposition table shift
    gb: U64  # bottom cells, board cells
    order: I64  # the columns, centre first
    wmask: U64  # the evaluation's windows (`evals.tables`)
    wbelow: U64
    wdir: I64


class Work(NamedTuple):
    """What the search writes and keeps from one call to the next within a move."""

    tt: U64  # (key, packed value and info) pairs
    killers: I64  # two per ply
    history: I64  # per column
    buf: I64  # per ply: the ordered columns, then their scores


_I64 = nb.types.int64[::1]
_U64 = nb.types.uint64[::1]
_VARIANT = nb.types.NamedTuple((_I64, _U64, _I64, _U64, _U64, _I64), Variant)  # type: ignore[no-untyped-call]
_WORK = nb.types.NamedTuple((_U64, _I64, _I64, _I64), Work)  # type: ignore[no-untyped-call]
# The recursive kernels get explicit signatures (see `engine.games.bits.typed_kernel`):
# (cur, mask, depth, ...), then the tables and the counters (nodes, node limit, stopped flag).
_POSITION = (nb.types.uint64, nb.types.uint64, nb.types.int64)
_TABLES = (_VARIANT, _WORK, _I64)
_NEGAMAX_SIG = nb.types.int64(*_POSITION, nb.types.int64, nb.types.int64, nb.types.int64, *_TABLES)
_CHANCE_SIG = nb.types.float64(*_POSITION, nb.types.int64, nb.types.int64, *_TABLES)


@typed_kernel(_NEGAMAX_SIG)
def _negamax(
    cur: np.uint64,
    mask: np.uint64,
    depth: int,
    alpha: int,
    beta: int,
    ply: int,
    variant: Variant,
    work: Work,
    stats: I64,
) -> int:
    """Negamax value for the side to move (stats = nodes, node limit, stopped flag). Returns 0
    at once once stopped."""
    stats[0] += 1
    if stats[0] >= stats[1]:
        stats[2] = 1
        return 0
    # The tables are read through `variant.` and `work.` at each use, not bound to names: a
    # name that lives across branches costs numba a reference count update per node.
    rows = variant.g[0]
    cols = variant.g[1]
    k = variant.g[2]
    bottom = variant.gb[0]
    board = variant.gb[1]
    legal = (mask + bottom) & board
    if legal == ZERO:
        return 0
    opp = cur ^ mask
    if win_cells(cur, mask, board, rows, k) & legal:
        return WIN - ply - 1
    oppwin = win_cells(opp, mask, board, rows, k)
    moves = legal & oppwin
    if moves:
        if moves & (moves - ONE):
            return -(WIN - ply - 2)
    else:
        moves = legal
    moves &= ~(oppwin >> ONE)
    if moves == ZERO:
        return -(WIN - ply - 2)
    if depth <= 0:
        return evals.evaluate(
            variant.g[3], cur, mask, board, k, ply, variant.wmask, variant.wbelow, variant.wdir
        )

    key = cur + mask
    idx = 2 * ((key * _HASH_MUL) >> np.uint64(variant.g[4]))
    tt_move = -1
    if work.tt[idx] == key:
        data = work.tt[idx + 1]
        info = int(data & _LOW32)
        tt_move = (info >> 10) - 1
        if (info & 0xFF) >= depth:
            v = int(data >> _S32) - _VALUE_BIAS
            if v > MATE_BOUND:
                v -= ply
            elif v < -MATE_BOUND:
                v += ply
            flag = (info >> 8) & 3
            if flag == EXACT:
                return v
            if flag == LOWER:
                alpha = max(alpha, v)
            else:
                beta = min(beta, v)
            if alpha >= beta:
                return v

    # Order the moves: TT move, killers, history; ties keep the centre-first order.
    base = ply * 2 * cols
    n = 0
    h = rows + 1
    k1 = work.killers[2 * ply]
    k2 = work.killers[2 * ply + 1]
    for t in range(cols):
        c = variant.order[t]
        if moves & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h)):
            if c == tt_move:
                score = 1 << 50
            elif c == k1:
                score = 1 << 49
            elif c == k2:
                score = 1 << 48
            else:
                score = work.history[c]
            j = n
            while j > 0 and work.buf[base + cols + j - 1] < score:
                work.buf[base + j] = work.buf[base + j - 1]
                work.buf[base + cols + j] = work.buf[base + cols + j - 1]
                j -= 1
            work.buf[base + j] = c
            work.buf[base + cols + j] = score
            n += 1

    alpha0 = alpha
    best = -INF
    best_col = -1
    for i in range(n):
        c = work.buf[base + i]
        mv = moves & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h))
        v = -_negamax(
            opp,
            mask | mv,
            depth - 1,
            -beta,
            -alpha,
            ply + 1,
            variant,
            work,
            stats,
        )
        if stats[2]:
            return 0
        if v > best:
            best = v
            best_col = c
        if v > alpha:
            alpha = v
        if alpha >= beta:
            if c != tt_move and c != k1:
                work.killers[2 * ply + 1] = k1
                work.killers[2 * ply] = c
            work.history[c] += depth * depth
            break

    flag = EXACT
    if best <= alpha0:
        flag = UPPER
    elif best >= beta:
        flag = LOWER
    stored = best
    if stored > MATE_BOUND:
        stored += ply
    elif stored < -MATE_BOUND:
        stored -= ply
    work.tt[idx] = key
    info = min(depth, 255) | (flag << 8) | ((best_col + 1) << 10)
    work.tt[idx + 1] = (np.uint64(stored + _VALUE_BIAS) << _S32) | np.uint64(info)
    return best


@kernel
def root(
    cur: np.uint64,
    mask: np.uint64,
    depth: int,
    first: int,
    variant: Variant,
    work: Work,
    stats: I64,
    root_vals: npt.NDArray[np.int64],
) -> tuple[int, int]:
    """One alpha-beta iteration at the root: (best column, its value); `first` is tried first.

    Moves that lose at once (under an opponent's winning cell) are searched only when nothing
    else is legal. `root_vals[c]` gets each searched column's value (a bound for non-best ones).
    """
    g = variant.g
    gb = variant.gb
    order = variant.order
    rows = g[0]
    cols = g[1]
    k = g[2]
    h = rows + 1
    board = gb[1]
    legal = (mask + gb[0]) & board
    opp = cur ^ mask
    oppwin = win_cells(opp, mask, board, rows, k)
    moves = legal & ~(oppwin >> ONE)
    if moves == ZERO:
        moves = legal
    alpha = -INF
    best_col = -1
    for t in range(cols + 1):
        c = first if t == 0 else order[t - 1]
        if c < 0 or (t > 0 and c == first):
            continue
        mv = moves & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h))
        if mv == ZERO:
            continue
        if kern.is_win(cur | mv, rows, k):
            v = WIN - 1
        else:
            v = -_negamax(
                opp,
                mask | mv,
                depth - 1,
                -INF,
                -alpha,
                1,
                variant,
                work,
                stats,
            )
        if stats[2]:
            return best_col, alpha
        root_vals[c] = v
        if v > alpha:
            alpha = v
            best_col = c
    return best_col, alpha


@typed_kernel(_CHANCE_SIG)
def _chance(
    cur: np.uint64,
    mask: np.uint64,
    depth: int,
    chance_left: int,
    ply: int,
    variant: Variant,
    work: Work,
    stats: I64,
) -> float:
    """Value for the side to move when it plays uniformly at random (a chance layer)."""
    stats[0] += 1
    g = variant.g
    gb = variant.gb
    rows = g[0]
    cols = g[1]
    k = g[2]
    h = rows + 1
    board = gb[1]
    legal = (mask + gb[0]) & board
    if legal == ZERO:
        return 0.0
    if depth <= 0:
        return float(
            evals.evaluate(
                g[3], cur, mask, board, k, ply, variant.wmask, variant.wbelow, variant.wdir
            )
        )
    opp = cur ^ mask
    total = 0.0
    n = 0
    for c in range(cols):
        mv = legal & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h))
        if mv == ZERO:
            continue
        n += 1
        if kern.is_win(cur | mv, rows, k):
            total += WIN - ply - 1
        elif (mask | mv) == board:
            total += 0.0
        elif chance_left > 1:
            total -= _chance(
                opp,
                mask | mv,
                depth - 1,
                chance_left - 1,
                ply + 1,
                variant,
                work,
                stats,
            )
        else:
            total -= _negamax(
                opp,
                mask | mv,
                depth - 1,
                -INF,
                INF,
                ply + 1,
                variant,
                work,
                stats,
            )
        if stats[2]:
            return 0.0
    return total / n


@kernel
def chance_root(
    cur: np.uint64,
    mask: np.uint64,
    depth: int,
    chance_plies: int,
    variant: Variant,
    work: Work,
    stats: I64,
) -> tuple[int, float]:
    """The root max node over chance layers: (best column, expected value), centre-first ties."""
    g = variant.g
    gb = variant.gb
    order = variant.order
    rows = g[0]
    cols = g[1]
    k = g[2]
    h = rows + 1
    board = gb[1]
    legal = (mask + gb[0]) & board
    opp = cur ^ mask
    best = -2.0 * INF
    best_col = -1
    for t in range(cols):
        c = order[t]
        mv = legal & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h))
        if mv == ZERO:
            continue
        if kern.is_win(cur | mv, rows, k):
            v = float(WIN - 1)
        elif (mask | mv) == board:
            v = 0.0
        elif chance_plies > 0:
            v = -_chance(
                opp,
                mask | mv,
                depth - 1,
                chance_plies,
                1,
                variant,
                work,
                stats,
            )
        else:
            v = -float(
                _negamax(
                    opp,
                    mask | mv,
                    depth - 1,
                    -INF,
                    INF,
                    1,
                    variant,
                    work,
                    stats,
                )
            )
        if stats[2]:
            return best_col, best
        if v > best:
            best = v
            best_col = c
    return best_col, best
