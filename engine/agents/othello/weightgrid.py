"""The weight-grid agent `weightgrid` for Othello: plays the move that captures the most grid
weight, with a grid that is fixed or learned from games. The rules, the learning modes
(`rule=seed`, the seed's own update, and `rule=regression`) and their curves: docs/learning.md,
"The weight grid (seed 001)"."""

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
from engine.games.othkernels import flips, legal_mask

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
#: How a learned grid learns from a game: the seed's end-of-game update, or the regression.
RULES = ("seed", "regression")
#: The regression's running sums (`rule=regression` only): see `RegressionSums`.
SUMS_KEY = b"regression"
#: What a move is worth on the grid: the weights of the discs it flips (the seed's capture
#: score), or those and the weight of the square it is played on (corners count, X-squares
#: cost: the Othello easy level).
SCORES = ("flips", "move")
#: Among moves worth as much: the first in a1..h8 order (the seed's scan), or one at random.
GRID_TIE_BREAKS = ("first", "random")


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


def grid_sum(discs: int, flat: Grid) -> float:
    """The summed weights of the squares of bitboard `discs` on the flat grid, a1 first (one
    order for every caller, so equal sums stay equal to the last bit)."""
    total = 0.0
    while discs:
        low = discs & -discs
        total += float(flat[low.bit_length() - 1])
        discs ^= low
    return total


def _symmetry_classes() -> tuple[int, ...]:
    """For each square a1..h8, its class 0..9 under the board's 8 symmetries (rotations and
    reflections): a1 0, b1 1, c1 2, d1 3, b2 4, c2 5, d2 6, c3 7, d3 8, d4 9 (and their images)."""
    classes = [-1] * 64
    reps = 0
    for sq in range(64):
        if classes[sq] >= 0:
            continue
        f, r = sq % 8, sq // 8
        for a, b in ((f, r), (r, f)):
            for x in (a, 7 - a):
                for y in (b, 7 - b):
                    classes[x + 8 * y] = reps
        reps += 1
    return tuple(classes)


SQUARE_CLASS = _symmetry_classes()
N_CLASSES = 10
#: One bitboard per symmetry class: the squares of that class.
CLASS_MASKS = tuple(
    sum(1 << sq for sq in range(64) if SQUARE_CLASS[sq] == c) for c in range(N_CLASSES)
)
#: The stages of a game for the regression's baseline, by discs on the board: 4-13, 14-23,
#: ..., 54-64 (what holding a square is worth changes as the board fills; six stages did
#: better than three, and twelve no better than six: docs/learning.md).
STAGE_DISCS = (14, 24, 34, 44, 54)
N_STAGES = len(STAGE_DISCS) + 1
#: Regression inputs per move: 10 flip features, whether the move is the grid's own choice,
#: then 10 held-square features per stage.
N_FEATURES = N_CLASSES + 1 + N_STAGES * N_CLASSES


def class_counts(bitboard: int) -> list[int]:
    """How many squares of `bitboard` fall in each symmetry class."""
    return [(bitboard & mask).bit_count() for mask in CLASS_MASKS]


