"""The learning agent `trainer` for Connect Four: a weight per (board, column), learned from
the result of each game it plays; unseen boards start from a board value. How it plays and
learns, with the reasons for its scaling: docs/learning.md, "The trainer agent"."""

from __future__ import annotations

import random
import struct
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

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
from engine.agents.connect4.evals import WON_BOARD, opportunities_score
from engine.games import c4kernels as kern
from engine.games.base import GameState, Move
from engine.games.bits import kernel
from engine.games.c4windows import window_array
from engine.games.connect4 import Connect4State

MEMORY_KIND = "trainer"
PRIORS = ("value", "zero")
#: The outcome terms of the reinforcement.
WIN, LOSS, DRAW_FIRST, DRAW_SECOND = 10.0, -10.0, -1.0, 1.0
#: Learning keeps every weight within +-WEIGHT_LIMIT: far beyond any real game's total (a game
#: adds at most lr * (10 + value_scale * value_clip) = 100,100 with the largest parameters), and
#: far below float32's range, so a stored weight is always finite.
WEIGHT_LIMIT = 1e12
_FLOAT32_MAX = 3.4028234663852886e38


@kernel
def keys_kernel(
    current: np.uint64, mask: np.uint64, rows: int, cols: int
) -> tuple[np.uint64, np.uint64]:
    """Pons' key ``current + mask`` of the position and of its mirror image."""
    mc = kern.mirror(current, rows, cols)
    mm = kern.mirror(mask, rows, cols)
    return current + mask, mc + mm


@kernel
def position_info(
    current: np.uint64,
    mask: np.uint64,
    rows: int,
    cols: int,
    k: int,
    wmask: npt.NDArray[np.uint64],
) -> tuple[np.uint64, np.uint64, npt.NDArray[np.int64]]:
    """`keys_kernel` and `after_values` in one call (one numba dispatch per position)."""
    key, mkey = keys_kernel(current, mask, rows, cols)
    return key, mkey, after_values(current, mask, rows, cols, k, wmask)


@kernel
def after_values(
    current: np.uint64,
    mask: np.uint64,
    rows: int,
    cols: int,
    k: int,
    wmask: npt.NDArray[np.uint64],
) -> npt.NDArray[np.int64]:
    """The board value, for the mover, after each column (0 for a full column)."""
    out = np.zeros(cols, dtype=np.int64)
    opp = current ^ mask
    for c in range(cols):
        mv = kern.move_bit(mask, c, rows)
        if mv == 0:
            continue
        own = current | mv
        if kern.is_win(own, rows, k):
            out[c] = WON_BOARD
        else:
            out[c] = opportunities_score(own, opp, wmask)
    return out


def _c4(state: GameState) -> Connect4State:
    if not isinstance(state, Connect4State):
        raise TypeError("the trainer plays Connect Four only")
    return state


class Position(NamedTuple):
    """What the trainer needs of a position: its row key and the board value after each column."""

    key: bytes
    #: The stored row is the mirror image's (weights are kept in mirrored column order).
    mirrored: bool
    #: The position is its own mirror image (column c and cols-1-c are the same move).
    symmetric: bool
    #: The raw board value after each column, for the mover (0 for a full column).
    values: list[int]


@lru_cache(maxsize=16)
def _row_struct(cols: int) -> struct.Struct:
    return struct.Struct(f"<{cols}f")


def position(state: Connect4State) -> Position:
    """The key and board values of `state` (one numba call)."""
    rows, cols, k = state.rows, state.cols, state.k
    raw_key, raw_mkey, values = position_info(
        np.uint64(state.current), np.uint64(state.mask), rows, cols, k, window_array(rows, cols, k)
    )
    key, mkey = int(raw_key), int(raw_mkey)
    nbytes = (cols * (rows + 1) + 7) // 8
    head = bytes((cols, rows, k))
    packed = head + min(key, mkey).to_bytes(nbytes, "little")
    return Position(packed, mkey < key, key == mkey, values.tolist())


def position_key(state: Connect4State) -> tuple[bytes, bool, bool]:
    """(canonical key, stored mirrored?, symmetric?) of a position; see the module docstring."""
    p = position(state)
    return p.key, p.mirrored, p.symmetric


def board_values(state: Connect4State) -> list[int]:
    """The raw board value after each column, for the side to move (0 if full)."""
    return position(state).values


def encode_weights(weights: Sequence[float], mirrored: bool) -> bytes:
    """Row bytes (little-endian float32) of a position's weights given in true column order.

    A weight that is not finite (or beyond float32) is a ValueError: a NaN stored once would
    make every later `max` over that board meaningless.
    """
    w = [float(x) for x in weights]
    if not all(abs(x) <= _FLOAT32_MAX for x in w):  # False for NaN too
        raise ValueError(f"a trainer weight must be finite, got {w}")
    return _row_struct(len(w)).pack(*(w[::-1] if mirrored else w))


def decode_weights(raw: bytes, cols: int, mirrored: bool) -> list[float]:
    """A row's weights in true column order (exactly the stored float32 values)."""
    if len(raw) != 4 * cols:
        raise ValueError(
            f"a trainer row holds {len(raw)} bytes, a {cols}-column board needs {4 * cols}"
        )
    w = list(_row_struct(cols).unpack(raw))
    return w[::-1] if mirrored else w


