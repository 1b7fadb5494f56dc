"""The `solver` agent: every column keeping the solved score of the position (the solver's
exact search, `engine.agents.connect4.solver`), one picked at random."""

from __future__ import annotations

import random
import time

from engine.agents.base import Agent, AgentInfo, Budget, Decision, require_moves
from engine.agents.connect4.solver import (
    BudgetExceeded,
    SearchCounter,
    best_moves,
    non_losing_moves,
)
from engine.games.base import GameState
from engine.games.connect4 import Connect4State


class SolverAgent(Agent):
    """Plays a perfect move: every column keeping the solved score, one picked at random.

    Without a time budget it thinks as long as the solve takes (minutes on an early board).
    With one, an unfinished solve falls back to the centre-most move that does not lose at once
    (`info["solved"]` tells which happened); the `perfect` agent is the one for timed play.
    """

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        if not isinstance(state, Connect4State):
            raise TypeError("the solver plays Connect Four only")
        moves = require_moves(state)
        t0 = time.perf_counter()
        try:
            score, best = best_moves(state, max_nodes=budget.nodes, deadline=budget.deadline(t0))
        except BudgetExceeded:
            safe = non_losing_moves(state)
            move = min(safe, key=lambda c: abs(2 * c - (state.cols - 1)))
            return Decision(
                move=move, nodes=SearchCounter.last_nodes, info={"solved": False, "moves": moves}
            )
        return Decision(
            move=rng.choice(best),
            score=score,
            nodes=SearchCounter.last_nodes,
            seconds=time.perf_counter() - t0,
            info={"solved": True, "best": best},
        )


AGENT_INFOS = [
    AgentInfo(
        "solver",
        ("connect4",),
        "solves the game to the end and plays a perfect move (four in a row); early in a game "
        "that can take minutes, so with a time limit it may fall back to a safe central move",
        SolverAgent,
    ),
]
