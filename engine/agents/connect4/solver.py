"""Pascal Pons' perfect Connect Four solver in numba, and the `solver` agent.

Negamax with alpha-beta, a null-window dichotomy on the score and a transposition table that
lives in the process (`reset` clears it); four in a row only (`UnsupportedVariant` otherwise).
A node limit and a clock deadline, checked every 1024 nodes, raise `BudgetExceeded`. Details:
docs/agents.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engine.agents.connect4 import book as opening
from engine.agents.connect4 import edge
from engine.agents.connect4.lines import centre_order
from engine.agents.connect4.solvertable import PRIME, allocate, prefetch, slot_of
from engine.agents.connect4.threats import can_win_next, non_losing, winning_cells
from engine.games.bits import ONE, ZERO, kernel, lsb_index, now, popcnt, search_kernel
from engine.games.connect4 import Connect4State

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: Transposition table slots (`solvertable`): 32 MB per process, allocated on the first solve.
TABLE_SIZE = PRIME

# stats array slots
_NODES, _LIMIT, _ABORTED, _NEXT_CHECK = 0, 1, 2, 3
_CHECK_EVERY = 1024
_NO_LIMIT = int(np.iinfo(np.int64).max)
_LOW56 = np.uint64((1 << 56) - 1)
_STACK = 20  # `Work.stack` per ply: alpha, beta, the child searched, the count, the moves


class UnsupportedVariant(ValueError):
    """The solver only handles k = 4 with cols >= 4 and (rows + 1) * cols <= 64."""


class BudgetExceeded(RuntimeError):
    """The node limit or the deadline ran out before the answer was known."""


class Variant(NamedTuple):
    """What the kernels read of a board size (the column masks centre first). Only what the
    search reads at every node: numba counts a reference to every array a kernel is handed."""

    h: int  # bits per column: rows + 1
    cells: int
    bottom: np.uint64
    board: np.uint64
    colmasks: U64
    book_ply: int  # the deepest ply `book` may hold (-1: no book)
    book: U64  # the opening book for 7x6: key << 8 | (score + 128), sorted
    edge_ply: int  # the discs of the positions in `edge` (-1: no such book)
    edge: U8  # `edge.data()` for 7x6, else empty


class Work(NamedTuple):
    """What the kernels write: the transposition table and the per-ply move buffers."""

    table: U64  # per slot: the key's low 56 bits << 8 | the value (0: an empty slot)
    movebuf: U64  # per ply, 16 each: moves and their scores (the expert's heuristic search)
    scorebuf: I64
    frames: U64  # per ply: the discs of the side to move, every disc, the table slot
    stack: I64  # per ply, `_STACK` each: alpha, beta, the child searched, the count, the moves


# --------------------------------------------------------------------------------------------
# numba kernels


@search_kernel
def _out_of_budget(stats: I64, deadline: float) -> bool:
    """Count a node; every 1024 nodes compare against the node limit and the clock."""
    stats[_NODES] += 1
    if stats[_NODES] >= stats[_NEXT_CHECK]:
        stats[_NEXT_CHECK] = stats[_NODES] + _CHECK_EVERY
        if stats[_NODES] >= stats[_LIMIT] or now() > deadline:
            stats[_ABORTED] = 1
    return bool(stats[_ABORTED] != 0)


@search_kernel
def _in_book(book: U64, key: np.uint64, h: int, cols: int) -> int:
    """The opening book's score of a position (`key` = cur + mask), or `edge.MISSING`."""
    column = (np.uint64(1) << np.uint64(h)) - np.uint64(1)
    mirrored = ZERO
    for c in range(cols):
        part = (key >> np.uint64(c * h)) & column
        mirrored |= part << np.uint64((cols - 1 - c) * h)
    key = min(key, mirrored)
    lo = 0
    hi = book.shape[0] - 1
    while lo <= hi:
        mid = (lo + hi) >> 1
        got = book[mid] >> np.uint64(8)
        if got == key:
            return int(book[mid] & np.uint64(255)) - 128
        if got < key:
            lo = mid + 1
        else:
            hi = mid - 1
    return edge.MISSING


