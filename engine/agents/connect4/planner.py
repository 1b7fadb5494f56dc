"""The `planner` agent, Connect Four: forced checks at the root (win, block, no move handing over
a win, double threats), then a table scoring the lines of two and three each side can still
complete, searched a few plies by averaging (`search="average"`) or by minimax. The table and
both searches: docs/agents.md.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.agents.base import Agent, AgentInfo, Budget, Decision, choice, require_moves
from engine.agents.connect4.lines import centre_order, win_cells
from engine.games import c4kernels as kern
from engine.games.base import GameState
from engine.games.c4windows import window_masks
from engine.games.connect4 import Connect4State

FORCED_HAND, TWO, THREE, ATTACK, FORCED_WIN = 25, 10, 30, 50, 125
IMPOSSIBLE = -15
SEARCHES = ("average", "minimax")
DEFAULT_DEPTH = 4
MINIMAX_WIN = 10.0


class _Stop(Exception):
    """The deadline passed during a search."""


@dataclass(frozen=True, slots=True)
class Geometry:
    """Per-size constants of a board."""

    rows: int
    cols: int
    k: int
    windows: tuple[int, ...]
    board: int
    bottom: int
    columns: tuple[int, ...]

    def landing(self, mask: int) -> int:
        """The landing cell of every playable column."""
        return (mask + self.bottom) & self.board

    def threats(self, bb: int, mask: int) -> int:
        """Empty cells that complete a line for `bb`."""
        return int(
            win_cells(np.uint64(bb), np.uint64(mask), np.uint64(self.board), self.rows, self.k)
        )

    def cells(self, bb: int) -> list[int]:
        """The single-bit cells of `bb`, lowest first."""
        out = []
        while bb:
            low = bb & -bb
            out.append(low)
            bb ^= low
        return out


@lru_cache(maxsize=32)
def geometry(rows: int, cols: int, k: int) -> Geometry:
    h = rows + 1
    return Geometry(
        rows,
        cols,
        k,
        window_masks(rows, cols, k),
        int(kern.board_mask(rows, cols)),
        int(kern.bottom_mask(rows, cols)),
        tuple(((1 << rows) - 1) << (c * h) for c in range(cols)),
    )


def _is_win(bb: int, geo: Geometry) -> bool:
    return bool(kern.is_win(np.uint64(bb), geo.rows, geo.k))


def score_items(ai: int, hu: int, ai_to_move: bool, geo: Geometry) -> tuple[int, list[int]]:
    """(forced, items): forced is +-125 (forced win) or 0; items lists the table's points in
    the table's order (empty when forced or drawn)."""
    mask = ai | hu
    if _is_win(ai, geo):
        return FORCED_WIN, []
    if _is_win(hu, geo):
        return -FORCED_WIN, []
    if mask == geo.board:
        return 0, []
    landing = geo.landing(mask)
    ai_wins = geo.threats(ai, mask)
    hu_wins = geo.threats(hu, mask)
    mover_wins, other_wins = (ai_wins, hu_wins) if ai_to_move else (hu_wins, ai_wins)
    sign = 1 if ai_to_move else -1
    if mover_wins & landing:
        return sign * FORCED_WIN, []
    attacks = other_wins & landing
    if attacks & (attacks - 1):
        return -sign * FORCED_WIN, []

    items: list[int] = []
    under_ai = ai_wins >> 1
    under_hu = hu_wins >> 1
    items += [FORCED_HAND for col in geo.columns if landing & col & under_ai]
    lines = {}
    for side, own, other in (("ai", ai, hu), ("hu", hu, ai)):
        twos, threes, attack = 0, 0, 0
        for w in geo.windows:
            if w & other:
                continue
            n = (w & own).bit_count()
            if n == geo.k - 2:
                twos += 1
            elif n == geo.k - 1:
                if w & ~mask & landing:
                    attack += 1
                else:
                    threes += 1
        lines[side] = (twos, threes, attack)
    twos, threes, attack = lines["ai"]
    items += [TWO] * twos + [THREE] * threes + [ATTACK] * attack
    items += [IMPOSSIBLE for col in geo.columns if not landing & col or landing & col & under_hu]
    twos, threes, attack = lines["hu"]
    items += [-TWO] * twos + [-THREE] * threes + [-ATTACK] * attack
    return 0, items


def round_half_away(x: float) -> int:
    """Round to the nearest whole, halves away from zero (2.5 -> 3, -2.5 -> -3)."""
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def average_score(ai: int, hu: int, ai_to_move: bool, geo: Geometry) -> int:
    """The table's score: the sum of the items, or the forced-win value."""
    forced, items = score_items(ai, hu, ai_to_move, geo)
    return forced if forced or not items else sum(items)


def diminishing(items: list[int]) -> float:
    """The minimax search's special scoring of a list of table items (see the module doc)."""
    score = 0.0
    for points in items:
        percent = score / 10 if score >= 0 else score / -10
        multiplier = 1.0 - percent
        score = _cap(score + points / 10 * multiplier)
    return _cap(round(score, 3))


def _cap(score: float) -> float:
    """The minimax backup: a score at or beyond +-10 without a win is set back to +-9.95 (also
    after rounding, which could otherwise turn 9.9996 into 10)."""
    if score >= MINIMAX_WIN:
        return 9.95
    if score <= -MINIMAX_WIN:
        return -9.95
    return score


def minimax_score(ai: int, hu: int, ai_to_move: bool, geo: Geometry) -> float:
    forced, items = score_items(ai, hu, ai_to_move, geo)
    if forced:
        return MINIMAX_WIN if forced > 0 else -MINIMAX_WIN
    return diminishing(items)


