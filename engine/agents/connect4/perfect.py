"""The `perfect` agent: perfect Connect Four within a time budget (the `expert` level).

Per move: a win at hand or a forced reply, else the exact solve (the opening book and the 12-disc
database make it milliseconds on 7x6) and a move of the best score; if that runs out of time,
a short heuristic search ranks the moves and the solver proves them in that order until the
deadline. The steps and the measurements behind them: docs/agents.md.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engine.agents.base import Agent, AgentInfo, Budget, Decision, require_moves
from engine.agents.connect4 import solver as sv
from engine.agents.connect4 import threats
from engine.agents.connect4.lines import centre_order
from engine.games.base import GameState
from engine.games.bits import kernel, popcount
from engine.games.c4windows import window_array
from engine.games.connect4 import Connect4State

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

WIN = 1000  # heuristic scores stay within +-999; proven results are +-(WIN + Pons score)
DEFAULT_TIME = 0.9


class Tables(NamedTuple):
    """What the heuristic search reads and writes: exactly that, since numba counts a
    reference to every array a kernel is handed, at every node."""

    h: int  # bits per column: rows + 1
    cells: int
    bottom: np.uint64
    board: np.uint64
    odd_rows: np.uint64  # the cells of the odd rows (1st, 3rd, ...)
    windows: U64  # every line of four cells
    colmasks: U64  # the columns, centre first (the solver's)
    movebuf: U64  # per ply: the moves, then their scores (the solver's buffers)
    scorebuf: I64


@kernel
def evaluate(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    h: int,
    board: np.uint64,
    odd_rows: np.uint64,
    windows: U64,
) -> int:
    """Heuristic value for the side to move (see the module docstring), within +-999."""
    opp = cur ^ mask
    mine = threats.winning_cells(cur, mask, h, board)
    theirs = threats.winning_cells(opp, mask, h, board)
    # Rows 1, 3, 5 (bit rows 0, 2, 4) suit the first player, the side to move when ply is even.
    my_good = odd_rows if ply % 2 == 0 else board & ~odd_rows
    their_good = board & ~my_good
    s = 12 * popcount(mine & my_good) + 6 * popcount(mine & ~my_good)
    s -= 12 * popcount(theirs & their_good) + 6 * popcount(theirs & ~their_good)
    for i in range(windows.shape[0]):
        w = windows[i]
        a = w & cur
        b = w & opp
        if a and not b:
            n = popcount(a)
            s += 1 if n == 1 else (3 if n == 2 else 0)
        elif b and not a:
            n = popcount(b)
            s -= 1 if n == 1 else (3 if n == 2 else 0)
    return max(-999, min(999, s))


@kernel
def _alphabeta(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    depth: int,
    alpha: int,
    beta: int,
    tables: Tables,
    stats: I64,
    deadline: float,
) -> int:
    """Depth-limited negamax; the side to move cannot win on the spot (callers check)."""
    if sv._out_of_budget(stats, deadline):
        return 0
    # The arrays are read through `tables.` at each use, not bound to names: a name that lives
    # across branches costs numba a reference count update per node.
    h = tables.h
    cells = tables.cells
    board = tables.board
    possible = threats.non_losing(cur, mask, h, tables.bottom, board)
    if possible == np.uint64(0):
        return -(WIN + (cells - ply) // 2)
    if ply >= cells - 2:
        return 0
    if depth <= 0:
        return evaluate(cur, mask, ply, h, board, tables.odd_rows, tables.windows)
    n = 0
    base = ply * 16
    for i in range(tables.colmasks.shape[0]):
        move = possible & tables.colmasks[i]
        if move:
            score = popcount(threats.winning_cells(cur | move, mask, h, board))
            j = n
            while j > 0 and tables.scorebuf[base + j - 1] < score:
                tables.movebuf[base + j] = tables.movebuf[base + j - 1]
                tables.scorebuf[base + j] = tables.scorebuf[base + j - 1]
                j -= 1
            tables.movebuf[base + j] = move
            tables.scorebuf[base + j] = score
            n += 1
    for i in range(n):
        move = tables.movebuf[base + i]
        score = -_alphabeta(
            cur ^ mask, mask | move, ply + 1, depth - 1, -beta, -alpha, tables, stats,
            deadline,
        )  # fmt: skip
        if stats[2]:
            return 0
        if score >= beta:
            return score
        if score > alpha:
            alpha = score
    return alpha


@kernel
def _root_scores(
    cur: np.uint64,
    mask: np.uint64,
    ply: int,
    depth: int,
    cols: I64,
    tables: Tables,
    stats: I64,
    deadline: float,
    out: I64,
) -> None:
    """Heuristic value of each candidate column (exact scores, full window, for ranking)."""
    h = tables.h
    cells = tables.cells
    bottom = tables.bottom
    board = tables.board
    for i in range(cols.shape[0]):
        col = cols[i]
        move = ((mask + bottom) & board) & (((np.uint64(1) << np.uint64(h - 1)) - np.uint64(1))
                                            << np.uint64(col * h))  # fmt: skip
        if threats.winning_cells(cur, mask, h, board) & move:
            out[i] = WIN + (cells + 1 - ply) // 2
            continue
        child_cur = cur ^ mask
        child_mask = mask | move
        if threats.can_win_next(child_cur, child_mask, h, bottom, board):
            out[i] = -(WIN + (cells - ply) // 2)
            continue
        out[i] = -_alphabeta(
            child_cur, child_mask, ply + 1, depth - 1, -10 * WIN, 10 * WIN, tables,
            stats, deadline,
        )  # fmt: skip
        if stats[2]:
            return


class ExpertAgent(Agent):
    """Solve what can be solved in time, else the best heuristic move among those not lost."""

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        if not isinstance(state, Connect4State):
            raise TypeError("the perfect agent plays Connect Four only")
        sv.check_variant(state)
        t0 = time.perf_counter()
        moves = require_moves(state)
        wins = state.winning_moves()
        if wins:
            return Decision(move=wins[0], info={"reason": "win now"})
        safe = sv.non_losing_moves(state)
        if len(safe) == 1:
            return Decision(move=safe[0], info={"reason": "only move"})
        total = budget.time
        deadline = math.inf if total is None else t0 + total - 0.005
        node_cap = budget.nodes
        ranking, depth, nodes = self._rank(state, safe, t0, total, node_cap)
        info: dict[str, Any] = {"ranking": [c + 1 for c in ranking], "legal": len(moves)}
        lost = len(safe) == len(moves) and sv.every_move_loses(state)
        if not lost:
            exact = self._exact(state, ranking, t0, total, node_cap, nodes)
            if exact is not None:
                move, score, nodes = exact
                info["reason"] = "solved"
                return Decision(
                    move=move,
                    score=float(score),
                    depth=depth,
                    nodes=nodes,
                    seconds=time.perf_counter() - t0,
                    info=info,
                )
        # The exact solve ran out of time (a board size the books do not cover): prove what
        # can be proven in the time left, in the heuristic's order.

        def run(columns: list[int], threshold: int) -> sv.Probe:
            # One probe down the ranking. Probing each move in turn with growing node limits
            # (to catch a quick proof further down) kept the outcome less often: 90.5% against
            # 93.7% on 120 positions of 4-8 discs.
            nonlocal nodes
            if not columns:
                return sv.Probe(None, {}, True)
            cap = None if node_cap is None else max(1, node_cap - nodes)
            result = sv.probe(state, columns, threshold, max_nodes=cap, deadline=deadline)
            nodes += sv.SearchCounter.last_nodes
            return result

        if lost:
            move, reason = ranking[0], "lost"  # the opponent has two threats
        else:
            move, reason = self._solve(ranking, run, info)
        info["reason"] = reason
        return Decision(
            move=move, depth=depth, nodes=nodes, seconds=time.perf_counter() - t0, info=info
        )

    @staticmethod
    def _exact(
        state: Connect4State,
        ranking: list[int],
        t0: float,
        total: float | None,
        node_cap: int | None,
        nodes: int,
    ) -> tuple[int, int, int] | None:
        """A move of the best exact score: the fastest win, a draw, the longest defence (the
        books make this milliseconds on 7x6 before 12 discs, tenths of a second at worst
        after). The score first, then the moves in the heuristic's order until one reaches
        it: among equals the most testing for a fallible opponent. (move, score, nodes so far),
        or None if the score is not found in 85% of the time, or no move proven in the rest."""
        cap = None if node_cap is None else max(1, node_cap - nodes)
        try:
            score = sv.solve(
                state, max_nodes=cap, deadline=math.inf if total is None else t0 + 0.85 * total
            )
        except sv.BudgetExceeded:
            return None
        nodes += sv.SearchCounter.last_nodes
        cap = None if node_cap is None else max(1, node_cap - nodes)
        deadline = math.inf if total is None else t0 + total - 0.005
        found = sv.probe(state, ranking, score - 1, max_nodes=cap, deadline=deadline).found
        if found is None:
            return None
        return found, score, nodes + sv.SearchCounter.last_nodes

    @staticmethod
    def _solve(
        ranking: list[int], run: Callable[[list[int], int], sv.Probe], info: dict[str, Any]
    ) -> tuple[int, str]:
        """A move that does not lose first, then a winning move among the others.

        Proving a move safe first means a timeout in the win search still leaves a safe move
        to play; measured on 120 positions of 4-8 discs this kept the outcome more often than
        looking for a win first (89.5% against 87.4%).
        """
        draw = run(ranking, -1)
        if draw.found is None:
            if draw.complete:
                return ranking[0], "lost"
            open_moves = [c for c in ranking if draw.verdicts.get(c) != -1]
            return open_moves[0], "timeout"
        info["safe"] = draw.found + 1
        candidates = [c for c in ranking if draw.verdicts.get(c) != -1]
        win = run(candidates, 0)
        if win.found is not None:
            return win.found, "solved"
        # Proven no win: the safe move is a best move. Out of time: the safe move still keeps
        # a draw, and the top-ranked unproven move was no more often right (13 of 16 both).
        return draw.found, "solved" if win.complete else "timeout"

    @staticmethod
    def _rank(
        state: Connect4State,
        safe: list[int],
        t0: float,
        total: float | None,
        node_cap: int | None,
    ) -> tuple[list[int], int, int]:
        """Columns by iterative-deepening heuristic value (centre first on ties), within 15%
        of the time budget and of the node budget."""
        ctx = sv._context(state)
        h, cells = ctx.h, ctx.cells
        odd_rows = np.uint64(sum(1 << (c * h + r) for c in range(state.cols)
                                 for r in range(0, state.rows, 2)))  # fmt: skip
        windows = window_array(state.rows, state.cols, 4)
        tables = Tables(h, cells, ctx.bottom, ctx.board, odd_rows, windows,
                        ctx.variant.colmasks, ctx.work.movebuf, ctx.work.scorebuf)  # fmt: skip
        order = centre_order(state.cols)
        cols = np.array([c for c in order if c in safe], dtype=np.int64)
        stop = math.inf if total is None else t0 + 0.15 * total
        max_depth = 12 if total is None else 42
        out = np.zeros(cols.shape[0], dtype=np.int64)
        best = [int(c) for c in cols]
        depth_done = 0
        nodes = 0
        cur, mask = np.uint64(state.current), np.uint64(state.mask)
        for depth in range(2, min(max_depth, cells - state.ply) + 1):
            stats = sv._stats(None if node_cap is None else max(1, node_cap * 15 // 100 - nodes))
            _root_scores(cur, mask, state.ply, depth, cols, tables, stats, stop, out)
            nodes += int(stats[0])
            if stats[2]:
                break
            ranked = sorted(range(cols.shape[0]), key=lambda i: -int(out[i]))
            best = [int(cols[i]) for i in ranked]
            depth_done = depth
            if time.perf_counter() > t0 + 0.05 * (total or math.inf):
                break  # the next depth would not finish in the time slot
        return best, depth_done, nodes


AGENT_INFOS = [
    AgentInfo(
        "perfect",
        ("connect4",),
        "perfect play (four in a row): solves every move, plays the fastest win and the "
        "longest defence; on boards its books do not cover, proves what it can in time",
        ExpertAgent,
        budget=Budget(time=DEFAULT_TIME),
    ),
]
