"""The Othello search behind minimax and expectiminimax: numba negamax with alpha-beta
(principal variation search), a transposition table and move ordering, and `OthelloSearch`,
which calls it and the exact endgame solver from Python in node-limited chunks so a time
budget holds. The agents and iterative deepening: `minimax.py`. Details: docs/agents.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.core import cgutils, config
from numba.extending import intrinsic

from engine.agents.othello import endgame as eg
from engine.agents.othello import patterns
from engine.agents.othello.endlast import edge_table
from engine.agents.othello.evals import WIN, evaluate, terminal_score
from engine.agents.othello.patterns import (
    ROW,
    indexed_value,
    pass_indices,
    play_indices,
    set_indices,
)
from engine.games.base import Move
from engine.games.bits import ONE, ZERO, inline_kernel, popcnt, search_kernel
from engine.games.othello import PASS
from engine.games.othkernels import bit_index, flips, inline_flips, inline_legal_mask, legal_mask

_JIT_OFF = bool(getattr(config, "DISABLE_JIT", False))
INF = 1_000_000
MAX_PLY = 160
MAX_MOVES = 40
CHUNK_SECONDS = 0.02
_EXACT, _LOWER, _UPPER = 0, 1, 2
# stats slots shared between the driver and the kernels
_NODES, _LIMIT, _ABORT, _BEST, LEAVES = 0, 1, 2, 3, 4


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


U64Array = npt.NDArray[np.uint64]
I8Array = npt.NDArray[np.int8]
#: The weights the search kernels are handed when the standard evaluation is used (one row).
STANDARD = patterns.SearchWeights(np.zeros((1, 1), np.int16), np.zeros((1, 3), np.float64))
# Read-only like the pattern weights (`patterns.search_weights`): numba types read-only arrays
# apart, so both evaluations share one compiled search instead of compiling it twice.
STANDARD.tables.setflags(write=False)
STANDARD.terms.setflags(write=False)
I64Array = npt.NDArray[np.int64]


TT_ENTRY = np.dtype(
    [
        ("me", np.uint64),
        ("opp", np.uint64),
        ("value", np.int32),
        ("depth", np.int8),  # -1: a free entry
        ("flag", np.int8),  # _EXACT, _LOWER or _UPPER
        ("move", np.int8),
    ],
    align=True,
)
"""An entry of the transposition table, in one piece (24 bytes: a probe reads one or two
cache lines, not one in each of two arrays)."""
TTArray = npt.NDArray[np.void]


class Tables(NamedTuple):
    """What the midgame search reads and writes besides its counters."""

    tt: TTArray  # the transposition table (`TT_ENTRY`)
    hist: I64Array  # history scores per square
    mv: I64Array  # per ply: the moves and their order scores
    fl: U64Array  # per ply: each move's flips
    pw: npt.NDArray[np.int16]  # the pattern evaluation's tables (`patterns.SearchWeights`)
    pterms: npt.NDArray[np.float64]  # and its other terms; STANDARD's for the standard one
    pidx: patterns.Indices  # per ply: the position's pattern indices (`patterns.play_indices`)
    pwords: patterns.Words  # the same rows of `pidx` read four indices a word


# -- kernels ----------------------------------------------------------------------------------


def _prefetch_impl(typingctx: Any, tt: Any, index: Any) -> Any:
    """LLVM's prefetch of the cache line that holds tt[index] (a hint: it never faults)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        item = (context, builder, signature.args[0], ary, [args[1]])
        ptr = cgutils.get_item_pointer(*item)  # type: ignore[no-untyped-call]
        byte_ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        kind = ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
            builder.module, kind, "llvm.prefetch.p0"
        )
        # a read, kept in every level of the cache, of data
        builder.call(fn, [byte_ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(tt, index), codegen


_prefetch: Any = intrinsic(_prefetch_impl)
if _JIT_OFF:  # a hint only: nothing to do in plain Python

    def _prefetch(tt: Any, index: Any) -> None:
        return None


@inline_kernel
def _slot(me: np.uint64, opp: np.uint64, size: int) -> int:
    """The first entry of the position's bucket of two in a table of `size` entries: a
    multiply-xor hash of the two boards (a few cycles, no table of keys to read). A product's
    low bits depend only on its factors' low bits: the shift folds the high ones down before
    the second product, so every square counts in the bucket."""
    h = me * np.uint64(0x9E3779B97F4A7C15) + opp * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(29)
    return int(np.int64(h & np.uint64(size - 2)))


@search_kernel
def _tt_find(me: np.uint64, opp: np.uint64, slot: int, tt: TTArray) -> int:
    """Index of the entry for (me, opp) in the bucket at `slot`, or -1."""
    for s in range(slot, slot + 2):
        if tt[s]["depth"] >= 0 and tt[s]["me"] == me and tt[s]["opp"] == opp:
            return s
    return -1


@search_kernel
def _tt_store(
    me: np.uint64,
    opp: np.uint64,
    slot: int,
    depth: int,
    value: int,
    flag: int,
    move: int,
    tt: TTArray,
) -> None:
    s = _tt_find(me, opp, slot, tt)
    if s < 0:
        s = slot if tt[slot]["depth"] <= tt[slot + 1]["depth"] else slot + 1
    tt[s]["me"] = me
    tt[s]["opp"] = opp
    tt[s]["value"] = value
    tt[s]["depth"] = depth
    tt[s]["flag"] = flag
    tt[s]["move"] = move


@inline_kernel
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
    tt: TTArray,
    deep: bool,
) -> int:
    """Fill mv[ply] (squares, order scores); return the move count. `deep` (the children are
    not leaves): also fill fl[ply] (each move's flips) and start loading each child's bucket
    of `tt`, which the child probes first (the table is far larger than the caches). Leaf
    children are ordered without their flips, which are found only for the moves searched
    (a cutoff often comes at the first)."""
    n = 0
    f = ZERO
    while moves:
        bit = moves & (~moves + ONE)
        sq = bit_index(bit)
        if deep:
            f = inline_flips(me, opp, sq)
            fl[ply, n] = f
            child = _slot(opp ^ f, me | f | bit, tt.shape[0])
            _prefetch(tt, child)
            _prefetch(tt, child + 1)
        if sq == tt_move:
            sc = 1 << 40
        else:
            sc = _SQUARE_ORDER[sq] * 16 + hist[sq]
            if fastest_first:
                sc -= 1024 * popcnt(inline_legal_mask(opp ^ f, me | f | bit))
        mv[ply, 0, n] = sq
        mv[ply, 1, n] = sc
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


@inline_kernel
def _leaf(me: np.uint64, opp: np.uint64, ply: int, tables: Tables, stats: I64Array) -> int:
    """The evaluation of a horizon leaf (counted in stats[LEAVES] unless the game is over)."""
    if tables.pw.shape[0] == 1:
        v = evaluate(me, opp)
    else:
        v = indexed_value(me, opp, tables.pidx, ply, tables.pw, tables.pterms)
    if v > -WIN and v < WIN:
        stats[LEAVES] += 1
    return v


@search_kernel
def _horizon(me: np.uint64, opp: np.uint64, ply: int, tables: Tables, stats: I64Array) -> int:
    """`_leaf` out of line, for the rare horizon reached by a call (after a pass, or a search of
    depth 0): a node scores its leaf children in its own loop; a second inlined copy of the
    evaluation in `_negamax` would only lengthen its compile."""
    return _leaf(me, opp, ply, tables, stats)


@search_kernel
def _negamax(
    me: np.uint64,
    opp: np.uint64,
    depth: int,
    alpha: int,
    beta: int,
    ply: int,
    tables: Tables,
    stats: I64Array,
) -> int:
    """Depth-limited negamax PVS with evaluation at the horizon (fail-soft)."""
    stats[_NODES] += 1
    if stats[_NODES] >= stats[_LIMIT]:
        stats[_ABORT] = 1
        return 0
    # The tables are read through `tables.` at each use, not bound to names: a name that lives
    # across branches costs numba a reference count update per node.
    if depth <= 0:
        return _horizon(me, opp, ply, tables, stats)
    moves = inline_legal_mask(me, opp)
    if moves == ZERO:
        if inline_legal_mask(opp, me) == ZERO:
            return terminal_score(me, opp)
        if ply == 0:
            stats[_BEST] = 64
        if tables.pw.shape[0] > 1:
            pass_indices(tables.pwords, ply)
        return -_negamax(opp, me, depth - 1, -beta, -alpha, ply + 1, tables, stats)
    slot = _slot(me, opp, tables.tt.shape[0])
    tt_move = -1
    s = _tt_find(me, opp, slot, tables.tt)
    if s >= 0:
        tt_move = int(tables.tt[s]["move"])
        if ply > 0 and tables.tt[s]["depth"] >= depth:
            val = int(tables.tt[s]["value"])
            flag = int(tables.tt[s]["flag"])
            if (
                flag == _EXACT
                or (flag == _LOWER and val >= beta)
                or (flag == _UPPER and val <= alpha)
            ):
                return val
    alpha0 = alpha
    n = _gen_moves(
        me,
        opp,
        moves,
        ply,
        tt_move,
        depth >= 3,
        tables.hist,
        tables.mv,
        tables.fl,
        tables.tt,
        depth >= 2,
    )
    best = -INF
    best_move = -1
    for i in range(n):
        _pick(ply, i, n, tables.mv, tables.fl)
        sq = tables.mv[ply, 0, i]
        f = tables.fl[ply, i] if depth > 1 else inline_flips(me, opp, sq)
        bit = ONE << np.uint64(sq)
        c_me = opp ^ f
        c_opp = me | f | bit
        if tables.pw.shape[0] > 1:
            play_indices(tables.pwords, ply, sq, f)
        if depth == 1:
            # A leaf child is scored here, without a call: its value does not depend on the
            # window, so the principal variation search never searches it twice.
            stats[_NODES] += 1
            if stats[_NODES] >= stats[_LIMIT]:
                stats[_ABORT] = 1
                return 0
            v = -_leaf(c_me, c_opp, ply + 1, tables, stats)
        elif i == 0:
            v = -_negamax(c_me, c_opp, depth - 1, -beta, -alpha, ply + 1, tables, stats)
        else:
            v = -_negamax(c_me, c_opp, depth - 1, -alpha - 1, -alpha, ply + 1, tables, stats)
            if v > alpha and v < beta and stats[_ABORT] == 0:
                v = -_negamax(c_me, c_opp, depth - 1, -beta, -alpha, ply + 1, tables, stats)
        if stats[_ABORT]:
            return 0
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    tables.hist[sq] += depth * depth
                    break
    flag = _UPPER if best <= alpha0 else (_LOWER if best >= beta else _EXACT)
    _tt_store(me, opp, slot, depth, best, flag, best_move, tables.tt)
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


class OutOfBudget(Exception):
    """The budget ran out inside a chunked kernel call."""


class OthelloSearch:
    """Search tables plus the chunked, deadline-checked calls into the kernels.

    Tables are allocated on first use and dropped when pickled, so an agent crosses into a
    worker process as a handful of plain settings.
    """

    def __init__(
        self, tt_bits: int = 19, eg_bits: int | None = None, eval: str = "standard"
    ) -> None:
        if not 10 <= tt_bits <= 26:
            raise ValueError(f"tt_bits must be in 10..26, got {tt_bits}")
        eg_bits = tt_bits + 1 if eg_bits is None else eg_bits
        if not 10 <= eg_bits <= 26:
            raise ValueError(f"eg_bits must be in 10..26, got {eg_bits}")
        self.tt_bits = tt_bits
        self.eg_bits = eg_bits
        self.eval = eval
        self.weights = patterns.load_search() if eval == "patterns" else STANDARD
        self._tables: Tables | None = None
        self._eg_tables: eg.Tables | None = None
        self._eg_dirty = False
        self.stats: I64Array = np.zeros(8, dtype=np.int64)
        self.deadline: float | None = None
        self.node_cap: int | None = None
        self.speed = 200_000.0  # midgame nodes/s, refined from every chunk
        self.eg_speed = 1_000_000.0  # the same for the endgame solver (cheaper nodes)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "tt_bits": self.tt_bits,
            "eg_bits": self.eg_bits,
            "speed": self.speed,
            "eg_speed": self.eg_speed,
            "eval": self.eval,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["tt_bits"], state.get("eg_bits"), state.get("eval", "standard")
        )
        self.speed = state["speed"]
        self.eg_speed = state.get("eg_speed", self.eg_speed)

    def reset(self, deadline: float | None, node_cap: int | None) -> None:
        """Start a new move: clear the tables, set the limits."""
        if self._tables is None:
            indices = np.zeros((MAX_PLY + 1, ROW), dtype=np.uint16)
            self._tables = Tables(
                np.zeros(1 << self.tt_bits, dtype=TT_ENTRY),
                np.zeros(64, dtype=np.int64),
                np.zeros((MAX_PLY, 2, MAX_MOVES), dtype=np.int64),
                np.zeros((MAX_PLY, MAX_MOVES), dtype=np.uint64),
                self.weights.tables,
                self.weights.terms,
                indices,
                indices.view(np.uint64),
            )
        self.clear_tt()
        self._tables.hist[:] = 0
        if self._eg_dirty:
            self.clear_endgame_tt()
        self.stats[:] = 0
        self.deadline = deadline
        self.node_cap = node_cap

    def clear_tt(self) -> None:
        assert self._tables is not None
        self._tables.tt["depth"] = -1

    def clear_endgame_tt(self) -> None:
        if self._eg_tables is not None:
            self._eg_tables.tt["empties"] = -1
        self._eg_dirty = False

    def _endgame_tables(self) -> eg.Tables:
        if self._eg_tables is None:
            self._eg_tables = eg.Tables(
                eg.new_table(self.eg_bits),
                np.zeros((eg.MAX_PLY, 2, eg.MAX_MOVES), dtype=np.int64),
                np.zeros((eg.MAX_PLY, eg.MAX_MOVES), dtype=np.uint64),
                edge_table(),
            )
        return self._eg_tables

    @property
    def nodes(self) -> int:
        return int(self.stats[_NODES])

    def out_of_budget(self) -> bool:
        if self.node_cap is not None and self.nodes >= self.node_cap:
            return True
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def _chunked(self, call: Callable[[], float], endgame: bool = False) -> float:
        """Run `call` (a kernel over self.stats) to completion in node-bounded chunks."""
        stats = self.stats
        while True:
            if self.out_of_budget():
                raise OutOfBudget
            limit = 1 << 62
            speed = self.eg_speed if endgame else self.speed
            if self.deadline is not None:
                remaining = self.deadline - time.perf_counter()
                limit = max(500, int(speed * min(CHUNK_SECONDS, remaining)))
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
                if endgame:
                    self.eg_speed = 0.5 * self.eg_speed + 0.5 * done / dt
                else:
                    self.speed = 0.5 * self.speed + 0.5 * done / dt
            if not stats[_ABORT]:
                return value

    def negamax(
        self, me: int, opp: int, depth: int, root: bool = True, alpha: int = -INF, beta: int = INF
    ) -> tuple[int, int]:
        """(score, best move) of a depth-limited search; raises OutOfBudget when the budget ends.

        `root=False` searches the position as an inner node (transposition cutoffs allowed).
        With a window (alpha, beta) the score is fail-soft: <= alpha or >= beta only bounds it.
        """
        assert self._tables is not None
        tables = self._tables
        m, o = np.uint64(me), np.uint64(opp)
        stats = self.stats
        ply = 0 if root else 1
        if self.weights.tables.shape[0] > 1:
            set_indices(m, o, ply, tables.pidx)
        score = self._chunked(lambda: _negamax(m, o, depth, alpha, beta, ply, tables, stats))
        return int(score), int(stats[_BEST])

    def solve(
        self, me: int, opp: int, alpha: int = -64, beta: int = 64, hint: int = -1
    ) -> tuple[int, int]:
        """(exact disc difference, best move) by the endgame solver (`endgame.py`); raises
        OutOfBudget when the budget ends. The move is PASS for a forced pass, -1 for a finished
        game.

        With a window (alpha, beta) narrower than (-64, 64) the score is fail-soft: a score
        <= alpha or >= beta only bounds the true one (a win/draw/loss search is (-1, 1)).
        `hint`, a square, is searched first at the root (the midgame search's best move).
        After OutOfBudget, `partial_move()` is the best root move the unfinished solve proved.
        """
        tables = self._endgame_tables()
        m, o = np.uint64(me), np.uint64(opp)
        stats = self.stats
        self._eg_dirty = True
        if 0 <= hint < 64:
            eg.hint_move(m, o, hint, tables.tt)
        stats[eg._ROOT_MOVE] = -1
        score = self._chunked(
            lambda: eg.solve_root(m, o, alpha, beta, tables, stats),
            endgame=True,
        )
        move = int(stats[_BEST])
        return int(score), PASS if move == eg.PASS_MOVE else move

    def partial_move(self) -> int:
        """After an interrupted `solve`: the root move that was searched completely first, or
        one proven better than every move searched before it (-1 if there is none yet)."""
        return int(self.stats[eg._ROOT_MOVE])

    def chance_value(self, me: int, opp: int, chance: int, depth: int) -> float:
        """Value for the side to move when its next `chance` plies are uniformly random (every
        legal move weighted equally), negamax to the remaining depth below; raises OutOfBudget when
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
