"""Connect Four minimax and expectiminimax: numba negamax with alpha-beta, iterative deepening and
a transposition table, driven from Python in node-limited chunks so a time budget holds.

How the search works, and how the registry's `minimax` entry shares its name with Othello's:
docs/agents.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, cast

import numba as nb
import numpy as np
import numpy.typing as npt

from engine.agents.base import (
    Agent,
    Budget,
    Decision,
    check_params,
    require_moves,
)
from engine.agents.connect4 import evals
from engine.agents.connect4.lines import centre_order, win_cells
from engine.agents.searchparams import CHANCE, DEFAULT_DEPTH
from engine.games import c4kernels as kern
from engine.games.base import GameState
from engine.games.bits import ONE, ZERO, kernel, typed_kernel
from engine.games.connect4 import Connect4State

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
_CHUNK_SECONDS = 0.03
_INITIAL_RATE = 1_000_000.0  # nodes/s assumed before the first measurement
_MARGIN = 0.004  # seconds kept back for the Python side


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
def _root(
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
def _chance_root(
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


class _Search:
    """The per-move search state: board tables, transposition table, heuristics, counters."""

    def __init__(self, state: Connect4State, eval_name: str) -> None:
        rows, cols, k = state.rows, state.cols, state.k
        self.state = state
        self.g = np.array([rows, cols, k, evals.eval_id(eval_name), 64 - TT_BITS], np.int64)
        self.gb = np.array(
            [kern.bottom_mask(rows, cols), kern.board_mask(rows, cols)], dtype=np.uint64
        )
        self.tt = np.zeros(2 << TT_BITS, np.uint64)
        max_ply = rows * cols + 2
        self.killers = np.full(2 * max_ply, -1, np.int64)
        self.history = np.zeros(64, np.int64)
        self.order = np.array(centre_order(cols), np.int64)
        self.buf = np.zeros(max_ply * 2 * cols, np.int64)
        self.wmask, self.wbelow, self.wdir = evals.tables(rows, cols, k)
        self.cur = np.uint64(state.current)
        self.mask = np.uint64(state.mask)
        self.nodes = 0
        self.rate = _INITIAL_RATE

    def run(self, fn: Callable[[npt.NDArray[np.int64]], Any], limit: int) -> tuple[Any, bool]:
        """Call `fn(stats)` with a node limit; (result, completed)."""
        stats = np.array([0, max(limit, 1), 0], np.int64)
        t0 = time.perf_counter()
        out = fn(stats)
        dt = time.perf_counter() - t0
        self.nodes += int(stats[0])
        if dt > 0.002 and stats[0] > 1000:
            self.rate = stats[0] / dt
        return out, not stats[2]

    def chunked(
        self,
        fn: Callable[[npt.NDArray[np.int64]], Any],
        deadline: float | None,
        node_budget: int | None,
    ) -> tuple[Any, bool]:
        """Run `fn(stats)` to completion in node-limited chunks: (result, completed in time).

        Each chunk is sized to about `_CHUNK_SECONDS` at the measured speed; between chunks the
        deadline and node budget are checked. A stopped chunk is resumed by the next one: the
        transposition table keeps every subtree that was finished.
        """
        while True:
            limit = 1 << 62
            if node_budget is not None:
                limit = node_budget - self.nodes
                if limit <= 0:
                    return None, False
            if deadline is not None:
                left = deadline - time.perf_counter() - _MARGIN
                if left <= 0:
                    return None, False
                limit = min(limit, max(500, int(self.rate * min(_CHUNK_SECONDS, left))))
            out, completed = self.run(fn, limit)
            if completed:
                return out, True

    def iterate(
        self,
        fn: Callable[[int, npt.NDArray[np.int64]], Any],
        deadline: float | None,
        node_budget: int | None,
        max_depth: int,
        done: Callable[[Any], bool],
    ) -> tuple[Any, int]:
        """Iterative deepening of `fn(depth, stats)`: (last completed result, its depth).

        Depth 1 always completes (a handful of nodes), so there always is an explored move.
        """
        result, _ = self.run(lambda stats: fn(1, stats), 1 << 62)
        reached = 1
        for depth in range(2, max_depth + 1):
            if done(result):
                break

            def step(stats: npt.NDArray[np.int64], d: int = depth) -> Any:
                return fn(d, stats)

            out, completed = self.chunked(step, deadline, node_budget)
            if not completed:
                break
            result, reached = out, depth
        return result, reached

    def minimax(
        self, deadline: float | None, node_budget: int | None, max_depth: int
    ) -> tuple[int, int, int, dict[int, int]]:
        """(best column, value, depth reached, the best value of every completed depth)."""
        cols = int(self.g[1])
        values: dict[int, int] = {}
        best = [-1]

        def step(depth: int, stats: npt.NDArray[np.int64]) -> tuple[int, int]:
            vals = np.full(cols, -INF, np.int64)
            col, val = _root(
                self.cur,
                self.mask,
                depth,
                best[0],
                self.g,
                self.gb,
                self.tt,
                self.killers,
                self.history,
                stats,
                self.order,
                self.buf,
                self.wmask,
                self.wbelow,
                self.wdir,
                vals,
            )
            if not stats[2]:
                best[0] = int(col)
                values[depth] = int(val)
            return int(col), int(val)

        def done(result: tuple[int, int]) -> bool:
            return abs(result[1]) > MATE_BOUND

        (col, val), reached = self.iterate(step, deadline, node_budget, max_depth, done)
        return col, val, reached, values

    def expecti(
        self, depth: int, chance_plies: int, deadline: float | None, node_budget: int | None
    ) -> tuple[int, float] | None:
        """The chance-line search at exactly `depth` (None if it could not finish in time)."""

        def step(stats: npt.NDArray[np.int64]) -> tuple[int, float]:
            col, val = _chance_root(
                self.cur,
                self.mask,
                depth,
                chance_plies,
                self.g,
                self.gb,
                self.tt,
                self.killers,
                self.history,
                stats,
                self.order,
                self.buf,
                self.wmask,
                self.wbelow,
                self.wdir,
            )
            return int(col), float(val)

        result, completed = self.chunked(step, deadline, node_budget)
        return cast(tuple[int, float], result) if completed else None


def _empties(state: Connect4State) -> int:
    return state.rows * state.cols - state.ply


def forced_move(state: Connect4State) -> tuple[int, str] | None:
    """The forced cases at the root: (column, "win") or (column, "block"), else None.

    Among several winning or blocking columns the one nearest the centre is played.
    """
    order = centre_order(state.cols)
    wins = set(state.winning_moves())
    if wins:
        return next(c for c in order if c in wins), "win"
    board = kern.board_mask(state.rows, state.cols)
    threats = int(
        win_cells(np.uint64(state.opponent), np.uint64(state.mask), board, state.rows, state.k)
    )
    legal = int(kern.legal_mask(np.uint64(state.mask), state.rows, state.cols))
    blocks = threats & legal
    if blocks:
        h = state.rows + 1
        return next(c for c in order if (blocks >> (c * h)) & ((1 << h) - 1)), "block"
    return None


def _require_c4(state: GameState, who: str) -> Connect4State:
    if not isinstance(state, Connect4State):
        raise TypeError(f"{who} got a {state.game} state; it plays Connect Four here")
    require_moves(state)
    return state


def _max_depth(state: Connect4State, budget: Budget) -> int:
    if budget.depth is not None:
        return max(1, min(budget.depth, _empties(state)))
    if budget.time is None and budget.nodes is None:
        return min(DEFAULT_DEPTH, _empties(state))
    return _empties(state)


class C4Minimax(Agent):
    """Minimax: iterative-deepening alpha-beta negamax with a static evaluation."""

    def __init__(self, eval: str = "checkers") -> None:
        evals.eval_id(eval)
        self.eval = eval

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        start = time.perf_counter()
        c4 = _require_c4(state, "minimax")
        forced = forced_move(c4)
        if forced is not None:
            return Decision(forced[0], depth=0, info={"line": forced[1], "eval": self.eval})
        search = _Search(c4, self.eval)
        col, val, depth, _ = search.minimax(
            budget.deadline(start), budget.nodes, _max_depth(c4, budget)
        )
        return Decision(
            col,
            score=float(val),
            depth=depth,
            nodes=search.nodes,
            seconds=time.perf_counter() - start,
            info={"line": "minimax", "eval": self.eval},
        )


class C4Expectiminimax(Agent):
    """Expectiminimax: chance layers below the root, compared with plain minimax."""

    def __init__(self, eval: str = "checkers", chance_plies: int = 2) -> None:
        evals.eval_id(eval)
        check_params(CHANCE, "expectiminimax", chance_plies=chance_plies)
        self.eval = eval
        self.chance_plies = chance_plies

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        start = time.perf_counter()
        c4 = _require_c4(state, "expectiminimax")
        forced = forced_move(c4)
        info: dict[str, Any] = {"eval": self.eval, "chance_plies": self.chance_plies}
        if forced is not None:
            info["line"] = forced[1]
            return Decision(forced[0], depth=0, info=info)
        deadline = budget.deadline(start)
        # Half the time for minimax; then the chance line deepens (reusing the transposition
        # table) up to the depth minimax reached, and is compared with minimax at equal depth.
        mm_deadline = None if deadline is None else start + (deadline - start) / 2
        search = _Search(c4, self.eval)
        col, val, depth, values = search.minimax(mm_deadline, budget.nodes, _max_depth(c4, budget))
        chance: tuple[int, float] | None = None
        chance_depth = 0
        for d in range(min(depth, self.chance_plies + 1), depth + 1):
            result = search.expecti(d, self.chance_plies, deadline, budget.nodes)
            if result is None:
                break
            chance, chance_depth = result, d
        info.update(minimax_value=float(val), minimax_move=col)
        move, score, line = col, float(val), "minimax"
        if chance is not None:
            info.update(chance_value=chance[1], chance_move=chance[0], chance_depth=chance_depth)
            if chance[1] > values[chance_depth] + 1e-6:
                move, score, line = chance[0], chance[1], "chance"
                info["force_random_reply"] = True
        info["line"] = line
        return Decision(
            move,
            score=score,
            depth=depth,
            nodes=search.nodes,
            seconds=time.perf_counter() - start,
            info=info,
        )
