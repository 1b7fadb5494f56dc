"""The Connect Four search behind minimax and expectiminimax: numba negamax with alpha-beta and a
transposition table, the root of each iteration and the chance layers of expectiminimax. The
agents and the chunked, deadline-checked driver: `minimax.py`. How the search works:
docs/agents.md.
"""

from __future__ import annotations

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

# A numba call's node limit is sized to about this much work at the measured speed.


_I64 = nb.types.int64[::1]
_U64 = nb.types.uint64[::1]
# The recursive kernels get explicit signatures (see `engine.games.bits.typed_kernel`).
_SEARCH_ARGS = (
    nb.types.uint64,  # cur
    nb.types.uint64,  # mask
    nb.types.int64,  # depth
)
_TAIL_ARGS = (
    _I64,  # g
    _U64,  # gb
    _U64,  # tt: (key, packed value and info) pairs
    _I64,  # killers
    _I64,  # history
    _I64,  # stats
    _I64,  # order
    _I64,  # buf
    _U64,  # wmask
    _U64,  # wbelow
    _I64,  # wdir
)
_NEGAMAX_SIG = nb.types.int64(
    *_SEARCH_ARGS, nb.types.int64, nb.types.int64, nb.types.int64, *_TAIL_ARGS
)
_CHANCE_SIG = nb.types.float64(*_SEARCH_ARGS, nb.types.int64, nb.types.int64, *_TAIL_ARGS)


@typed_kernel(_NEGAMAX_SIG)
def _negamax(
    cur: np.uint64,
    mask: np.uint64,
    depth: int,
    alpha: int,
    beta: int,
    ply: int,
    g: npt.NDArray[np.int64],
    gb: npt.NDArray[np.uint64],
    tt: npt.NDArray[np.uint64],
    killers: npt.NDArray[np.int64],
    history: npt.NDArray[np.int64],
    stats: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    buf: npt.NDArray[np.int64],
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
) -> int:
    """Negamax value for the side to move (g = rows, cols, k, eval id, tt shift; gb = bottom,
    board; stats = nodes, node limit, stopped flag). Returns 0 at once once stopped."""
    stats[0] += 1
    if stats[0] >= stats[1]:
        stats[2] = 1
        return 0
    rows = g[0]
    cols = g[1]
    k = g[2]
    bottom = gb[0]
    board = gb[1]
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
        return evals.evaluate(g[3], cur, mask, board, k, ply, wmask, wbelow, wdir)

    key = cur + mask
    idx = 2 * ((key * _HASH_MUL) >> np.uint64(g[4]))
    tt_move = -1
    if tt[idx] == key:
        data = tt[idx + 1]
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
    k1 = killers[2 * ply]
    k2 = killers[2 * ply + 1]
    for t in range(cols):
        c = order[t]
        if moves & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h)):
            if c == tt_move:
                score = 1 << 50
            elif c == k1:
                score = 1 << 49
            elif c == k2:
                score = 1 << 48
            else:
                score = history[c]
            j = n
            while j > 0 and buf[base + cols + j - 1] < score:
                buf[base + j] = buf[base + j - 1]
                buf[base + cols + j] = buf[base + cols + j - 1]
                j -= 1
            buf[base + j] = c
            buf[base + cols + j] = score
            n += 1

    alpha0 = alpha
    best = -INF
    best_col = -1
    for i in range(n):
        c = buf[base + i]
        mv = moves & (((ONE << np.uint64(rows)) - ONE) << np.uint64(c * h))
        v = -_negamax(
            opp,
            mask | mv,
            depth - 1,
            -beta,
            -alpha,
            ply + 1,
            g,
            gb,
            tt,
            killers,
            history,
            stats,
            order,
            buf,
            wmask,
            wbelow,
            wdir,
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
                killers[2 * ply + 1] = k1
                killers[2 * ply] = c
            history[c] += depth * depth
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
    tt[idx] = key
    info = min(depth, 255) | (flag << 8) | ((best_col + 1) << 10)
    tt[idx + 1] = (np.uint64(stored + _VALUE_BIAS) << _S32) | np.uint64(info)
    return best


@kernel
def root(
    cur: np.uint64,
    mask: np.uint64,
    depth: int,
    first: int,
    g: npt.NDArray[np.int64],
    gb: npt.NDArray[np.uint64],
    tt: npt.NDArray[np.uint64],
    killers: npt.NDArray[np.int64],
    history: npt.NDArray[np.int64],
    stats: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    buf: npt.NDArray[np.int64],
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
    root_vals: npt.NDArray[np.int64],
) -> tuple[int, int]:
    """One alpha-beta iteration at the root: (best column, its value); `first` is tried first.

    Moves that lose at once (under an opponent's winning cell) are searched only when nothing
    else is legal. `root_vals[c]` gets each searched column's value (a bound for non-best ones).
    """
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
                g,
                gb,
                tt,
                killers,
                history,
                stats,
                order,
                buf,
                wmask,
                wbelow,
                wdir,
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
    g: npt.NDArray[np.int64],
    gb: npt.NDArray[np.uint64],
    tt: npt.NDArray[np.uint64],
    killers: npt.NDArray[np.int64],
    history: npt.NDArray[np.int64],
    stats: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    buf: npt.NDArray[np.int64],
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
) -> float:
    """Value for the side to move when it plays uniformly at random (a chance layer)."""
    stats[0] += 1
    rows = g[0]
    cols = g[1]
    k = g[2]
    h = rows + 1
    board = gb[1]
    legal = (mask + gb[0]) & board
    if legal == ZERO:
        return 0.0
    if depth <= 0:
        return float(evals.evaluate(g[3], cur, mask, board, k, ply, wmask, wbelow, wdir))
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
                g,
                gb,
                tt,
                killers,
                history,
                stats,
                order,
                buf,
                wmask,
                wbelow,
                wdir,
            )
        else:
            total -= _negamax(
                opp,
                mask | mv,
                depth - 1,
                -INF,
                INF,
                ply + 1,
                g,
                gb,
                tt,
                killers,
                history,
                stats,
                order,
                buf,
                wmask,
                wbelow,
                wdir,
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
    g: npt.NDArray[np.int64],
    gb: npt.NDArray[np.uint64],
    tt: npt.NDArray[np.uint64],
    killers: npt.NDArray[np.int64],
    history: npt.NDArray[np.int64],
    stats: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    buf: npt.NDArray[np.int64],
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
) -> tuple[int, float]:
    """The root max node over chance layers: (best column, expected value), centre-first ties."""
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
                g,
                gb,
                tt,
                killers,
                history,
                stats,
                order,
                buf,
                wmask,
                wbelow,
                wdir,
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
                    g,
                    gb,
                    tt,
                    killers,
                    history,
                    stats,
                    order,
                    buf,
                    wmask,
                    wbelow,
                    wdir,
                )
            )
        if stats[2]:
            return best_col, best
        if v > best:
            best = v
            best_col = c
    return best_col, best
