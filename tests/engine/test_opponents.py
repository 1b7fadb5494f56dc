"""The curated opponents people choose on Discord: names, fixed specs, budgets, descriptions."""

from __future__ import annotations

import random
import re
import time

import pytest

from engine.agents import opponents, registry
from engine.agents.base import AgentSpec, Limits
from engine.games import new_game
from engine.games.base import GameState
from tests.machine import scaled

FAMILIES = {
    "connect4": {"trainer", "planner", "mcts", "minimax", "expectiminimax", "onestep", "random"},
    "othello": {
        "mcts", "minimax", "expectiminimax", "greedy-first", "greedy-center", "greedy-edge",
        "greedy-random", "weightgrid", "random",
    },
}  # fmt: skip


@pytest.mark.parametrize("game", registry.GAMES)
def test_each_game_offers_the_levels_and_every_family(game: str) -> None:
    names = opponents.names(game)
    assert names[:4] == list(registry.LEVEL_NAMES)
    assert set(names[4:]) == FAMILIES[game]
    assert len(names) == len(set(names))
    assert "solver" not in names  # unlimited: `expert` is the timed near-perfect player


@pytest.mark.parametrize("game", registry.GAMES)
def test_levels_are_exactly_the_registry_levels(game: str) -> None:
    for name in registry.LEVEL_NAMES:
        o = opponents.opponent(game, name)
        level = registry.LEVELS[game][name]
        assert (o.level, o.spec, o.budget, o.description) == (
            name,
            level.spec,
            level.budget,
            level.description,
        )
        assert not o.learns
    assert all(o.level is None for o in opponents.opponents(game)[4:])


@pytest.mark.parametrize("game", registry.GAMES)
def test_every_opponent_builds_within_the_limits(game: str) -> None:
    ceiling = Limits()
    for o in opponents.opponents(game):
        assert o.game == game
        agent = registry.build(o.spec, game)  # every parameter inside its declared range
        assert agent is not None
        b = o.budget
        assert b.time is None or b.time <= opponents.MOVE_SECONDS
        assert b.nodes is None or ceiling.nodes is None or b.nodes <= ceiling.nodes
        assert b.depth is None or ceiling.depth is None or b.depth <= ceiling.depth


def test_descriptions_are_plain_one_liners() -> None:
    for game in registry.GAMES:
        for o in opponents.opponents(game):
            assert o.description and "\n" not in o.description and len(o.description) <= 200
            assert not re.search(r"\bseed\b", o.description, re.I), o.description


def test_only_the_bots_own_memories_learn() -> None:
    c4 = {o.name: o for o in opponents.opponents("connect4")}
    oth = {o.name: o for o in opponents.opponents("othello")}
    assert [n for n, o in c4.items() if o.learns] == ["trainer"]
    assert [n for n, o in oth.items() if o.learns] == ["weightgrid"]
    assert c4["trainer"].spec == registry.resolve("trainer", "connect4")[0]
    assert oth["weightgrid"].spec == AgentSpec("weightgrid", {"memory": "default"})
    assert opponents.may_learn("connect4", AgentSpec("trainer"))
    assert opponents.may_learn("othello", AgentSpec("weightgrid", {"memory": "default"}))
    # Other settings of the same agent, or another memory, may not write learned memory.
    assert not opponents.may_learn("connect4", AgentSpec("trainer", {"lr": 10.0}))
    assert not opponents.may_learn("connect4", AgentSpec("trainer", {"memory": "mine"}))
    assert not opponents.may_learn("othello", AgentSpec("weightgrid"))
    assert not opponents.may_learn("othello", AgentSpec("trainer"))


def test_lookup_by_name() -> None:
    assert opponents.opponent("othello", " Hard ").name == "hard"
    assert opponents.opponent("connect4", "MCTS").spec == AgentSpec("mcts")
    with pytest.raises(ValueError, match=r"unknown opponent 'solver' for connect4: choose one of"):
        opponents.opponent("connect4", "solver")
    with pytest.raises(ValueError, match="easy, medium, hard, expert"):
        opponents.opponent("othello", "trainer")
    with pytest.raises(ValueError, match="unknown game"):
        opponents.opponents("chess")
    with pytest.raises(ValueError) as exc:
        opponents.opponent("connect4", "x" * 10_000)
    assert len(str(exc.value)) < 400


def _position(game: str, plies: int, seed: int) -> GameState:
    rng = random.Random(seed)
    state = new_game(game)
    for _ in range(plies):
        nxt = state.play(rng.choice(state.legal_moves()))
        if nxt.is_over():
            break
        state = nxt
    return state


@pytest.mark.slow
@pytest.mark.parametrize("game", registry.GAMES)
def test_every_opponent_answers_a_midgame_move_in_time(game: str) -> None:
    # The benchmark (benchmarks/speed/opponents.py) measures this properly; here, one move each.
    state = _position(game, 10, seed=3)
    for o in opponents.opponents(game):
        agent = registry.build(o.spec, game)
        agent.choose(_position(game, 12, seed=4), o.budget, random.Random(0))  # warm kernels
        t0 = time.perf_counter()
        decision = agent.choose(state, o.budget, random.Random(1))
        assert time.perf_counter() - t0 < scaled(1.5), o.name
        assert decision.move in state.legal_moves()