@search_kernel
def _negamax(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    alpha: int,
    beta: int,
    variant: Variant,
    work: Work,
    stats: I64,
    deadline: float,
) -> int:
    """Pons' negamax: the exact score if in (alpha, beta), else a bound on the right side.

    Preconditions: alpha < beta and the side to move cannot win on the spot. On abort the value
    is meaningless (callers check ``stats[_ABORTED]``) and nothing more is written to the table.
    The recursion runs on explicit stacks (`Work.frames`, `Work.stack`): a call per node would
    hand every argument over again (seven words per array), and the constants stay in registers.
    """
    h, cells, bottom, board = variant.h, variant.cells, variant.bottom, variant.board
    colmasks, table, frames, stack = variant.colmasks, work.table, work.frames, work.stack
    size = np.uint64(table.shape[0])
    min_score = -(cells // 2) + 3
    max_score = (cells + 1) // 2 - 3
    nodes, check, root = stats[_NODES], stats[_NEXT_CHECK], ply
    while True:
        # Enter the node (cur, mask, ply, alpha, beta): its value `v` is known at once, or its
        # frame is pushed and its first child entered.
        nodes += 1
        if nodes >= check:
            check = nodes + _CHECK_EVERY
            if nodes >= stats[_LIMIT] or now() > deadline:
                stats[_NODES] = nodes
                stats[_ABORTED] = 1
                return 0
        known = True
        v = 0
        possible = non_losing(cur, mask, h, bottom, board)
        if possible == ZERO:
            v = -((cells - ply) // 2)
        elif ply >= cells - 2:
            v = 0
        else:
            known = False
            if ply <= variant.book_ply:  # exact from the opening book
                v = _in_book(variant.book, cur + mask, h, colmasks.shape[0])
                known = v != edge.MISSING
            elif ply == variant.edge_ply:  # exact from the database, no search below
                v = edge.lookup(variant.edge, cur, mask)
                known = v != edge.MISSING
        slot = slot_of(cur + mask, size)
        if not known:
            lo = -((cells - 2 - ply) // 2)
            if alpha < lo:
                alpha = lo
                v, known = alpha, alpha >= beta
        if not known:
            # Order the candidates: most threats created first, centre first among equals;
            # each is one number, threats << 10 | (15 - rank) << 6 | the move's bit index.
            # The children's table entries start loading meanwhile; the node's own entry,
            # which its parent asked for, is read after this work, when it has arrived.
            base = ply * _STACK
            n = 0
            for i in range(colmasks.shape[0]):
                move = possible & colmasks[i]
                if move:
                    prefetch(table, slot_of((cur ^ mask) + (mask | move), size))
                    k = popcnt(winning_cells(cur | move, mask, h, board)) << 10
                    k |= (15 - i) << 6 | lsb_index(move)
                    j = n
                    while j > 0 and stack[base + 4 + j - 1] < k:
                        stack[base + 4 + j] = stack[base + 4 + j - 1]
                        j -= 1
                    stack[base + 4 + j] = k
                    n += 1
        if not known:
            entry = table[slot]
            if entry >> np.uint64(8) == (cur + mask) & _LOW56 and entry & np.uint64(255) != 0:
                val = int(entry & np.uint64(255))
                if val > max_score - min_score + 1:  # a lower bound
                    lb = val + 2 * min_score - max_score - 2
                    if alpha < lb:
                        alpha = lb
                        v, known = alpha, alpha >= beta
                else:  # an upper bound
                    ub = val + min_score - 1
                    if beta > ub:
                        beta = ub
                        v, known = beta, alpha >= beta
        if not known:
            hi = (cells - 1 - ply) // 2
            if beta > hi:
                beta = hi
                v, known = beta, alpha >= beta
        if not known:
            frames[ply * 3], frames[ply * 3 + 1], frames[ply * 3 + 2] = cur, mask, slot
            stack[base], stack[base + 1], stack[base + 2], stack[base + 3] = alpha, beta, 0, n
            cur, mask = cur ^ mask, mask | ONE << np.uint64(stack[base + 4] & 63)
            alpha, beta = -beta, -alpha
            ply += 1
            continue
        # Hand `v` back up until a frame has a child left to search.
        while ply > root:
            ply -= 1
            base = ply * _STACK
            key = frames[ply * 3] + frames[ply * 3 + 1]
            score = -v
            if score >= stack[base + 1]:  # a lower bound
                code = score + max_score - 2 * min_score + 2
                table[frames[ply * 3 + 2]] = (key & _LOW56) << np.uint64(8) | np.uint64(code)
                v = score
                continue
            alpha = max(stack[base], score)
            i = stack[base + 2] + 1
            if i < stack[base + 3]:
                stack[base], stack[base + 2] = alpha, i
                cur, mask = frames[ply * 3], frames[ply * 3 + 1]
                cur, mask = cur ^ mask, mask | ONE << np.uint64(stack[base + 4 + i] & 63)
                alpha, beta = -stack[base + 1], -alpha
                ply += 1
                break
            code = alpha - min_score + 1  # an upper bound
            table[frames[ply * 3 + 2]] = (key & _LOW56) << np.uint64(8) | np.uint64(code)
            v = alpha
        else:  # back at the root
            stats[_NODES] = nodes
            stats[_NEXT_CHECK] = check
            return v


@kernel
def _tdiv2(x: int) -> int:
    """x / 2 truncated toward zero, as in C (Pons' dichotomy relies on it)."""
    return -((-x) // 2) if x < 0 else x // 2


@search_kernel
def _solve(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    weak: bool,
    variant: Variant,
    work: Work,
    stats: I64,
    deadline: float,
) -> int:
    """The score of a position by null-window dichotomy (weak: only its sign is exact)."""
    cells = variant.cells
    if can_win_next(cur, mask, variant.h, variant.bottom, variant.board):
        return (cells + 1 - ply) // 2
    lo = -((cells - ply) // 2)
    hi = (cells + 1 - ply) // 2
    if weak:
        lo = -1
        hi = 1
    while lo < hi:
        med = lo + (hi - lo) // 2
        if med <= 0 and _tdiv2(lo) < med:
            med = _tdiv2(lo)
        elif med >= 0 and _tdiv2(hi) > med:
            med = _tdiv2(hi)
        r = _negamax(
            cur,
            mask,
            ply,
            med,
            med + 1,
            variant,
            work,
            stats,
            deadline,
        )
        if stats[_ABORTED]:
            return 0
        if r <= med:
            hi = r
        else:
            lo = r
    return lo


@search_kernel
def _best_moves(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    variant: Variant,
    work: Work,
    stats: I64,
    deadline: float,
    colidx: I64,
) -> tuple[int, int]:
    """(score, bit set of the columns reaching it): one null-window test per move."""
    s = _solve(cur, mask, ply, False, variant, work, stats, deadline)
    if stats[_ABORTED]:
        return 0, 0
    h = variant.h
    cells = variant.cells
    bottom = variant.bottom
    board = variant.board
    colmasks = variant.colmasks
    best = 0
    possible = (mask + bottom) & board
    opp_threats = winning_cells(cur ^ mask, mask, h, board)
    for i in range(colmasks.shape[0]):
        move = possible & colmasks[i]
        if move == ZERO:
            continue
        if winning_cells(cur, mask, h, board) & move:
            v = (cells + 1 - ply) // 2
        elif opp_threats & ((mask | move) + bottom) & board:
            v = -((cells - ply) // 2)  # the opponent wins with its next disc
        else:
            # v >= s exactly when the child's score is <= -s.
            r = _negamax(
                cur ^ mask, mask | move, ply + 1, -s, -s + 1, variant, work, stats, deadline
            )
            if stats[_ABORTED]:
                return 0, 0
            v = s if r <= -s else s - 1
        if v >= s:
            best |= 1 << colidx[i]
    return s, best


@search_kernel
def _probe(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    t: int,
    moves: U64,
    variant: Variant,
    work: Work,
    stats: I64,
    deadline: float,
    out: I64,
) -> int:
    """Test the moves in the given order: is the move's score for the side to move above `t`?

    One null-window search per move, stopping at the first success: the root's cut-off made
    explicit, so the caller learns which move proves it. ``out[i]`` becomes 1 (proven > t),
    -1 (proven <= t) or stays 0 (not searched). Returns the index of the first success, -1
    when every move is proven <= t, -2 when the budget ran out. The moves must neither win on
    the spot nor let the opponent win next move (see `non_losing`).
    """
    for i in range(moves.shape[0]):
        r = _negamax(
            cur ^ mask, mask | moves[i], ply + 1, -t - 1, -t, variant, work, stats, deadline
        )
        if stats[_ABORTED]:
            return -2
        if -r > t:
            out[i] = 1
            return i
        out[i] = -1
    return -1


class _Context:
    """Per-variant constants and the shared search buffers of this process."""

    def __init__(self, rows: int, cols: int, table: U64) -> None:
        self.rows, self.cols = rows, cols
        self.h = rows + 1
        self.cells = rows * cols
        self.bottom = np.uint64(sum(1 << (c * self.h) for c in range(cols)))
        self.board = np.uint64(int(self.bottom) * ((1 << rows) - 1))
        order = centre_order(cols)
        colmasks = np.array([((1 << rows) - 1) << (c * self.h) for c in order], dtype=np.uint64)
        self.colidx = np.array(order, dtype=np.int64)
        on = (rows, cols) == (edge.ROWS, edge.COLS)
        db = edge.data() if on and _BOOKS["edge"] else edge.EMPTY
        keys_, scores = (
            opening.arrays()
            if on and _BOOKS["opening"]
            else (np.zeros(0, np.uint64), np.zeros(0, np.int8))
        )
        packed = keys_ << np.uint64(8) | (scores.astype(np.int64) + 128).astype(np.uint64)
        self.variant = Variant(
            self.h, self.cells, self.bottom, self.board, colmasks,
            opening.BOOK_PLY if packed.shape[0] else -1, packed,
            edge.PLY if db.shape[0] else -1, db,
        )  # fmt: skip
        movebuf = np.zeros((self.cells + 2) * 16, dtype=np.uint64)
        scorebuf = np.zeros((self.cells + 2) * 16, dtype=np.int64)
        frames = np.zeros((self.cells + 2) * 3, dtype=np.uint64)
        stack = np.zeros((self.cells + 2) * _STACK, dtype=np.int64)
        self.work = Work(table, movebuf, scorebuf, frames, stack)


_CONTEXTS: dict[tuple[int, int], _Context] = {}
_TABLE: dict[str, Any] = {}
_BOOKS = {"opening": True, "edge": True}


def use_books(opening: bool, edge: bool) -> None:
    """Whether the solver reads the opening book and the 12-disc database (`edge`) for 7x6
    positions: benchmarks time the search alone with both off, the book's build reads the
    database only. Clears the table."""
    if (_BOOKS["opening"], _BOOKS["edge"]) != (opening, edge):
        _BOOKS.update(opening=opening, edge=edge)
        _CONTEXTS.clear()
        reset()


def check_variant(state: Connect4State) -> None:
    """Raise UnsupportedVariant unless the solver handles this board."""
    if state.k != 4 or state.cols < 4 or state.cols > 16:
        raise UnsupportedVariant(
            f"the perfect solver handles four in a row on 4..16 columns, not {state.variant}"
        )


def _context(state: Connect4State) -> _Context:
    check_variant(state)
    variant = (state.rows, state.cols)
    if _TABLE.get("variant") != variant:  # keys of two board sizes could collide: start afresh
        if "table" not in _TABLE:
            _TABLE["table"] = allocate(TABLE_SIZE)
        else:
            _TABLE["table"].fill(0)
        _TABLE["variant"] = variant
    ctx = _CONTEXTS.get(variant)
    if ctx is None:
        ctx = _CONTEXTS[variant] = _Context(*variant, _TABLE["table"])
    return ctx


def reset() -> None:
    """Forget everything the transposition table learned (benchmarks time cold solves)."""
    if "table" in _TABLE:
        _TABLE["table"].fill(0)  # a zero value marks an empty slot


def _stats(max_nodes: int | None) -> I64:
    stats = np.zeros(4, dtype=np.int64)
    stats[_LIMIT] = max_nodes if max_nodes is not None else _NO_LIMIT
    stats[_NEXT_CHECK] = _CHECK_EVERY
    return stats


class SearchCounter:
    """Nodes searched by the last call of this module (for benchmarks and Decision.nodes)."""

    last_nodes: int = 0


def _finish(stats: I64) -> None:
    SearchCounter.last_nodes = int(stats[_NODES])
    if stats[_ABORTED]:
        raise BudgetExceeded(f"gave up after {int(stats[_NODES])} nodes")


def _run_solve(
    state: Connect4State, weak: bool, max_nodes: int | None, deadline: float | None
) -> int:
    if state.is_over():
        raise ValueError("the game is over: there is nothing to solve")
    ctx = _context(state)
    stats = _stats(max_nodes)
    score = _solve(
        np.uint64(state.current), np.uint64(state.mask), state.ply, weak, ctx.variant, ctx.work,
        stats, math.inf if deadline is None else deadline,
    )  # fmt: skip
    _finish(stats)
    return int(score)


def solve(
    state: Connect4State, *, max_nodes: int | None = None, deadline: float | None = None
) -> int:
    """Pons' score of an unfinished position: > 0 the side to move wins (sooner = larger), 0 a
    draw, < 0 it loses. Raises BudgetExceeded past `max_nodes` or the perf_counter `deadline`."""
    return _run_solve(state, False, max_nodes, deadline)


def solve_weak(
    state: Connect4State, *, max_nodes: int | None = None, deadline: float | None = None
) -> int:
    """Only the outcome: 1 the side to move wins, 0 draw, -1 it loses (much faster than solve)."""
    score = _run_solve(state, True, max_nodes, deadline)
    return (score > 0) - (score < 0)


def best_moves(
    state: Connect4State, *, max_nodes: int | None = None, deadline: float | None = None
) -> tuple[int, list[int]]:
    """(score, every column whose move keeps that exact score), columns ascending."""
    if state.is_over():
        raise ValueError("the game is over: there is no move")
    ctx = _context(state)
    stats = _stats(max_nodes)
    score, best = _best_moves(
        np.uint64(state.current), np.uint64(state.mask), state.ply, ctx.variant, ctx.work, stats,
        math.inf if deadline is None else deadline, ctx.colidx,
    )  # fmt: skip
    _finish(stats)
    return int(score), [c for c in range(state.cols) if best >> c & 1]


class Probe(NamedTuple):
    """What `probe` proved: the first column above the threshold, and each column's verdict."""

    found: int | None  # the first column proven above the threshold
    verdicts: dict[int, int]  # column -> 1 (above), -1 (not above); unsearched columns absent
    complete: bool  # False when the budget ran out first


def probe(
    state: Connect4State,
    columns: Sequence[int],
    threshold: int,
    *,
    max_nodes: int | None = None,
    deadline: float | None = None,
) -> Probe:
    """Find, in the given order, a column whose Pons score for the side to move is above
    `threshold` (0: a winning move; -1: a move that does not lose). The columns must be
    playable, must not win on the spot and must not let the opponent win next move.

    Unlike the other entry points an exhausted budget does not raise: the verdicts reached so
    far are returned with ``complete=False`` (`SearchCounter.last_nodes` counts the nodes).
    """
    if state.is_over():
        raise ValueError("the game is over: there is nothing to probe")
    ctx = _context(state)
    moves = np.zeros(len(columns), dtype=np.uint64)
    possible = int(state.mask) + int(ctx.bottom)
    for i, col in enumerate(columns):
        cell = possible & (((1 << state.rows) - 1) << (col * ctx.h))
        if not cell:
            raise ValueError(f"column {col + 1} is full")
        moves[i] = cell & -cell
    out = np.zeros(len(columns), dtype=np.int64)
    stats = _stats(max_nodes)
    found = _probe(
        np.uint64(state.current), np.uint64(state.mask), state.ply, threshold, moves, ctx.variant,
        ctx.work, stats, math.inf if deadline is None else deadline, out,
    )  # fmt: skip
    SearchCounter.last_nodes = int(stats[_NODES])
    verdicts = {col: int(out[i]) for i, col in enumerate(columns) if out[i]}
    return Probe(columns[found] if found >= 0 else None, verdicts, found != -2)


def every_move_loses(state: Connect4State) -> bool:
    """Whether every move lets the opponent win next move (it has two threats, or a threat
    under another)."""
    ctx = _context(state)
    return not int(
        non_losing(np.uint64(state.current), np.uint64(state.mask), ctx.h, ctx.bottom, ctx.board)
    )


def non_losing_moves(state: Connect4State) -> list[int]:
    """Columns that do not allow an immediate win by the opponent, or all if there is none."""
    ctx = _context(state)
    bits = int(
        non_losing(np.uint64(state.current), np.uint64(state.mask), ctx.h, ctx.bottom, ctx.board)
    )
    col = (1 << ctx.h) - 1
    moves = [c for c in range(state.cols) if bits >> (c * ctx.h) & col]
    return moves or state.legal_moves()
