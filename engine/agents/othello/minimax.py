"""Othello minimax and expectiminimax: numba negamax with alpha-beta (principal variation search),
iterative deepening, a transposition table, move ordering and an exact endgame solver, driven
from Python in node-limited chunks so a time budget holds. Details: docs/agents.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.agents.base import Agent, Budget, Decision, require_moves
from engine.agents.othello import patterns
from engine.agents.othello.evals import EVALS, WIN, evaluate, final_score, terminal_score
from engine.agents.othello.patterns import pattern_value
from engine.games.base import GameState, Move
from engine.games.bits import ONE, ZERO, inline_kernel, kernel, popcount
from engine.games.othello import PASS, OthelloState
from engine.games.othkernels import bit_index, flips, legal_mask

INF = 1_000_000
MAX_PLY = 160
MAX_MOVES = 40
CHUNK_SECONDS = 0.02
DEFAULT_DEPTH = 3
"""The depth searched when the budget sets no limit at all."""

_EXACT, _LOWER, _UPPER = 0, 1, 2
# stats slots shared between the driver and the kernels
_NODES, _LIMIT, _ABORT, _BEST, _LEAVES = 0, 1, 2, 3, 4

_BYTE = np.uint64(0xFF)
_CORNERS = np.uint64(0x8100000000000081)

# Static ordering table: corners first, X-squares last, C-squares low, edges and centre fair.
_SQUARE_ORDER = np.array(
    [
        [90, -10, 20, 15, 15, 20, -10, 90],
        [-10, -40, 1, 1, 1, 1, -40, -10],
        [20, 1, 5, 2, 2, 5, 1, 20],
        [15, 1, 2, 0, 0, 2, 1, 15],
        [15, 1, 2, 0, 0, 2, 1, 15],
        [20, 1, 5, 2, 2, 5, 1, 20],
        [-10, -40, 1, 1, 1, 1, -40, -10],
        [90, -10, 20, 15, 15, 20, -10, 90],
    ],
    dtype=np.int64,
).reshape(64)

ZOBRIST = np.random.default_rng(0x07E110).integers(
    0, np.iinfo(np.uint64).max, size=(16, 256), dtype=np.uint64, endpoint=True
)
"""Zobrist keys: one per (byte position of the me/opp bitboards, byte value)."""

U64Array = npt.NDArray[np.uint64]
I32Array = npt.NDArray[np.int32]
F32Array = npt.NDArray[np.float32]
#: The weights argument of the search kernels when the standard evaluation is used.
STANDARD = np.zeros((1, 1), dtype=np.float32)
I64Array = npt.NDArray[np.int64]


# -- kernels ----------------------------------------------------------------------------------


@kernel
def _hash(me: np.uint64, opp: np.uint64, zob: U64Array) -> np.uint64:
    h = ZERO
    for i in range(8):
        sh = np.uint64(8 * i)
        h ^= zob[i, int((me >> sh) & _BYTE)]
        h ^= zob[8 + i, int((opp >> sh) & _BYTE)]
    return h


@kernel
def _tt_find(me: np.uint64, opp: np.uint64, slot: int, tt_b: U64Array, tt_v: I32Array) -> int:
    """Index of the entry for (me, opp) in the bucket at `slot`, or -1."""
    for s in range(slot, slot + 2):
        if tt_v[s, 1] >= 0 and tt_b[s, 0] == me and tt_b[s, 1] == opp:
            return s
    return -1


@kernel
def _tt_store(
    me: np.uint64,
    opp: np.uint64,
    slot: int,
    depth: int,
    value: int,
    flag: int,
    move: int,
    tt_b: U64Array,
    tt_v: I32Array,
) -> None:
    s = _tt_find(me, opp, slot, tt_b, tt_v)
    if s < 0:
        s = slot if tt_v[slot, 1] <= tt_v[slot + 1, 1] else slot + 1
    tt_b[s, 0] = me
    tt_b[s, 1] = opp
    tt_v[s, 0] = value
    tt_v[s, 1] = depth
    tt_v[s, 2] = flag
    tt_v[s, 3] = move


@kernel
def _gen_moves(
    me: np.uint64,
    opp: np.uint64,
    moves: np.uint64,
    ply: int,
    tt_move: int,
    fastest_first: bool,
    hist: I64Array,
    mv: I64Array,
    fl: U64Array,
) -> int:
    """Fill mv[ply] (squares, order scores) and fl[ply] (flips); return the move count."""
    n = 0
    while moves:
        bit = moves & (~moves + ONE)
        sq = bit_index(bit)
        f = flips(me, opp, sq)
        if sq == tt_move:
            sc = 1 << 40
        else:
            sc = _SQUARE_ORDER[sq] * 16 + hist[sq]
            if fastest_first:
                sc -= 1024 * popcount(legal_mask(opp ^ f, me | f | bit))
        mv[ply, 0, n] = sq
        mv[ply, 1, n] = sc
        fl[ply, n] = f
        n += 1
        moves ^= bit
    return n


@inline_kernel
def _pick(ply: int, i: int, n: int, mv: I64Array, fl: U64Array) -> None:
    """Selection sort step: move the best-scored remaining move to position i."""
    best = i
    for j in range(i + 1, n):
        if mv[ply, 1, j] > mv[ply, 1, best]:
            best = j
    if best != i:
        for r in range(2):
            t = mv[ply, r, i]
            mv[ply, r, i] = mv[ply, r, best]
            mv[ply, r, best] = t
        tf = fl[ply, i]
        fl[ply, i] = fl[ply, best]
        fl[ply, best] = tf


@kernel
def _negamax(
    me: np.uint64,
    opp: np.uint64,
    depth: int,
    alpha: int,
    beta: int,
    ply: int,
    tt_b: U64Array,
    tt_v: I32Array,
    zob: U64Array,
    stats: I64Array,
    hist: I64Array,
    mv: I64Array,
    fl: U64Array,
    pw: F32Array,
) -> int:
    """Depth-limited negamax PVS with evaluation at the horizon (fail-soft); `pw` holds the
    pattern evaluation's weights, or one row for the standard evaluation."""
    stats[_NODES] += 1
    if stats[_NODES] >= stats[_LIMIT]:
        stats[_ABORT] = 1
        return 0
    if depth <= 0:
        v = evaluate(me, opp) if pw.shape[0] == 1 else pattern_value(me, opp, pw)
        if v > -WIN and v < WIN:
            stats[_LEAVES] += 1
        return v
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            return terminal_score(me, opp)
        if ply == 0:
            stats[_BEST] = 64
        return -_negamax(
            opp, me, depth - 1, -beta, -alpha, ply + 1, tt_b, tt_v, zob, stats, hist, mv, fl, pw
        )
    slot = int(np.int64(_hash(me, opp, zob) & np.uint64(tt_v.shape[0] - 2)))
    tt_move = -1
    s = _tt_find(me, opp, slot, tt_b, tt_v)
    if s >= 0:
        tt_move = tt_v[s, 3]
        if ply > 0 and tt_v[s, 1] >= depth:
            val = int(tt_v[s, 0])
            flag = tt_v[s, 2]
            if (
                flag == _EXACT
                or (flag == _LOWER and val >= beta)
                or (flag == _UPPER and val <= alpha)
            ):
                return val
    alpha0 = alpha
    n = _gen_moves(me, opp, moves, ply, tt_move, depth >= 3, hist, mv, fl)
    best = -INF
    best_move = -1
    for i in range(n):
        _pick(ply, i, n, mv, fl)
        sq = mv[ply, 0, i]
        f = fl[ply, i]
        bit = ONE << np.uint64(sq)
        c_me = opp ^ f
        c_opp = me | f | bit
        if i == 0:
            v = -_negamax(
                c_me,
                c_opp,
                depth - 1,
                -beta,
                -alpha,
                ply + 1,
                tt_b,
                tt_v,
                zob,
                stats,
                hist,
                mv,
                fl,
                pw,
            )
        else:
            v = -_negamax(
                c_me,
                c_opp,
                depth - 1,
                -alpha - 1,
                -alpha,
                ply + 1,
                tt_b,
                tt_v,
                zob,
                stats,
                hist,
                mv,
                fl,
                pw,
            )
            if v > alpha and v < beta and stats[_ABORT] == 0:
                v = -_negamax(
                    c_me,
                    c_opp,
                    depth - 1,
                    -beta,
                    -alpha,
                    ply + 1,
                    tt_b,
                    tt_v,
                    zob,
                    stats,
                    hist,
                    mv,
                    fl,
                    pw,
                )
        if stats[_ABORT]:
            return 0
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    hist[sq] += depth * depth
                    break
    flag = _UPPER if best <= alpha0 else (_LOWER if best >= beta else _EXACT)
    _tt_store(me, opp, slot, depth, best, flag, best_move, tt_b, tt_v)
    if ply == 0:
        stats[_BEST] = best_move
    return best


