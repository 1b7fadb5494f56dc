"""A tiny fake learning agent (`counting`: it counts games per position) for the tests.

It pins the lobby's learning contract down without depending on the real agents; conftest's
``counting`` fixture registers it for a test.  Workers import it too (``register_counting``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from engine.agents import registry
from engine.agents.base import AgentInfo, Budget, Decision, LearningAgent
from engine.games.base import GameState, Move

KIND = "counting"


def pos_key(state: GameState) -> bytes:
    return b"seen:" + repr(state.key()).encode()


class CountingLearner(LearningAgent):
    """Plays the column in its `prefer` row if legal, else the leftmost; learns game counts.

    Memory: b"games" (games learned), b"score" (sum of results x2), and one b"seen:<pos>"
    row per position it moved in, counting how often.
    """

    memory_kind = KIND

    def __init__(self, memory: str = "default", crash: bool = False) -> None:
        self.memory_name = memory
        self.crash = crash
        self.rows: dict[bytes, bytes] = {}

    def memory_keys(self, state: GameState) -> list[bytes]:
        return [b"prefer", pos_key(state)]

    def use_memory(self, rows: Mapping[bytes, bytes]) -> None:
        self.rows = dict(rows)

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        legal = state.legal_moves()
        prefer = self.rows.get(b"prefer")
        move = int(prefer) if prefer is not None and int(prefer) in legal else legal[0]
        return Decision(move, info={"rows": sorted(self.rows)})

    def learn_keys(self, states: list[GameState], moves: list[Move], seat: int) -> list[bytes]:
        return [b"games", b"score"] + [pos_key(s) for s in states if s.to_move() == seat]

    def learn(
        self,
        states: list[GameState],
        moves: list[Move],
        seat: int,
        result: float,
        rows: Mapping[bytes, bytes],
    ) -> dict[bytes, bytes]:
        if self.crash:
            raise RuntimeError("learn crashed on purpose")

        def bump(key: bytes, by: int) -> None:
            out[key] = str(int(out.get(key, rows.get(key, b"0"))) + by).encode()

        out: dict[bytes, bytes] = {}
        bump(b"games", 1)
        bump(b"score", int(2 * result))
        for s in states:
            if s.to_move() == seat:
                bump(pos_key(s), 1)
        return out


INFO = AgentInfo(
    KIND,
    ("connect4", "othello"),
    "test agent: counts games per position",
    CountingLearner,
)


def register_counting() -> None:
    """Register the fake agent (also called inside a worker process through the pool)."""
    if KIND not in registry.AGENTS:
        registry.register(INFO)
