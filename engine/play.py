"""Playing whole games between agents: the loop behind `match`, `arena` and training."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.agents.base import Agent, Budget, Decision
from engine.games.base import GameState, Move, Outcome


@dataclass(slots=True)
class GameRecord:
    """A finished game: the start, every move with its decision, and the outcome."""

    start: GameState
    moves: list[Move] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    final: GameState | None = None
    outcome: Outcome | None = None


def play_game(
    start: GameState,
    agents: tuple[Agent, Agent],
    budgets: tuple[Budget, Budget],
    rng: random.Random,
    on_move: Callable[[GameState, Decision], None] | None = None,
    chance_rule: bool = False,
) -> GameRecord:
    """Play `agents[0]` (player 0) against `agents[1]` from `start` to the end.

    `chance_rule`, for bot-vs-bot games: when expectiminimax takes its chance line
    (`info["force_random_reply"]`), the opponent's next move is a uniformly random legal move.
    Off by default; only bot-vs-bot matches offer it.
    """
    record = GameRecord(start=start)
    state = start
    forced = False
    while not state.is_over():
        side = state.to_move()
        t0 = time.perf_counter()
        if forced:
            decision = Decision(move=rng.choice(state.legal_moves()), info={"forced_random": True})
        else:
            decision = agents[side].choose(state, budgets[side], rng)
        forced = chance_rule and bool(decision.info.get("force_random_reply"))
        decision.seconds = decision.seconds or time.perf_counter() - t0
        state = state.play(decision.move)
        record.moves.append(decision.move)
        record.decisions.append(decision)
        if on_move is not None:
            on_move(state, decision)
    record.final = state
    record.outcome = state.outcome()
    return record


def random_opening(start: GameState, plies: int, rng: random.Random) -> GameState:
    """`plies` random moves from `start` (stopping short of a finished game), to vary openings."""
    return random_opening_moves(start, plies, rng)[0]


def random_opening_moves(
    start: GameState, plies: int, rng: random.Random
) -> tuple[GameState, tuple[Move, ...]]:
    """`random_opening`, and the moves it played (training sends them to be replayed)."""
    state = start
    played: list[Move] = []
    for _ in range(plies):
        moves = state.legal_moves()
        if not moves:
            break
        move = rng.choice(moves)
        nxt = state.play(move)
        if nxt.is_over():
            break
        state = nxt
        played.append(move)
    return state, tuple(played)