@kernel
def _last_move(me: np.uint64, opp: np.uint64) -> int:
    """Exact final score with one empty square left, side to move `me`."""
    empty = ~(me | opp)
    sq = bit_index(empty)
    a = popcount(me)
    b = popcount(opp)
    n = popcount(flips(me, opp, sq))
    if n > 0:
        return (a + 1 + n) - (b - n)
    n = popcount(flips(opp, me, sq))
    if n > 0:
        return (a - n) - (b + 1 + n)
    d = a - b
    return d + 1 if d > 0 else (d - 1 if d < 0 else 0)


@kernel
def _solve(
    me: np.uint64,
    opp: np.uint64,
    alpha: int,
    beta: int,
    ply: int,
    tt_b: U64Array,
    tt_v: I32Array,
    zob: U64Array,
    stats: I64Array,
    hist: I64Array,
    mv: I64Array,
    fl: U64Array,
) -> int:
    """Exact endgame negamax PVS: the final disc difference for `me` (empties to the winner)."""
    stats[_NODES] += 1
    if stats[_NODES] >= stats[_LIMIT]:
        stats[_ABORT] = 1
        return 0
    empties = 64 - popcount(me | opp)
    if empties == 1 and ply > 0:
        return _last_move(me, opp)
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if legal_mask(opp, me) == ZERO:
            return final_score(me, opp)
        if ply == 0:
            stats[_BEST] = 64
        return -_solve(opp, me, -beta, -alpha, ply + 1, tt_b, tt_v, zob, stats, hist, mv, fl)
    use_tt = empties >= 7
    slot = 0
    tt_move = -1
    if use_tt:
        slot = int(np.int64(_hash(me, opp, zob) & np.uint64(tt_v.shape[0] - 2)))
        s = _tt_find(me, opp, slot, tt_b, tt_v)
        if s >= 0:
            tt_move = tt_v[s, 3]
            if ply > 0:
                val = int(tt_v[s, 0])
                flag = tt_v[s, 2]
                if (
                    flag == _EXACT
                    or (flag == _LOWER and val >= beta)
                    or (flag == _UPPER and val <= alpha)
                ):
                    return val
    alpha0 = alpha
    n = _gen_moves(me, opp, moves, ply, tt_move, empties >= 7, hist, mv, fl)
    best = -INF
    best_move = -1
    for i in range(n):
        _pick(ply, i, n, mv, fl)
        sq = mv[ply, 0, i]
        f = fl[ply, i]
        bit = ONE << np.uint64(sq)
        c_me = opp ^ f
        c_opp = me | f | bit
        if i == 0:
            v = -_solve(c_me, c_opp, -beta, -alpha, ply + 1, tt_b, tt_v, zob, stats, hist, mv, fl)
        else:
            v = -_solve(
                c_me, c_opp, -alpha - 1, -alpha, ply + 1, tt_b, tt_v, zob, stats, hist, mv, fl
            )
            if v > alpha and v < beta and stats[_ABORT] == 0:
                v = -_solve(
                    c_me, c_opp, -beta, -alpha, ply + 1, tt_b, tt_v, zob, stats, hist, mv, fl
                )
        if stats[_ABORT]:
            return 0
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    if use_tt:
        flag = _UPPER if best <= alpha0 else (_LOWER if best >= beta else _EXACT)
        _tt_store(me, opp, slot, empties, best, flag, best_move, tt_b, tt_v)
    if ply == 0:
        stats[_BEST] = best_move
    return best


