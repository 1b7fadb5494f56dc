"""The agent interface: a state, a budget and a seeded RNG in; a move and what was learned out.

Agents are plain objects built from an `AgentSpec` (a name and parameters), so the spec can cross
into a worker process and the agent is rebuilt there. The deadline lives inside the agent: a
search checks the clock itself (DESIGN.md section 5), the caller never kills a worker.
"""

from __future__ import annotations

import inspect
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.games.base import GameState, Move


@dataclass(frozen=True, slots=True)
class Budget:
    """How much an agent may think. None means 'no limit of this kind'.

    `time` is wall-clock seconds for the whole move, `nodes` a node or simulation cap, `depth` a
    search depth cap. An agent honours every limit it understands and ignores the others.
    """

    time: float | None = None
    nodes: int | None = None
    depth: int | None = None

    def deadline(self, start: float | None = None) -> float | None:
        """The absolute `time.perf_counter()` deadline, or None."""
        if self.time is None:
            return None
        return (time.perf_counter() if start is None else start) + self.time


@dataclass(slots=True)
class Decision:
    """An agent's answer: the move, and what it knows about it (for logs and analysis)."""

    move: Move
    score: float | None = None
    depth: int | None = None
    nodes: int = 0
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """A picklable description of an agent: registry name plus parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))

    def label(self) -> str:
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}[{inner}]"


class Agent(ABC):
    """Base class of every agent. Subclasses implement `choose`."""

    #: Registry name, set by the registry when the agent is built.
    name: str = "agent"

    @abstractmethod
    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        """Pick a legal move for the side to move; `state` must not be finished."""


class LearningAgent(Agent):
    """An agent whose play depends on learned memory kept outside it (in SQLite, via `db/`).

    Memory is a mapping of bytes keys to bytes values, named (kind, name), e.g.
    ("trainer", "default"). The agent stays pure and picklable: whoever runs it (the CLI, the
    lobby, a training loop) loads the rows the agent asks for and hands them over, and after a
    game asks the agent for the updated rows and stores them. That keeps every SQLite write in
    one process and one transaction per finished match or training batch.
    """

    #: The memory kind, e.g. "trainer" or "weightgrid".
    memory_kind: str = ""
    #: Which named memory of that kind this agent uses.
    memory_name: str = "default"

    @abstractmethod
    def memory_keys(self, state: GameState) -> list[bytes]:
        """The memory rows `choose` needs in `state` (may be empty)."""

    @abstractmethod
    def use_memory(self, rows: Mapping[bytes, bytes]) -> None:
        """Rows for the next `choose` calls (missing keys mean "never seen")."""

    @abstractmethod
    def learn(
        self,
        states: list[GameState],
        moves: list[Move],
        seat: int,
        result: float,
        rows: Mapping[bytes, bytes],
    ) -> dict[bytes, bytes]:
        """The rows to store after a finished game this agent played as `seat`.

        `states[i]` is the position before `moves[i]`; `result` is 1, 0.5 or 0 for the agent.
        `rows` holds the current values of `learn_keys(...)`; the result is the new values.
        """

    @abstractmethod
    def learn_keys(self, states: list[GameState], moves: list[Move], seat: int) -> list[bytes]:
        """The rows `learn` reads for that game."""


def require_moves(state: GameState) -> list[Move]:
    """The legal moves, or a ValueError if the game is over (agents cannot move then)."""
    moves = state.legal_moves()
    if not moves:
        raise ValueError("the game is over: there is no move to choose")
    return moves


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """A registry entry: how to build the agent and what to tell people about it."""

    name: str
    games: tuple[str, ...]
    description: str
    factory: Callable[..., Agent]
    defaults: dict[str, Any] = field(default_factory=dict)
    budget: Budget = Budget()

    def parameters(self) -> list[str]:
        return [
            p.name
            for p in inspect.signature(self.factory).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]


@dataclass(frozen=True, slots=True)
class Level:
    """A difficulty level: an agent spec and budget, with why it sits where it does."""

    game: str
    name: str
    spec: AgentSpec
    budget: Budget
    description: str
