"""The weight-grid agent `weightgrid` for Othello: plays the move that captures the most grid
weight, with a grid that is fixed or learned from games. The rules, the learning modes and
their curves: docs/learning.md, "The weightgrid agent"."""

from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from engine.agents.base import (
    MEMORY,
    AgentInfo,
    Budget,
    Decision,
    LearningAgent,
    check_params,
    choice,
    number,
    require_moves,
)
from engine.agents.othello.greedy import GreedyAgent
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


MEMORY_KIND = "weightgrid"
GRID_KEY = b"grid"
GRIDS = ("default", "learned")


def load_grid(name: str) -> Grid:
    """The fixed grid a `grid=` setting names; only "default" is fixed ("learned" is memory)."""
    if name == "default":
        return DEFAULT_GRID
    raise ValueError(f"unknown weight grid {name!r}: choose default or learned")


def zero_grid() -> Grid:
    """The grid a new game starts from (the faithful rule resets it)."""
    return np.zeros((8, 8), dtype=np.float64)


def encode_grid(grid: Grid) -> bytes:
    """The memory value of a grid: 64 little-endian float64, a1..h8 (finite values only: a NaN
    stored once would make every capture score NaN, and the first legal move win every time)."""
    flat = np.asarray(grid, dtype="<f8").reshape(64)
    if not np.isfinite(flat).all():
        raise ValueError("a weight grid must hold finite values only")
    return flat.tobytes()


def decode_grid(raw: bytes | None) -> Grid:
    """The 8x8 grid of a memory value (the zero grid for None)."""
    if raw is None:
        return zero_grid()
    flat = np.frombuffer(raw, dtype="<f8")
    if flat.shape[0] != 64:
        raise ValueError(f"a weight grid row holds 64 float64, got {len(raw)} bytes")
    return flat.astype(np.float64).reshape(8, 8)


def grid_update(grid: Grid, final: OthelloState, winner: int | None) -> Grid:
    """The faithful end-of-game update: winner's squares +1, loser's squares -1, draw: none."""
    out = np.array(grid, dtype=np.float64).reshape(64)
    if winner is None:
        return out.reshape(8, 8)
    discs = (final.black, final.white)
    for sq in range(64):
        if discs[winner] >> sq & 1:
            out[sq] += 1.0
        elif discs[1 - winner] >> sq & 1:
            out[sq] -= 1.0
    return out.reshape(8, 8)


def normalised_grid(grid: Grid) -> Grid:
    """The grid divided by its largest absolute weight: values in [-1, 1] (all zero stays 0)."""
    g = np.asarray(grid, dtype=np.float64).reshape(8, 8)
    peak = float(np.abs(g).max())
    return g / peak if peak > 0 else np.zeros((8, 8), dtype=np.float64)


#: Heat-map colours from the lowest fifth of the weights to the highest.
HEAT = ("🟦", "🟩", "🟨", "🟧", "🟥")
#: Under a heat map: what its colours say (rank 8 on top, as the board is drawn).
HEAT_LEGEND = "🟦 squares it learned to avoid … 🟥 squares it learned to want (a1 bottom left)"


def heat_levels(grid: Grid) -> npt.NDArray[np.int64]:
    """Each square's quintile 0..4 among the 64 weights (2 for all when the grid is flat)."""
    g = np.asarray(grid, dtype=np.float64).reshape(64)
    if float(g.max()) == float(g.min()):
        return np.full((8, 8), 2, dtype=np.int64)
    cuts = np.quantile(g, [0.2, 0.4, 0.6, 0.8])
    levels = np.searchsorted(cuts, g, side="left").astype(np.int64)
    return levels.reshape(8, 8)


def render_grid_text(grid: Grid) -> str:
    """8 lines of 8 emoji squares, rank 8 on top, a-h left to right (🟦 low ... 🟥 high)."""
    levels = heat_levels(grid)
    return "\n".join("".join(HEAT[int(v)] for v in levels[rank]) for rank in range(7, -1, -1))