# -- the driver -------------------------------------------------------------------------------


@dataclass(slots=True)
class SearchResult:
    """What a (possibly interrupted) search established."""

    move: Move
    score: float
    depth: int
    nodes: int
    exact: bool
    completed: bool


class _Out(Exception):
    """The budget ran out inside a chunked kernel call."""


class OthelloSearch:
    """Search tables plus the chunked, deadline-checked calls into the kernels.

    Tables are allocated on first use and dropped when pickled, so an agent crosses into a
    worker process as a handful of plain settings.
    """

    def __init__(self, tt_bits: int = 19, eval: str = "standard") -> None:
        if not 10 <= tt_bits <= 26:
            raise ValueError(f"tt_bits must be in 10..26, got {tt_bits}")
        self.tt_bits = tt_bits
        self.eval = eval
        self.weights: F32Array = patterns.load() if eval == "patterns" else STANDARD
        self._tables: tuple[U64Array, I32Array, I64Array, I64Array, U64Array] | None = None
        self.stats: I64Array = np.zeros(8, dtype=np.int64)
        self.deadline: float | None = None
        self.node_cap: int | None = None
        self.speed = 200_000.0  # nodes/s, refined from every chunk

    def __getstate__(self) -> dict[str, Any]:
        return {"tt_bits": self.tt_bits, "speed": self.speed, "eval": self.eval}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["tt_bits"], state.get("eval", "standard"))  # type: ignore[misc]
        self.speed = state["speed"]

    def reset(self, deadline: float | None, node_cap: int | None) -> None:
        """Start a new move: clear the tables, set the limits."""
        if self._tables is None:
            size = 1 << self.tt_bits
            self._tables = (
                np.zeros((size, 2), dtype=np.uint64),
                np.zeros((size, 4), dtype=np.int32),
                np.zeros(64, dtype=np.int64),
                np.zeros((MAX_PLY, 2, MAX_MOVES), dtype=np.int64),
                np.zeros((MAX_PLY, MAX_MOVES), dtype=np.uint64),
            )
        self.clear_tt()
        self._tables[2][:] = 0
        self.stats[:] = 0
        self.deadline = deadline
        self.node_cap = node_cap

    def clear_tt(self) -> None:
        assert self._tables is not None
        self._tables[1][:, 1] = -1

    @property
    def nodes(self) -> int:
        return int(self.stats[_NODES])

    def out_of_budget(self) -> bool:
        if self.node_cap is not None and self.nodes >= self.node_cap:
            return True
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def _chunked(self, call: Callable[[], float]) -> float:
        """Run `call` (a kernel over self.stats) to completion in node-bounded chunks."""
        stats = self.stats
        while True:
            if self.out_of_budget():
                raise _Out
            limit = 1 << 62
            if self.deadline is not None:
                remaining = self.deadline - time.perf_counter()
                limit = max(500, int(self.speed * min(CHUNK_SECONDS, remaining)))
            if self.node_cap is not None:
                limit = min(limit, self.node_cap - self.nodes)
            start_nodes = self.nodes
            stats[_LIMIT] = start_nodes + limit
            stats[_ABORT] = 0
            t0 = time.perf_counter()
            value = call()
            dt = time.perf_counter() - t0
            done = self.nodes - start_nodes
            if dt > 1e-3 and done > 1000:
                self.speed = 0.5 * self.speed + 0.5 * done / dt
            if not stats[_ABORT]:
                return value

    def negamax(self, me: int, opp: int, depth: int, root: bool = True) -> tuple[int, int]:
        """(score, best move) of a depth-limited search; raises _Out when the budget ends.

        `root=False` searches the position as an inner node (transposition cutoffs allowed).
        """
        assert self._tables is not None
        tt_b, tt_v, hist, mv, fl = self._tables
        m, o = np.uint64(me), np.uint64(opp)
        stats = self.stats
        ply = 0 if root else 1
        score = self._chunked(
            lambda: _negamax(
                m, o, depth, -INF, INF, ply, tt_b, tt_v, ZOBRIST, stats, hist, mv, fl, self.weights
            )
        )
        return int(score), int(stats[_BEST])

    def solve(self, me: int, opp: int) -> tuple[int, int]:
        """(exact disc difference, best move); raises _Out when the budget ends."""
        assert self._tables is not None
        tt_b, tt_v, hist, mv, fl = self._tables
        m, o = np.uint64(me), np.uint64(opp)
        stats = self.stats
        score = self._chunked(
            lambda: _solve(m, o, -64, 64, 0, tt_b, tt_v, ZOBRIST, stats, hist, mv, fl)
        )
        return int(score), int(stats[_BEST])

    def chance_value(self, me: int, opp: int, chance: int, depth: int) -> float:
        """Value for the side to move when its next `chance` plies are uniformly random (every
        legal move weighted equally), negamax to the remaining depth below; raises _Out when
        the budget ends.

        The chance layers are walked in Python (a few thousand calls at most for the usual
        depths); a numba version that recursed into `_negamax` crashed when loaded from
        numba's cache.
        """
        if chance <= 0 or depth <= 0:
            score, _ = self.negamax(me, opp, max(depth, 0), root=False)
            return float(score)
        m, o = np.uint64(me), np.uint64(opp)
        moves = int(legal_mask(m, o))
        if not moves:
            if not legal_mask(o, m):
                return float(terminal_score(m, o))
            return -self.chance_value(opp, me, chance - 1, depth - 1)
        total = 0.0
        count = 0
        while moves:
            bit = moves & -moves
            f = int(flips(m, o, bit.bit_length() - 1))
            total -= self.chance_value(opp ^ f, me | f | bit, chance - 1, depth - 1)
            count += 1
            moves ^= bit
        return total / count

    def expectimax(self, me: int, opp: int, chance: int, depth: int) -> tuple[float, int]:
        """(value, move) of expectiminimax: a max root over our moves, then `chance`
        plies of averaged replies, then negamax; `depth` counts all plies from the root."""
        m, o = np.uint64(me), np.uint64(opp)
        moves = int(legal_mask(m, o))
        best, best_move = -float(INF), PASS
        while moves:
            bit = moves & -moves
            sq = bit.bit_length() - 1
            f = int(flips(m, o, sq))
            v = -self.chance_value(opp ^ f, me | f | bit, chance, depth - 1)
            if v > best:
                best, best_move = v, sq
            moves ^= bit
        return best, best_move


