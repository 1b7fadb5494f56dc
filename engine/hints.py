"""A hint for the player to move: the best move the strongest agent finds and, where a solver
proves it, what it leads to ("you win with your 6th move from now"). What a game's solver
proves is the game's own (its kit: `engine/kits.py`). Runs in a pool worker."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Protocol, cast

from engine.agents import registry
from engine.agents.base import Budget
from engine.games.base import GameState
from engine.kits import kit


@dataclass(frozen=True, slots=True)
class Hint:
    move: str  # as the player types it: a column, a square
    outcome: str  # what it leads to, in plain words
    exact: bool  # proven by a solver, or the choice of a search


class HintKit(Protocol):
    """What a game's kit provides for hints (engine/kits.py)."""

    def solved_hint(self, state: GameState, seconds: float) -> tuple[str, str] | None:
        """A move and what it leads to, proven by a solver within `seconds`; None if the
        game has no such solver or it did not finish."""
        ...

    def solve_to_end(self, state: GameState) -> bool:
        """Whether the strongest agent solves this position to the end, whatever the time."""
        ...


def hint(state: GameState, seconds: float = 1.5) -> Hint:
    """The best move for the side to move, found within about `seconds`."""
    if state.is_over():
        raise ValueError("the game is over: there is no move to hint")
    t0 = time.perf_counter()
    game_kit = cast(HintKit, kit(state.game))
    solved = game_kit.solved_hint(state, seconds / 2)
    if solved is not None:
        return Hint(*solved, True)
    level = registry.LEVELS[state.game]["expert"]
    left = max(0.1, seconds - (time.perf_counter() - t0))
    budget = Budget(depth=level.budget.depth, nodes=level.budget.nodes, time=left)
    if game_kit.solve_to_end(state):
        # Exact regardless of the clock: a first call pays the kernels' compile inside any
        # time budget, and a hint this near the end must not depend on how busy the host is.
        budget = Budget()
    agent = registry.build(level.spec, state.game)
    decision = agent.choose(state, budget, random.Random(0))
    move = state.move_to_str(decision.move)
    if decision.info.get("exact") and decision.score is not None:  # Othello's endgame solver
        discs = int(decision.score)
        words = (
            f"you win by {discs} discs"
            if discs > 0
            else "a draw with the best play on both sides"
            if discs == 0
            else f"you lose by {-discs} discs against perfect play, the least you can"
        )
        return Hint(move, words, True)
    return Hint(move, "the best move a deep search finds, not proven to the end", False)
