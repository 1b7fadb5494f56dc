"""Compile (or load from numba's cache) every hot kernel, so a process's first real move is fast.

The engine pool calls `warm_up` in each worker as it starts; the bot's own process, which only
applies the rules, calls `warm_rules` in a thread. numba keeps what it compiled next to the
sources (`__pycache__/*.nbi`), so only the very first run after an install compiles.
"""

from __future__ import annotations

import random

from engine.agents import registry
from engine.agents.base import Agent, Budget
from engine.agents.opponents import opponents
from engine.games import GAMES, new_game
from engine.games.base import GameState


def warm_rules() -> None:
    """The kernels the rules use (legal moves, playing, rendering) in both games."""
    rng = random.Random(0)
    for game in GAMES:
        state = new_game(game)
        while not state.is_over():
            state = state.play(rng.choice(state.legal_moves()))
            state.render_emoji()


def warm_positions(game: str, rng: random.Random) -> list[GameState]:
    """The start, a position past the opening (the perfect agent reads the first moves from
    its book) and one near the end (the endgame solvers only run there) of a random game."""
    start = new_game(game)
    states, state = [], start
    while not state.is_over():
        states.append(state)
        state = state.play(rng.choice(state.legal_moves()))
    return [start, states[min(8, len(states) - 1)], states[-10]]


def warm_agent(agent: Agent, picks: list[GameState], rng: random.Random) -> None:
    """One quick move of `agent` in each position: its kernels compiled or loaded."""
    for pick in picks:
        agent.choose(pick, Budget(time=0.05, nodes=200, depth=2), rng)


def warm_up() -> None:
    """Play quick moves with every registered agent and every opponent people can choose, in
    every game, at the start, in the middle and near the end of a game: a kernel first met
    inside a move's job would be compiled under the job's cap, and on a first run the worker
    would be killed before numba could cache it."""
    rng = random.Random(0)
    for game in GAMES:
        new_game(game).perft(2)  # type: ignore[attr-defined]
        picks = warm_positions(game, rng)
        specs = [registry.resolve(info.name, game)[0] for info in registry.agents_for(game)]
        specs += [o.spec for o in opponents(game)]
        for spec in specs:
            warm_agent(registry.build(spec, game), picks, rng)
