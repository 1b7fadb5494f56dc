"""Compile (or load from numba's cache) every hot kernel, so a process's first real move is fast.

The engine pool calls `warm_up` in each worker as it starts; the bot's own process, which only
applies the rules, calls `warm_rules` in a thread. numba keeps what it compiled next to the
sources (`__pycache__/*.nbi`), so only the very first run after an install compiles.
"""

from __future__ import annotations

import random

from engine.agents import registry
from engine.agents.base import Budget
from engine.games import GAMES, new_game


def warm_rules() -> None:
    """The kernels the rules use (legal moves, playing, rendering) in both games."""
    rng = random.Random(0)
    for game in GAMES:
        state = new_game(game)
        while not state.is_over():
            state = state.play(rng.choice(state.legal_moves()))
            state.render_emoji()


def warm_up() -> None:
    """Play one quick move with every registered agent in every game it plays."""
    rng = random.Random(0)
    for game in GAMES:
        start = new_game(game)
        start.perft(2)  # type: ignore[attr-defined]
        # A position past the opening too: the perfect agent reads the first moves from its
        # book, so only a later one reaches its search kernels.
        later = start
        for _ in range(8):
            nxt = later.play(rng.choice(later.legal_moves()))
            if nxt.is_over():
                break
            later = nxt
        for info in registry.agents_for(game):
            spec, _ = registry.resolve(info.name, game)
            agent = registry.build(spec, game)
            for state in (start, later):
                agent.choose(state, Budget(time=0.05, nodes=200, depth=2), rng)
