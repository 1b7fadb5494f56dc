"""The `random` agent, every game: a uniformly random legal move, the floor every other agent
is measured against."""

from __future__ import annotations

import random

from engine.agents.base import Agent, AgentInfo, Budget, Decision, require_moves
from engine.games.base import GameState
from engine.games.catalog import GAMES


class RandomAgent(Agent):
    """A uniformly random legal move."""

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        return Decision(move=rng.choice(require_moves(state)))


AGENT_INFOS = [
    AgentInfo(
        "random",
        GAMES,
        "plays any legal move at random: the easiest opponent there is",
        RandomAgent,
    ),
]
