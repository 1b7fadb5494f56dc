"""Seed 001's weight-grid strategy: `computer_weight_capture` on a fixed positional grid.

The seed: "every piece that would be flipped has a corresponding value on the weight_grid, and
these values are summed"; the capture strategy plays the legal move with the largest sum. Only
the flipped discs count, as the seed says, not the square the new disc lands on (that square is
the move itself, which the seed's capture score never included). Ties go to the first maximum in
a1..h8 order (the seed's scan order, like `first_max_score`). The seed runs this strategy on 20%
of the moves and a random lower-level greedy strategy otherwise (its `computer_random`), hence
`capture_share` and `GreedyAgent("random")`.

The seed's grid is learned from finished games (+1 for the winner's squares, -1 for the
loser's). Until learned grids exist in the database, `grid="default"` is a fixed classic
positional grid; `load_grid` is the one place a later `grid="learned:NAME"` will plug in.
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt

from engine.agents.base import Agent, AgentInfo, Budget, Decision, require_moves
from engine.agents.greedy import GreedyAgent
from engine.games.base import GameState, Move
from engine.games.othello import PASS, OthelloState

Grid = npt.NDArray[np.float64]

DEFAULT_GRID: Grid = np.array(
    [
        [100, -20, 10, 5, 5, 10, -20, 100],
        [-20, -50, -2, -2, -2, -2, -50, -20],
        [10, -2, -1, -1, -1, -1, -2, 10],
        [5, -2, -1, -1, -1, -1, -2, 5],
        [5, -2, -1, -1, -1, -1, -2, 5],
        [10, -2, -1, -1, -1, -1, -2, 10],
        [-20, -50, -2, -2, -2, -2, -50, -20],
        [100, -20, 10, 5, 5, 10, -20, 100],
    ],
    dtype=np.float64,
)
"""The classic positional grid, row r = rank r + 1 (a1..h8 order: grid[rank, file]).

Corners 100, the X-squares diagonal to them -50, the C-squares beside them -20, other edge
squares 5-10, the inner squares about -1 (the grid is symmetric, so the orientation is moot).
"""
DEFAULT_GRID.setflags(write=False)


def load_grid(name: str) -> Grid:
    """The 8x8 grid a `grid=` setting names ("default"; learned grids will come from the db)."""
    if name == "default":
        return DEFAULT_GRID
    raise ValueError(f"unknown weight grid {name!r}: only 'default' exists for now")


def capture_score(state: OthelloState, move: Move, grid: Grid) -> float:
    """Sum of the grid weights of the discs `move` would flip (0 for PASS)."""
    flipped = state.flips(move)
    flat = grid.reshape(64)
    total = 0.0
    while flipped:
        low = flipped & -flipped
        total += float(flat[low.bit_length() - 1])
        flipped ^= low
    return total


def weight_capture_move(state: OthelloState, grid: Grid) -> tuple[Move, float]:
    """Seed 001's `computer_weight_capture`: the move flipping the most grid weight."""
    moves = require_moves(state)
    if moves == [PASS]:
        return PASS, 0.0
    best_move, best = moves[0], capture_score(state, moves[0], grid)
    for move in moves[1:]:
        score = capture_score(state, move, grid)
        if score > best:  # strict: the first maximum in a1..h8 order wins ties
            best_move, best = move, score
    return best_move, best


class WeightGridAgent(Agent):
    """Weight-capture on `capture_share` of the moves, greedy-random on the others (seed 001)."""

    def __init__(self, capture_share: float = 0.2, grid: str = "default") -> None:
        if not 0.0 <= capture_share <= 1.0:
            raise ValueError(f"capture_share must be in [0, 1], got {capture_share}")
        self.capture_share = capture_share
        self.grid_name = grid
        self.grid = load_grid(grid)
        self.greedy = GreedyAgent("random")

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        if not isinstance(state, OthelloState):
            raise TypeError("the weight-grid strategy plays Othello only")
        if rng.random() < self.capture_share:
            move, score = weight_capture_move(state, self.grid)
            return Decision(move=move, score=score, depth=1, info={"strategy": "weight_capture"})
        decision = self.greedy.choose(state, budget, rng)
        decision.info["strategy"] = "greedy-random"
        return decision


AGENT_INFOS = [
    AgentInfo(
        "weightgrid",
        ("othello",),
        "seed 001: weight-capture 20% of moves, greedy-random otherwise "
        "(fixed positional grid until learned)",
        WeightGridAgent,
    )
]
