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
from engine.agents.othello import endgame as eg
from engine.agents.othello import patterns
from engine.agents.othello.evals import EVAL_BOUND, EVALS, WIN, evaluate, terminal_score
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
ENDGAME_EMPTIES = 14
"""Default for the agents: try the exact solve from this many empties when a time or node
budget bounds the move (the solve is abandoned, for the midgame move, if it cannot finish).
20 plays more endgames exactly but spends up to the whole second on moves of 15-20 empties,
which made the chaos run's restarts (one engine worker, many matches) converge late."""
UNBOUNDED_SOLVE_EMPTIES = 14
"""With no budget at all, the exact solve runs (unbounded) from this many empties at most."""
SAFETY_SECONDS = 0.025
"""With a time budget the search stops this much (at most a tenth of the budget) before its end:
the last chunk, the move's bookkeeping and the process's other threads fit in it."""
ASPIRATION = 120
"""Half-width of the midgame aspiration window around the last iteration's score (centidiscs)."""
NEXT_ITERATION = 0.4
"""With a time budget, no new midgame iteration starts after this share of it: the next one
would take several times longer and be thrown away unfinished."""

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
I8Array = npt.NDArray[np.int8]
I32Array = npt.NDArray[np.int32]
F32Array = npt.NDArray[np.float32]
#: The weights argument of the search kernels when the standard evaluation is used.
STANDARD = np.zeros((1, 1), dtype=np.float32)
# Read-only like the pattern weights (`patterns.load`): numba types read-only arrays apart, so
# both evaluations share one compiled search instead of compiling it twice.
STANDARD.setflags(write=False)
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
        self.weights: F32Array = patterns.load() if eval == "patterns" else STANDARD
        self._tables: tuple[U64Array, I32Array, I64Array, I64Array, U64Array] | None = None
        self._eg_tables: tuple[U64Array, I8Array, I64Array, U64Array] | None = None
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
        if self._eg_dirty:
            self.clear_endgame_tt()
        self.stats[:] = 0
        self.deadline = deadline
        self.node_cap = node_cap

    def clear_tt(self) -> None:
        assert self._tables is not None
        self._tables[1][:, 1] = -1

    def clear_endgame_tt(self) -> None:
        if self._eg_tables is not None:
            self._eg_tables[1][:, 3] = -1
        self._eg_dirty = False

    def _endgame_tables(self) -> tuple[U64Array, I8Array, I64Array, U64Array]:
        if self._eg_tables is None:
            size = 1 << self.eg_bits
            vals = np.zeros((size, 4), dtype=np.int8)
            vals[:, 3] = -1
            self._eg_tables = (
                np.zeros((size, 2), dtype=np.uint64),
                vals,
                np.zeros((eg.MAX_PLY, 2, eg.MAX_MOVES), dtype=np.int64),
                np.zeros((eg.MAX_PLY, eg.MAX_MOVES), dtype=np.uint64),
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
                raise _Out
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
        """(score, best move) of a depth-limited search; raises _Out when the budget ends.

        `root=False` searches the position as an inner node (transposition cutoffs allowed).
        With a window (alpha, beta) the score is fail-soft: <= alpha or >= beta only bounds it.
        """
        assert self._tables is not None
        tt_b, tt_v, hist, mv, fl = self._tables
        m, o = np.uint64(me), np.uint64(opp)
        stats = self.stats
        ply = 0 if root else 1
        score = self._chunked(
            lambda: _negamax(
                m,
                o,
                depth,
                alpha,
                beta,
                ply,
                tt_b,
                tt_v,
                ZOBRIST,
                stats,
                hist,
                mv,
                fl,
                self.weights,
            )
        )
        return int(score), int(stats[_BEST])

    def solve(
        self, me: int, opp: int, alpha: int = -64, beta: int = 64, hint: int = -1
    ) -> tuple[int, int]:
        """(exact disc difference, best move) by the endgame solver (`endgame.py`); raises _Out
        when the budget ends. The move is PASS for a forced pass, -1 for a finished game.

        With a window (alpha, beta) narrower than (-64, 64) the score is fail-soft: a score
        <= alpha or >= beta only bounds the true one (a win/draw/loss search is (-1, 1)).
        `hint`, a square, is searched first at the root (the midgame search's best move).
        After _Out, `partial_move()` is the best root move the unfinished solve proved.
        """
        keys, vals, mv, fl = self._endgame_tables()
        table = eg.edge_table()
        m, o = np.uint64(me), np.uint64(opp)
        stats = self.stats
        self._eg_dirty = True
        if 0 <= hint < 64:
            eg.hint_move(m, o, hint, keys, vals)
        stats[eg._ROOT_MOVE] = -1
        score = self._chunked(
            lambda: eg.solve_root(m, o, alpha, beta, keys, vals, stats, mv, fl, table),
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
    start = time.perf_counter()
    deadline = budget.deadline(start)
    if deadline is not None and budget.time is not None:
        deadline -= min(SAFETY_SECONDS, 0.1 * budget.time)
    search.reset(deadline, budget.nodes)
    me, opp = state.me, state.opp
    empties = 64 - (me | opp).bit_count()
    if moves == [PASS]:
        return SearchResult(PASS, 0.0, 0, 0, False, True)
    limited = budget.time is not None or budget.nodes is not None
    max_depth = budget.depth if budget.depth is not None else (60 if limited else DEFAULT_DEPTH)
    # The exact solve runs when something bounds it (a time or node budget: it is abandoned if
    # it cannot finish) or the depth cap reaches the end anyway; a bare depth cap (a weakened
    # level) keeps it off. With no budget at all it runs unbounded, to UNBOUNDED_SOLVE_EMPTIES.
    if limited:
        endgame = empties <= endgame_empties
    elif budget.depth is None:
        endgame = empties <= min(endgame_empties, UNBOUNDED_SOLVE_EMPTIES)
    else:
        endgame = empties <= endgame_empties and budget.depth >= empties
    # In the endgame keep the midgame pass short: the exact solve is what counts.
    if endgame:
        max_depth = min(max_depth, 4)
    budget_time = budget.time
    result = SearchResult(moves[0], 0.0, 0, 0, False, False)
    score = 0
    for depth in range(1, max_depth + 1):
        search.stats[_LEAVES] = 0
        try:
            score, move = _aspiration(search, me, opp, depth, score if depth > 2 else None)
        except _Out:
            break
        result = SearchResult(move, float(score), depth, search.nodes, False, True)
        if search.stats[_LEAVES] == 0:  # every leaf was a finished game: the score is exact
            result.exact = True
            result.score = float(_to_discs(score))
            return result
        if budget_time is not None:
            spent = time.perf_counter() - start
            if spent > (0.15 if endgame else NEXT_ITERATION) * budget_time:
                break
    if endgame:
        try:
            score, move = search.solve(me, opp, hint=result.move)
        except _Out:
            result.completed = False
            partial = search.partial_move()
            if partial >= 0 and partial != result.move:
                # proven better than the midgame move, which the solve searched first
                result.move = partial
        else:
            result = SearchResult(move, float(score), empties, search.nodes, True, True)
    result.nodes = search.nodes
    return result


def _aspiration(
    search: OthelloSearch, me: int, opp: int, depth: int, guess: int | None
) -> tuple[int, int]:
    """One midgame iteration: a window of +-ASPIRATION around `guess` (the last iteration's
    score), widened on the side that fails until the score falls inside."""
    if guess is None or abs(guess) >= EVAL_BOUND:
        return search.negamax(me, opp, depth)
    alpha, beta = guess - ASPIRATION, guess + ASPIRATION
    for _ in range(2):
        score, move = search.negamax(me, opp, depth, alpha=alpha, beta=beta)
        if alpha < score < beta:
            return score, move
        if score <= alpha:
            alpha = score - 4 * ASPIRATION
        else:
            beta = score + 4 * ASPIRATION
    return search.negamax(me, opp, depth)


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
        self, eval: str = "standard", endgame_empties: int = ENDGAME_EMPTIES, tt_bits: int = 19
    ) -> None:
        self.eval = _check_eval(eval)
        if not 0 <= endgame_empties <= 30:
            raise ValueError(f"endgame_empties must be in 0..30, got {endgame_empties}")
        self.endgame_empties = endgame_empties
        self.search = OthelloSearch(tt_bits, eval=self.eval)

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
        endgame_empties: int = ENDGAME_EMPTIES,
        tt_bits: int = 19,
    ) -> None:
        self.eval = _check_eval(eval)
        if not 0 <= chance_plies <= 4:
            raise ValueError(f"chance_plies must be in 0..4, got {chance_plies}")
        if not 0 <= endgame_empties <= 30:
            raise ValueError(f"endgame_empties must be in 0..30, got {endgame_empties}")
        self.chance_plies = chance_plies
        self.endgame_empties = endgame_empties
        self.search = OthelloSearch(tt_bits, eval=self.eval)

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