def move_features(state: OthelloState, move: Move, grid: Grid) -> list[float]:
    """The regression's inputs for `move` in `state` (the mover's view), `N_FEATURES` numbers.

    First 10: per symmetry class, the discs `move` flips minus the average over the legal moves
    (what this move flips that the others would not: the choice the capture strategy makes).
    Then 1 if `move` is the one weight capture on `grid` would play, else 0: the moves the grid
    chose itself would otherwise lend their overall success or failure to whatever the grid
    already prefers, and the fit would drift with the grid's own habits (docs/learning.md).
    Then 10 per stage of the game, zero but for the stage `state` is in: per class, the squares
    the mover holds minus those the opponent holds before the move (how good the position
    already was, so that a move is not credited for it; by stage, because what owning a square
    is worth changes as the board fills).
    """
    # The kernels straight away: `state.flips` re-checks legality on every call, and this runs
    # for every legal move of every position of every game learned.
    me, opp = np.uint64(state.me), np.uint64(state.opp)
    mask = int(legal_mask(me, opp))
    if not mask >> move & 1:
        raise ValueError(f"move {move} is not legal in this position")
    flat = grid.reshape(64)
    total = [0] * N_CLASSES
    played: list[int] = []
    n = 0
    best_move, best = -1, 0.0
    while mask:
        low = mask & -mask
        square = low.bit_length() - 1
        flipped = int(flips(me, opp, square))
        counts = class_counts(flipped)
        total = [t + c for t, c in zip(total, counts, strict=True)]
        if square == move:
            played = counts
        score = grid_sum(flipped, flat)
        if best_move < 0 or score > best:  # as `weight_capture_move`: the first maximum
            best_move, best = square, score
        n += 1
        mask ^= low
    chosen = [p - t / n for p, t in zip(played, total, strict=True)]
    held = [a - b for a, b in zip(class_counts(state.me), class_counts(state.opp), strict=True)]
    discs = (state.black | state.white).bit_count()
    stage = sum(discs >= limit for limit in STAGE_DISCS)
    stages = [0.0] * (N_STAGES * N_CLASSES)
    stages[stage * N_CLASSES : (stage + 1) * N_CLASSES] = [float(h) for h in held]
    return [*chosen, float(best_move == move), *stages]


