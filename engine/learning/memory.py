"""Where memories live: the `MemoryBackend` protocol, a dict backend, and `MemorySession`.

The engine never touches SQLite: the `train` tool hands the runner a backend over
`db.store.Store` (tools/train_cli.py), tests an `InMemoryBackend`. `MemorySession` is the
memory of learning agents playing outside training (`match`, `serve`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.agents.base import Agent, LearningAgent
from engine.games.base import GameState, Move
from engine.learning.rule import apply_learning, learning_seats, replay

MemoryId = tuple[str, str]  # (kind, name)


class MemoryBackend(Protocol):
    """Where memories live between runs (the CLI's adapter wraps `db.store.Store`)."""

    def load(self, kind: str, name: str) -> tuple[dict[bytes, bytes], int]:
        """Every row of memory (kind, name) and its games_trained (({}, 0) if new)."""
        ...

    def save(
        self,
        kind: str,
        name: str,
        rows: Mapping[bytes, bytes],
        games_delta: int,
        meta: Mapping[str, Any] | None,
    ) -> None:
        """Upsert `rows`, add `games_delta` to games_trained, replace meta (None: keep it), all
        in one transaction."""
        ...


@dataclass
class InMemoryBackend:
    """A `MemoryBackend` in a dict (tests, and training without a database)."""

    memories: dict[MemoryId, dict[bytes, bytes]] = field(default_factory=dict)
    games: dict[MemoryId, int] = field(default_factory=dict)
    meta: dict[MemoryId, dict[str, Any]] = field(default_factory=dict)
    saves: int = 0

    def load(self, kind: str, name: str) -> tuple[dict[bytes, bytes], int]:
        return dict(self.memories.get((kind, name), {})), self.games.get((kind, name), 0)

    def save(
        self,
        kind: str,
        name: str,
        rows: Mapping[bytes, bytes],
        games_delta: int,
        meta: Mapping[str, Any] | None,
    ) -> None:
        self.memories.setdefault((kind, name), {}).update(rows)
        self.games[(kind, name)] = self.games.get((kind, name), 0) + games_delta
        if meta is not None:
            self.meta[(kind, name)] = dict(meta)
        self.saves += 1


class MemorySession:
    """Memories of learning agents playing outside training (`match`, `serve`).

    `attach` loads an agent's memory once (agents of the same kind and name share it) and hands
    it over with `use_memory`; `after_game` applies `learn` for every learning seat and saves the
    changed rows of each memory in one backend call (one transaction) per game.
    """

    def __init__(self, backend: MemoryBackend) -> None:
        self.backend = backend
        self.memories: dict[MemoryId, dict[bytes, bytes]] = {}

    def attach(self, agent: Agent) -> None:
        if not isinstance(agent, LearningAgent):
            return
        key = (agent.memory_kind, agent.memory_name)
        if key not in self.memories:
            self.memories[key] = self.backend.load(*key)[0]
        agent.use_memory(self.memories[key])

    def after_game(
        self,
        start: GameState,
        moves: Sequence[Move],
        seats: tuple[Agent, Agent],
        winner: int | None,
    ) -> dict[MemoryId, int]:
        """Learn from a finished game and save; the number of rows written per memory."""
        states = replay(start, (), moves)
        groups: dict[MemoryId, list[tuple[LearningAgent, int]]] = {}
        for seat, agent in enumerate(seats):
            if isinstance(agent, LearningAgent):
                groups.setdefault((agent.memory_kind, agent.memory_name), []).append((agent, seat))
        written = {}
        for key, members in groups.items():
            if self.memories.get(key) is None:
                self.attach(members[0][0])
            memory = self.memories[key]
            learners = learning_seats(members[0][0], [seat for _, seat in members])
            changed: dict[bytes, bytes] = {}
            for agent, seat in members:
                if seat in learners:  # each seat learns with its own agent's settings
                    changed.update(
                        apply_learning(agent, memory, states, list(moves), winner, [seat])
                    )
            self.backend.save(key[0], key[1], changed, 1, None)
            written[key] = len(changed)
        return written