def render_grid_png(grid: Grid, path: str, title: str = "weight grid (normalised)") -> None:
    """Draw the normalised grid as a labelled heat map (rank 8 on top) to a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = normalised_grid(grid)
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    image = ax.imshow(g[::-1], cmap="coolwarm", vmin=-1, vmax=1)
    ax.set_xticks(range(8), list("abcdefgh"))
    ax.set_yticks(range(8), [str(r) for r in range(8, 0, -1)])
    for r in range(8):
        for f in range(8):
            ax.text(f, 7 - r, f"{g[r, f]:+.2f}", ha="center", va="center", fontsize=7)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
    """Weight capture: the move flipping the most grid weight."""
    moves = require_moves(state)
    if moves == [PASS]:
        return PASS, 0.0
    best_move, best = moves[0], capture_score(state, moves[0], grid)
    for move in moves[1:]:
        score = capture_score(state, move, grid)
        if score > best:  # strict: the first maximum in a1..h8 order wins ties
            best_move, best = move, score
    return best_move, best


PARAMS = (
    number("capture_share", 0, 1, "the share of moves played by the grid (else greedy)"),
    choice("grid", GRIDS, "the fixed positional grid, or the grid learned from games"),
    MEMORY,
)


class WeightGridAgent(LearningAgent):
    """Weight-capture on `capture_share` of the moves, greedy-random on the others."""

    memory_kind = MEMORY_KIND
    #: One `learn` call per game (the update covers both colours); see the module docstring.
    learn_whole_game = True

    def __init__(
        self, capture_share: float = 0.2, grid: str | None = None, memory: str | None = None
    ) -> None:
        if grid is None:
            grid = "learned" if memory is not None else "default"
        check_params(PARAMS, "weightgrid", capture_share=capture_share, grid=grid)
        if memory is not None:
            check_params(PARAMS, "weightgrid", memory=memory)
        self.capture_share = capture_share
        self.grid_name = grid
        self.memory_name = memory or "default"
        self.learned = grid == "learned"
        self.grid = zero_grid() if self.learned else load_grid(grid)
        self._raw: bytes | None = None
        self._rows: Mapping[bytes, bytes] = {}
        self.greedy = GreedyAgent("random")

    def memory_keys(self, state: GameState) -> list[bytes]:
        return [GRID_KEY] if self.learned else []

    def use_memory(self, rows: Mapping[bytes, bytes]) -> None:
        """Keep a reference to the rows: a later change of the grid row is seen on the next move."""
        self._rows = rows
        self._refresh()

    def _refresh(self) -> None:
        if not self.learned:
            return
        raw = self._rows.get(GRID_KEY)
        if raw is not self._raw:  # a new row object: decode once (None: the zero grid)
            self.grid, self._raw = decode_grid(raw), raw

    def learn_keys(self, states: list[GameState], moves: list[Move], seat: int) -> list[bytes]:
        return [GRID_KEY] if self.learned else []

    def memory_format(self, start: GameState) -> str:
        return "key b'grid': 64 x float64 (<f8), a1..h8"

    def shown_keys(self) -> list[bytes]:
        return [GRID_KEY]

    def show_memory(self, rows: Mapping[bytes, bytes]) -> list[str]:
        """The learned grid as an emoji heat map, and what its colours say (none without one)."""
        raw = rows.get(GRID_KEY)
        return [] if raw is None else [render_grid_text(decode_grid(raw)), HEAT_LEGEND]

    def learn(
        self,
        states: list[GameState],
        moves: list[Move],
        seat: int,
        result: float,
        rows: Mapping[bytes, bytes],
    ) -> dict[bytes, bytes]:
        """The grid after the update from the final position (nothing for a fixed grid)."""
        if not self.learned or not moves:
            return {}
        final = states[len(moves) - 1].play(moves[-1])
        if not isinstance(final, OthelloState):
            raise TypeError("the weight-grid strategy plays Othello only")
        winner = None if result == 0.5 else seat if result == 1.0 else 1 - seat
        return {GRID_KEY: encode_grid(grid_update(decode_grid(rows.get(GRID_KEY)), final, winner))}

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        if not isinstance(state, OthelloState):
            raise TypeError("the weight-grid strategy plays Othello only")
        self._refresh()
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
        "mostly flips as many discs as it can; one move in five it takes the discs worth "
        "most on a grid of square values (a fixed grid, or one it learned from its games)",
        WeightGridAgent,
        params=PARAMS,
    )
]
