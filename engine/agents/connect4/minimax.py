"""Connect Four minimax and expectiminimax: iterative deepening over the search of `search.py`,
driven from Python in node-limited chunks so a time budget holds.

How the search works, and how the registry's `minimax` entry shares its name with Othello's:
docs/agents.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, cast

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
from engine.agents.connect4.search import (
    INF,
    MATE_BOUND,
    TT_BITS,
    Variant,
    Work,
    chance_root,
    root,
)
from engine.agents.searchparams import CHANCE, DEFAULT_DEPTH
from engine.games import c4kernels as kern
from engine.games.base import GameState
from engine.games.connect4 import Connect4State

_CHUNK_SECONDS = 0.03
_INITIAL_RATE = 1_000_000.0  # nodes/s assumed before the first measurement
_MARGIN = 0.004  # seconds kept back for the Python side


class _Search:
    """The per-move search state: board tables, transposition table, heuristics, counters."""

    def __init__(self, state: Connect4State, eval_name: str) -> None:
        rows, cols, k = state.rows, state.cols, state.k
        self.state = state
        max_ply = rows * cols + 2
        self.variant = Variant(
            np.array([rows, cols, k, evals.eval_id(eval_name), 64 - TT_BITS], np.int64),
            np.array([kern.bottom_mask(rows, cols), kern.board_mask(rows, cols)], np.uint64),
            np.array(centre_order(cols), np.int64),
            *evals.tables(rows, cols, k),
        )
        self.work = Work(
            np.zeros(2 << TT_BITS, np.uint64),
            np.full(2 * max_ply, -1, np.int64),
            np.zeros(64, np.int64),
            np.zeros(max_ply * 2 * cols, np.int64),
        )
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
        cols = self.state.cols
        values: dict[int, int] = {}
        best = [-1]

        def step(depth: int, stats: npt.NDArray[np.int64]) -> tuple[int, int]:
            vals = np.full(cols, -INF, np.int64)
            col, val = root(
                self.cur,
                self.mask,
                depth,
                best[0],
                self.variant,
                self.work,
                stats,
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
            col, val = chance_root(
                self.cur,
                self.mask,
                depth,
                chance_plies,
                self.variant,
                self.work,
                stats,
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