def _othello(state: GameState) -> OthelloState:
    if not isinstance(state, OthelloState):
        raise TypeError("this agent plays Othello only")
    return state


def _check_eval(name: str) -> str:
    if name not in EVALS:
        raise ValueError(f"unknown Othello eval {name!r}: choose one of {', '.join(EVALS)}")
    return name


def minimax_search(
    search: OthelloSearch, state: OthelloState, budget: Budget, endgame_empties: int
) -> SearchResult:
    """Iterative deepening (and an exact endgame solve when it fits) under `budget`."""
    moves = require_moves(state)
    search.reset(budget.deadline(), budget.nodes)
    me, opp = state.me, state.opp
    empties = 64 - (me | opp).bit_count()
    if moves == [PASS]:
        return SearchResult(PASS, 0.0, 0, 0, False, True)
    limited = budget.time is not None or budget.nodes is not None
    max_depth = budget.depth if budget.depth is not None else (60 if limited else DEFAULT_DEPTH)
    # The exact solve runs when something bounds it (a time or node budget) or the depth cap
    # reaches the end anyway; a bare depth cap (a weakened level) keeps it off. With no budget
    # at all it runs unbounded (endgame_empties 14 solves in well under a second).
    endgame = empties <= endgame_empties and (
        limited or budget.depth is None or budget.depth >= empties
    )
    # In the endgame keep the midgame pass short: the exact solve is what counts.
    if endgame:
        max_depth = min(max_depth, 4)
    budget_time = budget.time
    start = time.perf_counter()
    result = SearchResult(moves[0], 0.0, 0, 0, False, False)
    for depth in range(1, max_depth + 1):
        search.stats[_LEAVES] = 0
        try:
            score, move = search.negamax(me, opp, depth)
        except _Out:
            break
        result = SearchResult(move, float(score), depth, search.nodes, False, True)
        if search.stats[_LEAVES] == 0:  # every leaf was a finished game: the score is exact
            result.exact = True
            result.score = float(_to_discs(score))
            return result
        if endgame and budget_time is not None and time.perf_counter() - start > 0.15 * budget_time:
            break
    if endgame:
        search.clear_tt()
        try:
            score, move = search.solve(me, opp)
        except _Out:
            result.completed = False
        else:
            result = SearchResult(move, float(score), empties, search.nodes, True, True)
    result.nodes = search.nodes
    return result