def unstoppable(own: int, mask: int, geo: Geometry) -> bool:
    """Whether `own` has two threats the opponent cannot both stop (it is the opponent's turn
    and the opponent has no win of its own): two playable winning cells, or a playable winning
    cell with another winning cell right above it."""
    wins = geo.threats(own, mask)
    playable = wins & geo.landing(mask)
    return bool(playable & (playable - 1)) or bool((playable << 1) & wins)


class PlannerAgent(Agent):
    """The planner; `search` is "average" or "minimax" (docs/agents.md)."""

    def __init__(self, search: str = "average") -> None:
        if search not in SEARCHES:
            raise ValueError(f"unknown planner search {search!r}: choose one of average, minimax")
        self.search = search
        self._deadline: float | None = None
        self._nodes = 0

    # -- the searches ---------------------------------------------------------------------------

    def _tick(self) -> None:
        self._nodes += 1
        deadline = self._deadline
        if deadline is not None and self._nodes % 64 == 0 and time.perf_counter() > deadline:
            raise _Stop

    def _average(self, ai: int, hu: int, ai_to_move: bool, depth: int, geo: Geometry) -> int:
        self._tick()
        score = average_score(ai, hu, ai_to_move, geo)
        if abs(score) == FORCED_WIN or depth <= 0:
            return score
        mask = ai | hu
        other_wins = geo.threats(hu if ai_to_move else ai, mask)
        values = []
        for cell in geo.cells(geo.landing(mask)):
            if (cell << 1) & other_wins:  # a suicide move: the other side wins next
                continue
            if ai_to_move:
                values.append(self._average(ai | cell, hu, False, depth - 1, geo))
            else:
                values.append(self._average(ai, hu | cell, True, depth - 1, geo))
        if not values:
            return score
        return round_half_away((score + sum(values) / len(values)) / 2)

    def _minimax(self, ai: int, hu: int, ai_to_move: bool, depth: int, geo: Geometry) -> float:
        self._tick()
        mask = ai | hu
        if depth <= 0 or mask == geo.board or _is_win(ai, geo) or _is_win(hu, geo):
            return minimax_score(ai, hu, ai_to_move, geo)
        values = []
        for cell in geo.cells(geo.landing(mask)):
            if ai_to_move:
                values.append(self._minimax(ai | cell, hu, False, depth - 1, geo))
            else:
                values.append(self._minimax(ai, hu | cell, True, depth - 1, geo))
        return max(values) if ai_to_move else min(values)

    def _value(self, ai: int, hu: int, depth: int, geo: Geometry) -> float:
        """The value of the position after one of the planner's moves (opponent to move)."""
        if self.search == "average":
            return self._average(ai, hu, False, depth, geo)
        return self._minimax(ai, hu, False, depth, geo)

    # -- the agent ------------------------------------------------------------------------------

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        start = time.perf_counter()
        if not isinstance(state, Connect4State):
            raise TypeError("the planner plays Connect Four only")
        require_moves(state)
        geo = geometry(state.rows, state.cols, state.k)
        ai, hu, mask = state.current, state.opponent, state.mask
        h = state.rows + 1
        order = centre_order(state.cols)
        landing = geo.landing(mask)
        cell_of = {c: landing & geo.columns[c] for c in order if landing & geo.columns[c]}

        def forced(col: int, why: str) -> Decision:
            return Decision(col, depth=0, seconds=time.perf_counter() - start, info={"line": why})

        mine = geo.threats(ai, mask) & landing
        if mine:
            return forced(next(c for c in order if mine >> (c * h) & ((1 << h) - 1)), "win")
        theirs = geo.threats(hu, mask)
        if theirs & landing:
            block = theirs & landing
            return forced(next(c for c in order if block & geo.columns[c]), "block")
        safe = [c for c in cell_of if not (cell_of[c] << 1) & theirs]
        for c in safe:
            if unstoppable(ai | cell_of[c], mask | cell_of[c], geo):
                return forced(c, "double threat")
        if not safe:
            return forced(next(iter(cell_of)), "lost")
        if len(safe) == 1:
            return forced(safe[0], "only move")

        empties = state.rows * state.cols - state.ply
        if budget.depth is not None:
            max_depth = budget.depth
        elif budget.time is None:
            max_depth = DEFAULT_DEPTH
        else:
            max_depth = empties
        max_depth = max(1, min(max_depth, empties))
        self._deadline = budget.deadline(start)
        self._nodes = 0
        best_col, best_val, reached = safe[0], 0.0, 0
        for depth in range(1, max_depth + 1):
            try:
                values = {c: self._value(ai | cell_of[c], hu, depth - 1, geo) for c in safe}
            except _Stop:
                if reached:
                    break
                self._deadline = None  # depth 1 always completes: never an unexplored move
                values = {c: self._value(ai | cell_of[c], hu, 0, geo) for c in safe}
            best_val = max(values.values())
            best_col = next(c for c in safe if values[c] == best_val)
            reached = depth
            if self._deadline is None and budget.time is not None:
                break
        return Decision(
            best_col,
            score=float(best_val),
            depth=reached,
            nodes=self._nodes,
            seconds=time.perf_counter() - start,
            info={"line": self.search},
        )


AGENT_INFOS = [
    AgentInfo(
        "planner",
        ("connect4",),
        "takes wins, blocks threats, never hands over a win and sets up double threats; "
        "otherwise scores the lines of two and three it can make, a few moves ahead",
        PlannerAgent,
        budget=Budget(depth=DEFAULT_DEPTH),
        params=(
            choice(
                "search",
                SEARCHES,
                "average: mixes a position's score with its replies'; minimax: the worst reply",
            ),
        ),
    ),
]
