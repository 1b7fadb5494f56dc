"""The `train` CLI's games on worker processes, each with a replica of the memory.

A worker gets the whole memory once, then with every round the rows changed since it last heard
from the parent; it plays its share of the round's `TrainGame`s and sends back `PlayedGame`s
(opening, moves, winner). With one worker the games are played in this process on the live
memory. Learning happens in the parent only (tools/training/runner.py).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, LearningAgent
from engine.games import new_game
from engine.games.base import Move
from engine.learning.selfplay import line_up, play_and_learn
from engine.play import random_opening_moves
from tools.pool import worker


@dataclass(frozen=True, slots=True)
class TrainGame:
    """One game to play: the learner's seat (None: self-play), opening and RNG seeds."""

    index: int
    learner: AgentSpec
    opponent: AgentSpec | None
    opponent_budget: Budget
    learner_seat: int | None
    opening_seed: str
    rng_seed: str
    opening_plies: int
    #: The opponent is the learner itself with other settings (``self:exploration=0``): it
    #: plays with the learned memory and both seats learn.
    self_opponent: bool = False


@dataclass(frozen=True, slots=True)
class PlayedGame:
    """A finished game as the parent needs it: the opening, the agents' moves, the winner."""

    index: int
    opening: tuple[Move, ...]
    moves: tuple[Move, ...]
    winner: int | None


class _Player:
    """Builds and caches agents in one process; learners see `replica`, opponents nothing."""

    def __init__(self, game: str, variant: str | None, replica: Mapping[bytes, bytes]) -> None:
        self.game = game
        self.variant = variant
        self.replica = replica
        self.agents: dict[tuple[AgentSpec, bool], Agent] = {}
        self.empty: dict[bytes, bytes] = {}

    def agent(self, spec: AgentSpec, learner: bool) -> Agent:
        agent = self.agents.get((spec, learner))  # the learner and its untrained self differ
        if agent is None:
            agent = self.agents[(spec, learner)] = registry.build(spec, self.game)
        if isinstance(agent, LearningAgent):
            agent.use_memory(self.replica if learner else self.empty)
        return agent

    def play(self, task: TrainGame) -> PlayedGame:
        start = new_game(self.game, self.variant)
        state, opening = random_opening_moves(
            start, task.opening_plies, random.Random(task.opening_seed)
        )
        learner = self.agent(task.learner, True)
        other = None if task.opponent is None else self.agent(task.opponent, task.self_opponent)
        seat = 0 if task.learner_seat is None else task.learner_seat
        agents, budgets = line_up(learner, other, seat, Budget(), task.opponent_budget)
        record, _ = play_and_learn(state, agents, budgets, random.Random(task.rng_seed))
        assert record.outcome is not None
        return PlayedGame(task.index, opening, tuple(record.moves), record.outcome.winner)


def _worker_main(
    conn: Connection, game: str, variant: str | None, snapshot: dict[bytes, bytes]
) -> None:
    """A worker process: apply each round's row delta to the replica, play, send the games."""
    player = _Player(game, variant, snapshot)
    replica = snapshot
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone (killed): nothing left to do
            return
        if message is None:
            break
        delta, tasks = message
        replica.update(delta)
        conn.send([player.play(task) for task in tasks])
    conn.close()


class Workers:
    """`n` worker processes with memory replicas, or this process when n <= 1."""

    def __init__(self, game: str, variant: str | None, n: int, memory: dict[bytes, bytes]) -> None:
        self.n = max(1, n)
        self.local: _Player | None = None
        self.queued: list[TrainGame] = []
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        if self.n == 1:
            self.local = _Player(game, variant, memory)  # the live memory: never stale
            return
        for _ in range(self.n):
            parent, proc = worker(_worker_main, game, variant, dict(memory))
            self.conns.append(parent)
            self.procs.append(proc)

    def submit(self, tasks: Sequence[TrainGame], delta: Mapping[bytes, bytes]) -> None:
        """Start `tasks` (split across the workers) after sending them the rows in `delta`."""
        if self.local is not None:
            self.queued = list(tasks)
            return
        shares = [list(tasks[i :: self.n]) for i in range(self.n)]
        payload = dict(delta)
        for conn, share in zip(self.conns, shares, strict=True):
            conn.send((payload, share))

    def collect(self) -> list[PlayedGame]:
        """The games of the last `submit`, in task order."""
        if self.local is not None:
            tasks, self.queued = self.queued, []
            return [self.local.play(t) for t in tasks]
        out: list[PlayedGame] = []
        for conn in self.conns:
            out.extend(conn.recv())
        return sorted(out, key=lambda g: g.index)

    def run(self, tasks: Sequence[TrainGame], delta: Mapping[bytes, bytes]) -> list[PlayedGame]:
        self.submit(tasks, delta)
        return self.collect()

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self.conns, self.procs = [], []