def game_regression_data(
    states: list[GameState], moves: list[Move], seat: int, result: float, grid: Grid
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Every move of a game (both sides, passes left out) as a row of `move_features` on
    `grid`, and its target: the game result for the side that moved (win +1, draw 0, loss -1)."""
    rows: list[list[float]] = []
    targets: list[float] = []
    seat_target = 2.0 * result - 1.0
    for state, move in zip(states, moves, strict=True):
        if move == PASS:
            continue
        if not isinstance(state, OthelloState):
            raise TypeError("the weight-grid strategy plays Othello only")
        rows.append(move_features(state, move, grid))
        targets.append(seat_target if state.side == seat else -seat_target)
    x = np.array(rows, dtype=np.float64).reshape(len(rows), N_FEATURES)
    return x, np.array(targets, dtype=np.float64)


class RegressionSums:
    """The least-squares sums of `rule=regression`: `xtx` = I + sum of x x^T, `xty` = sum of
    x y over every move learned so far (the identity is a small ridge prior, so the fit exists
    from the first game). Stored as one memory row: 5112 little-endian float64, `xtx` row by
    row then `xty`."""

    SIZE = N_FEATURES * N_FEATURES + N_FEATURES

    def __init__(self, xtx: npt.NDArray[np.float64], xty: npt.NDArray[np.float64]) -> None:
        self.xtx = xtx
        self.xty = xty

    @classmethod
    def decode(cls, raw: bytes | None) -> RegressionSums:
        """The sums of a memory row (the prior alone for None)."""
        if raw is None:
            return cls(np.eye(N_FEATURES), np.zeros(N_FEATURES))
        flat = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        if flat.shape[0] != cls.SIZE:
            raise ValueError(f"regression sums hold {cls.SIZE} float64, got {len(raw)} bytes")
        n2 = N_FEATURES * N_FEATURES
        return cls(flat[:n2].reshape(N_FEATURES, N_FEATURES).copy(), flat[n2:].copy())

    def encode(self) -> bytes:
        flat = np.concatenate([self.xtx.reshape(-1), self.xty]).astype("<f8")
        if not np.isfinite(flat).all():
            raise ValueError("regression sums must be finite")
        return flat.tobytes()

    def add(self, x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None:
        self.xtx += x.T @ x
        self.xty += x.T @ y

    def grid(self) -> Grid:
        """The capture grid: each square gets the fitted weight of flipping a disc of its class
        (the held-square weights are only there to take the position's merit out of the fit)."""
        coef = np.linalg.solve(self.xtx, self.xty)
        return np.array([coef[c] for c in SQUARE_CLASS], dtype=np.float64).reshape(8, 8)


def capture_score(state: OthelloState, move: Move, grid: Grid, score: str = "flips") -> float:
    """Sum of the grid weights of the discs `move` would flip, and with `score="move"` of the
    square it is played on too (0 for PASS)."""
    flat = grid.reshape(64)
    total = grid_sum(state.flips(move), flat)
    if score == "move" and move != PASS:
        total += float(flat[move])
    return total


def weight_capture_move(
    state: OthelloState, grid: Grid, score: str = "flips", rng: random.Random | None = None
) -> tuple[Move, float]:
    """Weight capture: the move with the largest `capture_score`. Ties go to the first in
    a1..h8 order, or to one drawn by `rng` when it is given."""
    moves = require_moves(state)
    if moves == [PASS]:
        return PASS, 0.0
    values = [capture_score(state, move, grid, score) for move in moves]
    best = max(values)
    tied = [move for move, value in zip(moves, values, strict=True) if value == best]
    return (tied[0] if rng is None else rng.choice(tied)), best


PARAMS = (
    number("capture_share", 0, 1, "the share of moves played by the grid (else greedy)"),
    choice("grid", GRIDS, "the fixed positional grid, or the grid learned from games"),
    choice(
        "score",
        SCORES,
        "what a move is worth on the grid: the discs it flips (flips), or those and the square "
        "it is played on (move)",
    ),
    choice(
        "tie_break",
        GRID_TIE_BREAKS,
        "which of several moves worth as much it plays: the first from a1, or one at random",
    ),
    choice(
        "rule",
        RULES,
        "how the learned grid learns: seed (+1 on the squares the winner ends with, -1 on the "
        "loser's) or regression (from every move of its games, which discs are worth flipping)",
    ),
    MEMORY,
)


class WeightGridAgent(LearningAgent):
    """Weight-capture on `capture_share` of the moves, greedy-random on the others; `score`
    and `tie_break` say how the capture move is chosen (`weight_capture_move`)."""

    memory_kind = MEMORY_KIND
    #: One `learn` call per game (the update covers both colours); see the module docstring.
    learn_whole_game = True

    def __init__(
        self,
        capture_share: float = 0.2,
        grid: str | None = None,
        memory: str | None = None,
        rule: str = "seed",
        score: str = "flips",
        tie_break: str = "first",
    ) -> None:
        if grid is None:
            grid = "learned" if memory is not None else "default"
        check_params(
            PARAMS,
            "weightgrid",
            capture_share=capture_share,
            grid=grid,
            rule=rule,
            score=score,
            tie_break=tie_break,
        )
        if memory is not None:
            check_params(PARAMS, "weightgrid", memory=memory)
        self.capture_share = capture_share
        self.rule = rule
        self.score = score
        self.tie_break = tie_break
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
        if not self.learned:
            return []
        return [GRID_KEY, SUMS_KEY] if self.rule == "regression" else [GRID_KEY]

    def memory_format(self, start: GameState) -> str:
        grid = "key b'grid': 64 x float64 (<f8), a1..h8"
        if self.rule == "regression":
            return grid + "; key b'regression': 5112 x float64 (<f8), least-squares sums"
        return grid

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
        """The grid after the update from this game (nothing for a fixed grid). `rule=seed`:
        from the final position; `rule=regression`: from every move (and the sums row)."""
        if not self.learned or not moves:
            return {}
        if self.rule == "regression":
            sums = RegressionSums.decode(rows.get(SUMS_KEY))
            grid = decode_grid(rows.get(GRID_KEY))  # the grid the agent plays now
            sums.add(*game_regression_data(states, moves, seat, result, grid))
            return {GRID_KEY: encode_grid(sums.grid()), SUMS_KEY: sums.encode()}
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
            ties = rng if self.tie_break == "random" else None
            move, score = weight_capture_move(state, self.grid, self.score, ties)
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
