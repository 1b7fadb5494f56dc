"""Seed 002's MCTS on known positions: wins, blocks, a forced win, determinism, the clock."""

from __future__ import annotations

import random
import time

import pytest

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4.solver import best_moves
from engine.agents.mcts import MCTSAgent, pick_move
from engine.games.connect4 import Connect4State
from engine.games.othello import OthelloState
from engine.play import play_game
from tests.machine import scaled


def mcts(game: str = "connect4", **params: object) -> MCTSAgent:
    spec, _ = registry.resolve("mcts", game, dict(params))
    agent = registry.build(spec, game)
    assert isinstance(agent, MCTSAgent)
    return agent


DEFAULT = Budget(nodes=10_000)


def test_registry_default_budget_is_ten_thousand_simulations() -> None:
    _, budget = registry.resolve("mcts", "othello")
    assert budget == DEFAULT
    assert mcts("othello").game == "othello"


def test_takes_a_win_in_one() -> None:
    state = Connect4State.from_moves("121212")  # X has three in column 1
    for seed in range(3):
        assert mcts().choose(state, DEFAULT, random.Random(seed)).move == 0


def test_blocks_a_loss_in_one() -> None:
    state = Connect4State.from_moves("725212")  # O has three in column 2
    for seed in range(3):
        assert mcts().choose(state, DEFAULT, random.Random(seed)).move == 1


def test_finds_a_forced_win_in_three() -> None:
    # X on c1 d1, O twice on a: X e1 makes an open three (b1 and f1), winning in 3 plies.
    state = Connect4State.from_moves("3141")
    score, best = best_moves(state)
    assert best == [4] and score == (42 + 1 - 6) // 2
    decision = mcts().choose(state, Budget(nodes=50_000), random.Random(7))
    assert decision.move == 4


def test_same_seed_same_decision() -> None:
    state = Connect4State.from_moves("4455")
    a = mcts().choose(state, Budget(nodes=3000), random.Random(11))
    b = mcts().choose(state, Budget(nodes=3000), random.Random(11))
    assert (a.move, a.score, a.info) == (b.move, b.score, b.info)
    o = OthelloState.new()
    c = mcts("othello").choose(o, Budget(nodes=2000), random.Random(3))
    d = mcts("othello").choose(o, Budget(nodes=2000), random.Random(3))
    assert (c.move, c.info) == (d.move, d.info)


@pytest.mark.parametrize("game", ["connect4", "othello"])
def test_time_budget_is_respected(game: str) -> None:
    state = Connect4State.new() if game == "connect4" else OthelloState.new()
    agent = mcts(game)
    agent.choose(state, Budget(nodes=50), random.Random(0))  # compile / load outside the clock
    for limit in (0.05, 0.3):
        t0 = time.perf_counter()
        decision = agent.choose(state, Budget(time=limit), random.Random(1))
        elapsed = time.perf_counter() - t0
        assert elapsed < limit + scaled(0.05)
        assert decision.nodes > 100


def test_ratio_pick_ignores_barely_visited_children() -> None:
    children = [(0, 900, 500.0), (1, 3, 3.0), (2, 120, 70.0)]
    assert pick_move(children, "ratio") == (2, 70.0 / 120)
    assert pick_move(children, "visits")[0] == 0


def test_othello_mcts_plays_legal_moves_to_the_end() -> None:
    agent = mcts("othello")
    rival = registry.build(registry.resolve("random", "othello")[0], "othello")
    record = play_game(
        OthelloState.new(), (agent, rival), (Budget(nodes=300), Budget()), random.Random(5)
    )
    assert record.final is not None and record.final.is_over()
    assert record.outcome is not None


@pytest.mark.parametrize(
    "notation",
    [  # black to move; h1 (square 7) is the only move that wins (exhaustive search)
        "XOOOOOO--OOOXXXXO-XOOXXXXOXXOXOXX-OXXOOXXXXXXXOO-X-XXXOO-XXXXO-X X",
        "-XXOOOO--XOOOOOOXXXOXOOOOXOOXXOOOOXOOXOOOXXOOXOXOOOX-OO-OOX---OX X",
        "-X--OXX-XXXOOOXOXXXOOXOOX-XOOOXOXOOOXXXXXXOOXOOX-OOOOO-XO-OOOOOX X",
    ],
)
def test_othello_mcts_takes_the_winning_corner(notation: str) -> None:
    state = OthelloState.from_notation(notation)
    assert mcts("othello").choose(state, DEFAULT, random.Random(1)).move == 7


def test_rejects_bad_settings() -> None:
    with pytest.raises(ValueError):
        MCTSAgent(pick="best")
    with pytest.raises(ValueError):
        MCTSAgent(game="chess")