def candidates(weights: Sequence[float], legal: list[Move], exploration: float) -> list[Move]:
    """The exploration range: legal columns with ``weight >= max(legal) - exploration``."""
    best = max(weights[c] for c in legal)
    return [c for c in legal if weights[c] >= best - exploration]


def outcome_term(result: float, seat: int) -> float:
    """The outcome reinforcement: +10 won, -10 lost, draw -1 for the first player, +1."""
    if result == 1.0:
        return WIN
    if result == 0.0:
        return LOSS
    return DRAW_FIRST if seat == 0 else DRAW_SECOND


PARAMS = (
    # Weights move by about 10 a game: beyond 100 every column is "close enough".
    number("exploration", 0, 100, "plays any column within this much of the best one"),
    choice("prior", PRIORS, "a new board's weights: the board value, or all zero"),
    MEMORY,
    number("lr", 0.001, 10, "learning rate: how far one game moves a weight"),
    number("value_scale", 0, 1, "weight of the board value against the game's result"),
    number("value_clip", 0, WON_BOARD, "the board value is clipped to +- this"),
)


class TrainerAgent(LearningAgent):
    """The trainer: per-board column weights, the exploration range, reinforcement."""

    memory_kind = MEMORY_KIND

    def __init__(
        self,
        exploration: float = 2.0,
        prior: str = "value",
        memory: str = "default",
        lr: float = 1.0,
        value_scale: float = 0.1,
        value_clip: float = 100.0,
    ) -> None:
        check_params(
            PARAMS, "trainer", exploration=exploration, prior=prior, memory=memory, lr=lr,
            value_scale=value_scale, value_clip=value_clip,
        )  # fmt: skip
        self.exploration = float(exploration)
        self.prior = prior
        self.memory_name = memory
        self.lr = float(lr)
        self.value_scale = float(value_scale)
        self.value_clip = float(value_clip)
        self._rows: Mapping[bytes, bytes] = {}

    # -- the weights --------------------------------------------------------------------------

    def scaled(self, value: float) -> float:
        """``value_scale * clip(value, -value_clip, value_clip)``: the prior and the shaping."""
        return self.value_scale * min(max(float(value), -self.value_clip), self.value_clip)

    def prior_weights(self, pos: Position) -> list[float]:
        """The weights of a board never seen before."""
        if self.prior == "zero":
            return [0.0] * len(pos.values)
        return [self.scaled(v) for v in pos.values]

    def weights(self, state: GameState, rows: Mapping[bytes, bytes] | None = None) -> list[float]:
        """The current weights of `state` in true column order (the prior if never seen)."""
        pos = position(_c4(state))
        raw = (self._rows if rows is None else rows).get(pos.key)
        if raw is None:
            return self.prior_weights(pos)
        return decode_weights(raw, len(pos.values), pos.mirrored)

    # -- playing ------------------------------------------------------------------------------

    def memory_keys(self, state: GameState) -> list[bytes]:
        return [position(_c4(state)).key]

    def use_memory(self, rows: Mapping[bytes, bytes]) -> None:
        """Keep a reference (not a copy): a training worker hands over its whole replica."""
        self._rows = rows

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        c4 = _c4(state)
        legal = require_moves(c4)
        pos = position(c4)
        raw = self._rows.get(pos.key)
        w = self.prior_weights(pos) if raw is None else decode_weights(raw, c4.cols, pos.mirrored)
        picks = candidates(w, legal, self.exploration)
        move = picks[0] if len(picks) == 1 else rng.choice(picks)
        return Decision(
            move=move,
            score=w[move],
            depth=1,
            nodes=len(legal),
            info={"seen": raw is not None, "candidates": picks},
        )

    # -- learning -----------------------------------------------------------------------------

    def memory_format(self, start: GameState) -> str:
        cols = _c4(start).cols
        return f"key: canonical position (mirror-merged); value: {cols} x float32 (<f4) weights"

    def learn_keys(self, states: list[GameState], moves: list[Move], seat: int) -> list[bytes]:
        return [position(_c4(s)).key for s in states[: len(moves)] if s.to_move() == seat]

    def learn(
        self,
        states: list[GameState],
        moves: list[Move],
        seat: int,
        result: float,
        rows: Mapping[bytes, bytes],
    ) -> dict[bytes, bytes]:
        """Reinforce every (board, column) `seat` played; see the module docstring."""
        outcome = outcome_term(result, seat)
        out: dict[bytes, bytes] = {}
        for state, move in zip(states, moves, strict=False):
            if state.to_move() != seat:
                continue
            c4 = _c4(state)
            pos = position(c4)
            raw = out.get(pos.key, rows.get(pos.key))
            w = (
                self.prior_weights(pos)
                if raw is None
                else decode_weights(raw, c4.cols, pos.mirrored)
            )
            delta = self.lr * (outcome + self.scaled(pos.values[move]))
            twin = c4.cols - 1 - move
            for col in {move, twin} if pos.symmetric else {move}:
                w[col] = min(max(w[col] + delta, -WEIGHT_LIMIT), WEIGHT_LIMIT)
            out[pos.key] = encode_weights(w, pos.mirrored)
        return out


AGENT_INFOS = [
    AgentInfo(
        "trainer",
        ("connect4",),
        "learns from its own games: remembers how good each column was on every board it has "
        "met and plays the best (trying others now and then); untrained it counts open lines",
        TrainerAgent,
        params=PARAMS,
    )
]
