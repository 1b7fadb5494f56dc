"""The learning rule every runner applies after a game (training, `match`, the lobby).

Which seats learn (`learning_seats`), with what result (`seat_result`), on which rows
(`apply_learning`), from the states a game went through (`replay`). The CLI trainer, the bot's
`/train` batches, the lobby's match learning and `MemorySession` all call these, so a memory
learns the same way whoever runs the game.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.agents.base import LearningAgent
from engine.games.base import GameState, Move, Player


def seat_result(winner: Player | None, seat: Player) -> float:
    """1 won, 0.5 drawn, 0 lost for `seat`: `Outcome.result_for` for a game known only by its
    winner (a match lost on time or by resignation has no board `Outcome`)."""
    if winner is None:
        return 0.5
    return 1.0 if winner == seat else 0.0


def learning_seats(agent: LearningAgent, seats: Sequence[Player]) -> list[Player]:
    """Which of `seats` (the seats one memory's agent held in a game) run `learn`: each one, or
    only the first when it held both and its update covers the whole game (`learn_whole_game`,
    the weight grid)."""
    if len(seats) == 2 and agent.learn_whole_game:
        return [seats[0]]
    return list(seats)


def apply_learning(
    agent: LearningAgent,
    memory: dict[bytes, bytes],
    states: list[GameState],
    moves: list[Move],
    winner: Player | None,
    seats: Iterable[Player],
) -> dict[bytes, bytes]:
    """Run the contract's learn for `seats` on `memory` (updated in place, so a later seat sees
    an earlier seat's rows); the changed rows."""
    changed: dict[bytes, bytes] = {}
    for seat in seats:
        keys = agent.learn_keys(states, moves, seat)
        rows = {k: memory[k] for k in keys if k in memory}
        new = agent.learn(states, moves, seat, seat_result(winner, seat), rows)
        memory.update(new)
        changed.update(new)
    return changed


def replay(start: GameState, opening: Iterable[Move], moves: Sequence[Move]) -> list[GameState]:
    """The states before each of `moves`, after playing `opening` from `start`."""
    state = start
    for m in opening:
        state = state.play(m)
    states = []
    for m in moves:
        states.append(state)
        state = state.play(m)
    return states
