"""One training game: `line_up` seats the learner, `play_and_learn` plays it and learns.

Both the `train` CLI's workers and the bot's `/train` batches play their games through
`play_and_learn` (on `engine.play.play_game`). The CLI's workers pass no memory: their parent
learns every round's games in game order (tools/training/runner.py), so a run's result does not
depend on which worker played which game.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from engine.agents.base import Agent, Budget, LearningAgent
from engine.games.base import GameState, Player
from engine.learning.rule import apply_learning
from engine.play import GameRecord, play_game


def line_up(
    learner: Agent,
    opponent: Agent | None,
    learner_seat: Player,
    budget: Budget,
    opponent_budget: Budget,
) -> tuple[tuple[Agent, Agent], tuple[Budget, Budget]]:
    """The agents and budgets of seats 0 and 1: the learner on both (self-play, `opponent` None)
    or on `learner_seat`."""
    if opponent is None:
        return (learner, learner), (budget, budget)
    if learner_seat == 0:
        return (learner, opponent), (budget, opponent_budget)
    return (opponent, learner), (opponent_budget, budget)


def play_and_learn(
    start: GameState,
    agents: tuple[Agent, Agent],
    budgets: tuple[Budget, Budget],
    rng: random.Random,
    learner: LearningAgent | None = None,
    memory: dict[bytes, bytes] | None = None,
    seats: Sequence[Player] = (),
) -> tuple[GameRecord, dict[bytes, bytes]]:
    """Play a game from `start`; with a `learner` and its `memory`, the learner plays from the
    memory and, once the game is over, its `seats` learn into it (updated in place).

    Returns the game and the rows learning changed (none when only playing).
    """
    if learner is None or memory is None:
        return play_game(start, agents, budgets, rng), {}
    learner.use_memory(memory)  # by reference: the next game sees this one's rows
    states = [start]
    record = play_game(start, agents, budgets, rng, lambda state, _: states.append(state))
    assert record.outcome is not None
    states.pop()  # the final position: no move is played from it
    changed = apply_learning(learner, memory, states, record.moves, record.outcome.winner, seats)
    return record, changed
