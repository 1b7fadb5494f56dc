"""The weight grid's regression rule (`rule=regression`): the symmetry classes, the features of a
move, the least-squares update on hand-made games worked out by hand, and reproducible
training for a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest

from engine.agents import registry
from engine.agents.othello.weightgrid import (
    GRID_KEY,
    N_FEATURES,
    SQUARE_CLASS,
    SUMS_KEY,
    RegressionSums,
    WeightGridAgent,
    decode_grid,
    move_features,
)
from engine.games.othello import OthelloState
from engine.learning import InMemoryBackend, TrainConfig, train


def sq(name: str) -> int:
    return "abcdefgh".index(name[0]) + 8 * (int(name[1]) - 1)


def squares(names: str) -> int:
    return sum(1 << sq(name) for name in names.split())


def unit(cls: int, value: float = 1.0, offset: int = 0) -> np.ndarray:
    """A feature vector with `value` at class `cls` (offset 10: the held squares, first stage)."""
    v = np.zeros(N_FEATURES)
    v[offset + cls] = value
    return v


# The hand-made game. Black: c1, d5; white: b1, d4; black to move. Black's only moves are a1
# (flips b1 along rank 1) and d3 (flips d4 along the d-file). Black plays a1; white's only
# reply is then d6 (flips d5). Classes: a1 0, b1 1 (C-square), c1 2, d4 and d5 9 (centre).
START = OthelloState(squares("c1 d5"), squares("b1 d4"), 0, 4)
AFTER_A1 = START.play(sq("a1"))

# Black's a1, by hand. Flips: a1 flips one class-1 disc, d3 one class-9 disc; the average legal
# move flips half of each, so a1 flips +0.5 class 1 and -0.5 class 9 more than average.
# Held before the move: black c1 (class 2) and d5 (9), white b1 (1) and d4 (9): +1 class 2,
# -1 class 1 (the centre cancels). |x1|^2 = 0.25 + 0.25 + 1 + 1 = 2.5.
X1 = unit(1, 0.5) + unit(9, -0.5) + unit(1, -1.0, 10) + unit(2, 1.0, 10)
# White's d6, by hand: its only move, so it flips nothing more than average. Held before it:
# white d4 (9); black a1 (0), b1 (1), c1 (2), d5 (9): -1 in classes 0, 1 and 2. |x2|^2 = 3.
X2 = unit(0, -1.0, 10) + unit(1, -1.0, 10) + unit(2, -1.0, 10)

C_SQUARES = ("b1", "g1", "a2", "h2", "a7", "h7", "b8", "g8")
CENTRE = ("d4", "e4", "d5", "e5")


def test_symmetry_classes() -> None:
    assert len(SQUARE_CLASS) == 64 and sorted(set(SQUARE_CLASS)) == list(range(10))
    sizes = [SQUARE_CLASS.count(c) for c in range(10)]
    assert sizes == [4, 8, 8, 8, 4, 8, 8, 4, 8, 4]
    for i, name in enumerate(("a1", "b1", "c1", "d1", "b2", "c2", "d2", "c3", "d3", "d4")):
        assert SQUARE_CLASS[sq(name)] == i
    assert {SQUARE_CLASS[sq(n)] for n in C_SQUARES} == {1}
    for s in range(64):  # the same class under a reflection and a transposition
        f, r = s % 8, s // 8
        assert SQUARE_CLASS[s] == SQUARE_CLASS[(7 - f) + 8 * r] == SQUARE_CLASS[r + 8 * f]


def test_the_features_of_the_hand_made_moves() -> None:
    assert START.legal_moves() == [sq("a1"), sq("d3")]
    assert AFTER_A1.legal_moves() == [sq("d6")]
    assert move_features(START, sq("a1")) == X1.tolist()
    assert move_features(AFTER_A1, sq("d6")) == X2.tolist()
    with pytest.raises(ValueError, match="not legal"):
        move_features(START, sq("h8"))


def test_one_move_update_worked_out_by_hand() -> None:
    agent = WeightGridAgent(memory="default", rule="regression")
    assert agent.learn_keys([START], [sq("a1")], 0) == [GRID_KEY, SUMS_KEY]
    rows = agent.learn([START], [sq("a1")], 0, 1.0, {})
    # One move with x = X1 and target +1 (black won): the fit (I + x x^T)^-1 x is x / (1 + |x|^2)
    # = X1 / 3.5, so flipping a C-square is worth 0.5 / 3.5 = 1/7 and a centre disc -1/7.
    grid = decode_grid(rows[GRID_KEY]).reshape(64)
    for s in range(64):
        name = "abcdefgh"[s % 8] + str(s // 8 + 1)
        expected = 1 / 7 if name in C_SQUARES else -1 / 7 if name in CENTRE else 0.0
        assert grid[s] == pytest.approx(expected, abs=1e-12), name
    sums = RegressionSums.decode(rows[SUMS_KEY])
    assert np.array_equal(sums.xtx, np.eye(N_FEATURES) + np.outer(X1, X1))
    assert np.array_equal(sums.xty, X1)
    # The same game told by the other seat (white lost) is the same update; a loss for black
    # turns the grid round, a draw teaches the grid nothing.
    assert agent.learn([START], [sq("a1")], 1, 0.0, {}) == rows
    lost = decode_grid(agent.learn([START], [sq("a1")], 0, 0.0, {})[GRID_KEY])
    assert np.allclose(lost, -decode_grid(rows[GRID_KEY]))
    drawn = agent.learn([START], [sq("a1")], 0, 0.5, {})
    assert not decode_grid(drawn[GRID_KEY]).any()


def test_two_move_update_worked_out_by_hand() -> None:
    agent = WeightGridAgent(memory="default", rule="regression")
    rows = agent.learn([START, AFTER_A1], [sq("a1"), sq("d6")], 0, 1.0, {})
    # White's move counts with target -1 (white lost). X1 and X2 are orthogonal, so the fit is
    # X1 / (1 + 2.5) - X2 / (1 + 3): white's forced move only moves the held-square weights.
    sums = RegressionSums.decode(rows[SUMS_KEY])
    coef = np.linalg.solve(sums.xtx, sums.xty)
    assert np.allclose(coef, X1 / 3.5 - X2 / 4, atol=1e-12)
    grid = decode_grid(rows[GRID_KEY])
    assert grid[0, 1] == pytest.approx(1 / 7) and grid[3, 3] == pytest.approx(-1 / 7)
    # Learning adds up: the two moves learned as two games give the same sums.
    first = agent.learn([START], [sq("a1")], 0, 1.0, {})
    second = agent.learn([AFTER_A1], [sq("d6")], 1, 0.0, first)
    assert second == rows


def test_passes_are_left_out_and_the_grid_stays_symmetric() -> None:
    agent = WeightGridAgent(memory="default", rule="regression")
    state, states, moves = OthelloState.new(), [], []
    rng = np.random.default_rng(3)
    while not state.is_over():
        legal = state.legal_moves()
        move = legal[int(rng.integers(len(legal)))]
        states.append(state)
        moves.append(move)
        state = state.play(move)
    rows = agent.learn(states, moves, 0, 1.0, {})
    grid = decode_grid(rows[GRID_KEY])
    assert np.allclose(grid, grid.T) and np.allclose(grid, grid[::-1]) and grid.any()
    assert grid[0, 0] == 0.0  # a corner can never be flipped: its weight stays 0


def test_the_rule_setting() -> None:
    spec, _ = registry.resolve("weightgrid:rule=regression:memory=x", "othello")
    agent = registry.build(spec, "othello")
    assert isinstance(agent, WeightGridAgent) and agent.rule == "regression"
    assert "b'regression'" in agent.memory_format(START)
    seed = WeightGridAgent(memory="x")
    assert seed.rule == "seed" and seed.learn_keys([START], [sq("a1")], 0) == [GRID_KEY]
    assert "regression" not in seed.memory_format(START)
    fixed = WeightGridAgent(grid="default", rule="regression")  # a fixed grid learns nothing
    assert fixed.learn_keys([START], [sq("a1")], 0) == []
    assert fixed.learn([START], [sq("a1")], 0, 1.0, {}) == {}
    with pytest.raises(ValueError, match="rule"):
        WeightGridAgent(rule="td")
    with pytest.raises(ValueError, match="4970"):
        RegressionSums.decode(b"\0" * 8)


def trained(seed: int, games: int = 12) -> dict[bytes, bytes]:
    backend = InMemoryBackend()
    config = TrainConfig(
        game="othello",
        agent="weightgrid:rule=regression",
        games=games,
        opponents=("self:capture_share=1",),
        workers=1,
        eval_every=0,
        seed=seed,
        round_games=5,
    )
    train(config, backend)
    assert backend.games[("weightgrid", "default")] == games
    return backend.memories[("weightgrid", "default")]


def test_training_is_reproducible_for_a_fixed_seed() -> None:
    first, again, other = trained(5), trained(5), trained(6)
    assert set(first) == {GRID_KEY, SUMS_KEY}
    assert first == again  # byte for byte
    assert first[GRID_KEY] != other[GRID_KEY]
    # The grid stored is the fit of the stored sums.
    fit = RegressionSums.decode(first[SUMS_KEY]).grid()
    assert np.array_equal(decode_grid(first[GRID_KEY]), fit)
