"""How hard a puzzle is, for its starting rating: how far off the win or the end it is, how many
moves there are to choose from, and which of three searches of growing depth miss its answer
(a beginner's one-move search, the medium level and a deeper search: what a beginner, a casual
player and a club player would see). Othello's beginner here is the player flipping the most
discs, not the easy level: the shipped puzzles' ratings are computed with it."""

from __future__ import annotations

import random

from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget
from engine.games.base import GameState
from engine.puzzles.proof import clamp_rating

#: The searches a puzzle is tried on, weakest first. Depths, not clocks: the same rating on any
#: machine.
SEARCHES: dict[str, tuple[tuple[AgentSpec, Budget], ...]] = {
    "connect4": (
        (AgentSpec("onestep"), Budget()),
        (AgentSpec("minimax", {"eval": "checkers"}), Budget(depth=3)),
        (AgentSpec("minimax", {"eval": "checkers"}), Budget(depth=6)),
    ),
    "othello": (
        (AgentSpec("greedy-random", {"tie_break": "first"}), Budget()),
        (AgentSpec("minimax", {"eval": "standard"}), Budget(depth=2)),
        (AgentSpec("minimax", {"eval": "standard"}), Budget(depth=4)),
    ),
}
#: Rating points a missed search adds.
MISS = 3.0

_AGENTS: dict[tuple[str, int], Agent] = {}


def misses(state: GameState, answer: str) -> int:
    """How many of the game's searches choose another move than `answer` (0..3)."""
    count = 0
    for i, (spec, budget) in enumerate(SEARCHES[state.game]):
        agent = _AGENTS.get((state.game, i))
        if agent is None:
            agent = _AGENTS[state.game, i] = registry.build(spec, state.game)
        move = agent.choose(state, budget, random.Random(0)).move
        count += state.move_to_str(move) != answer
    return count


def rating(base: float, missed: int) -> float:
    """The starting rating: the game's own measure of the position's difficulty (`base`) and
    the searches that missed the answer."""
    return clamp_rating(base + MISS * missed)