def _to_discs(score: int) -> int:
    """Disc difference of a proven midgame-search score (+-(WIN + discs) or 0)."""
    if score > 0:
        return score - WIN
    if score < 0:
        return score + WIN
    return 0


class OthelloMinimax(Agent):
    """Negamax alpha-beta with iterative deepening, TT and an exact endgame.

    Decision.score is in evaluation units (centidiscs; +-(100000 + discs) for a proven result)
    unless info["exact"] is true, when it is the exact final disc difference.
    """

    def __init__(
        self, eval: str = "standard", endgame_empties: int = 14, tt_bits: int = 19
    ) -> None:
        self.eval = _check_eval(eval)
        if not 0 <= endgame_empties <= 30:
            raise ValueError(f"endgame_empties must be in 0..30, got {endgame_empties}")
        self.endgame_empties = endgame_empties
        self.search = OthelloSearch(tt_bits, self.eval)

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        t0 = time.perf_counter()
        res = minimax_search(self.search, _othello(state), budget, self.endgame_empties)
        return Decision(
            move=res.move,
            score=res.score,
            depth=res.depth,
            nodes=res.nodes,
            seconds=time.perf_counter() - t0,
            info={"exact": res.exact, "eval": self.eval},
        )


def decisive(state: OthelloState, minimax: SearchResult) -> str | None:
    """Why the expectiminimax agent must play deterministically here, or None.

    Minimax is played when 'the player or his opponent is winning in the next move'. The
    Othello analogues: the game's result is proven within the horizon (or the endgame is solved
    exactly); a corner is available to the side to move (the 'win at hand'); or the opponent
    could take a corner if it were on move now (the 'block at hand': a random move must not
    leave it there).
    """
    if minimax.exact:
        return "solved"
    if abs(minimax.score) >= WIN:
        return "proven"
    if state.legal_mask() & int(_CORNERS):
        return "corner"
    if int(legal_mask(np.uint64(state.opp), np.uint64(state.me))) & int(_CORNERS):
        return "corner threat"
    return None


class OthelloExpectiminimax(Agent):
    """Expectiminimax for Othello, compared with plain minimax on the same board.

    Same shape as the Connect Four agent (`connect4/minimax.py`): the root is a max node
    over our moves, the next `chance_plies` plies below it are chance layers (the mean over every
    legal move, equal weights), deeper plies are negamax; `depth` counts every ply. The chance
    line is taken only when its value is strictly better than plain minimax at the same depth
    and no decisive line is at hand (see `decisive`); then Decision.info["line"] = "chance" and
    info["force_random_reply"] = True (the opponent is to reply at random, the rule for
    bot-vs-bot matches). Otherwise info["line"] = "minimax". With a time budget, half goes to
    minimax (iterative deepening) and the expectation is searched to the depth minimax
    completed, within the rest; if it cannot finish, the minimax move is played.
    """

    def __init__(
        self,
        eval: str = "standard",
        chance_plies: int = 2,
        endgame_empties: int = 14,
        tt_bits: int = 19,
    ) -> None:
        self.eval = _check_eval(eval)
        if not 0 <= chance_plies <= 4:
            raise ValueError(f"chance_plies must be in 0..4, got {chance_plies}")
        if not 0 <= endgame_empties <= 30:
            raise ValueError(f"endgame_empties must be in 0..30, got {endgame_empties}")
        self.chance_plies = chance_plies
        self.endgame_empties = endgame_empties
        self.search = OthelloSearch(tt_bits, self.eval)

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        t0 = time.perf_counter()
        board = _othello(state)
        moves = require_moves(board)
        half = (
            budget if budget.time is None else Budget(budget.time / 2, budget.nodes, budget.depth)
        )
        mm = minimax_search(self.search, board, half, self.endgame_empties)
        nodes = mm.nodes
        info: dict[str, Any] = {
            "line": "minimax",
            "eval": self.eval,
            "chance_plies": self.chance_plies,
            "exact": mm.exact,
        }
        reason = decisive(board, mm) if len(moves) > 1 else "only move"
        move, score = mm.move, mm.score
        if reason is None and self.chance_plies > 0:
            depth = max(mm.depth, 1)
            deadline = None if budget.time is None else t0 + budget.time
            self.search.reset(deadline, budget.nodes)
            try:
                value, chance_move = self.search.expectimax(
                    board.me, board.opp, self.chance_plies, depth
                )
            except _Out:
                reason = "out of time"
            else:
                info["expectation"] = value
                if value > mm.score:
                    move, score = chance_move, value
                    info["line"] = "chance"
                    info["force_random_reply"] = True
            nodes += self.search.nodes
        info["decisive"] = reason
        info["minimax"] = mm.score
        return Decision(
            move=move,
            score=score,
            depth=mm.depth,
            nodes=nodes,
            seconds=time.perf_counter() - t0,
            info=info,
        )
