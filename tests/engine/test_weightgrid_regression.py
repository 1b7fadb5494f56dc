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
    encode_grid,
    move_features,
)
from engine.games.othello import OthelloState
from engine.learning import InMemoryBackend
from tools.training import TrainConfig, train


def sq(name: str) -> int:
    return "abcdefgh".index(name[0]) + 8 * (int(name[1]) - 1)


def squares(names: str) -> int:
    return sum(1 << sq(name) for name in names.split())


def unit(index: int, value: float = 1.0) -> np.ndarray:
    """A feature vector with `value` at `index`."""
    v = np.zeros(N_FEATURES)
    v[index] = value
    return v


FLIPS, OWN_CHOICE, HELD = 0, 10, 11  # where each part of the features starts (held: stage 1)

# The hand-made game. Black: c1, d5; white: b1, d4; black to move. Black's only moves are a1
# (flips b1 along rank 1) and d3 (flips d4 along the d-file). Black plays a1; white's only
# reply is then d6 (flips d5). Classes: a1 0, b1 1 (C-square), c1 2, d4 and d5 9 (centre).
START = OthelloState(squares("c1 d5"), squares("b1 d4"), 0, 4)
AFTER_A1 = START.play(sq("a1"))

# Black's a1, by hand. Flips: a1 flips one class-1 disc, d3 one class-9 disc; the average legal
# move flips half of each, so a1 flips +0.5 class 1 and -0.5 class 9 more than average. On the
# all-zero grid every capture scores 0 and weight capture plays the first legal move, a1: the
# grid's own choice, 1. Held before the move: black c1 (class 2) and d5 (9), white b1 (1) and
# d4 (9): +1 class 2, -1 class 1 (the centre cancels). |x1|^2 = 0.25 + 0.25 + 1 + 1 + 1 = 3.5.
X1 = (
    unit(FLIPS + 1, 0.5)
    + unit(FLIPS + 9, -0.5)
    + unit(OWN_CHOICE)
    + unit(HELD + 1, -1.0)
    + unit(HELD + 2, 1.0)
)
# White's d6, by hand: its only move, so it flips nothing more than average, and it is the
# grid's choice. Held before it: white d4 (9); black a1 (0), b1 (1), c1 (2), d5 (9): -1 in
# classes 0, 1 and 2. |x2|^2 = 1 + 3 = 4, and x1 . x2 = 1 (the own-choice 1s; held: 1 - 1).
X2 = unit(OWN_CHOICE) + unit(HELD, -1.0) + unit(HELD + 1, -1.0) + unit(HELD + 2, -1.0)

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


def grid_weights(grid: np.ndarray) -> tuple[float, float, float]:
    """A grid's weight of a C-square, a centre square and every other square (checked equal)."""
    flat = grid.reshape(64)
    by_name = {"abcdefgh"[s % 8] + str(s // 8 + 1): float(flat[s]) for s in range(64)}
    c_squares = {by_name[n] for n in C_SQUARES}
    centre = {by_name[n] for n in CENTRE}
    others = {v for n, v in by_name.items() if n not in C_SQUARES and n not in CENTRE}
    assert len(c_squares) == len(centre) == len(others) == 1, (c_squares, centre, others)
    return c_squares.pop(), centre.pop(), others.pop()


def test_the_features_of_the_hand_made_moves() -> None:
    zero = np.zeros((8, 8))
    assert START.legal_moves() == [sq("a1"), sq("d3")]
    assert AFTER_A1.legal_moves() == [sq("d6")]
    assert move_features(START, sq("a1"), zero) == X1.tolist()
    assert move_features(AFTER_A1, sq("d6"), zero) == X2.tolist()
    # On a grid valuing the centre, weight capture would play d3: a1 is not its choice.
    centre = np.zeros((8, 8))
    centre[3, 3] = 1.0  # d4
    assert move_features(START, sq("a1"), centre) == (X1 - unit(OWN_CHOICE)).tolist()
    assert move_features(START, sq("d3"), centre)[OWN_CHOICE] == 1.0
    with pytest.raises(ValueError, match="not legal"):
        move_features(START, sq("h8"), zero)


def test_one_move_update_worked_out_by_hand() -> None:
    agent = WeightGridAgent(memory="default", rule="regression")
    assert agent.learn_keys([START], [sq("a1")], 0) == [GRID_KEY, SUMS_KEY]
    rows = agent.learn([START], [sq("a1")], 0, 1.0, {})
    # One move with x = X1 and target +1 (black won): the fit (I + x x^T)^-1 x is x / (1 + |x|^2)
    # = X1 / 4.5, so flipping a C-square is worth 0.5 / 4.5 = 1/9, a centre disc -1/9, and
    # every other square 0.
    c_square, centre, other = grid_weights(decode_grid(rows[GRID_KEY]))
    assert c_square == pytest.approx(1 / 9, abs=1e-12)
    assert centre == pytest.approx(-1 / 9, abs=1e-12) and other == 0.0
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


def test_the_grid_in_memory_decides_what_its_own_choice_was() -> None:
    agent = WeightGridAgent(memory="default", rule="regression")
    centre = np.zeros((8, 8))
    centre[3, 3] = 1.0  # weight capture on this grid plays d3, not a1
    rows = agent.learn([START], [sq("a1")], 0, 1.0, {GRID_KEY: encode_grid(centre)})
    # x = X1 without the own-choice 1: |x|^2 = 2.5, so C-squares 0.5 / 3.5 = 1/7.
    c_square, centre_weight, other = grid_weights(decode_grid(rows[GRID_KEY]))
    assert c_square == pytest.approx(1 / 7, abs=1e-12)
    assert centre_weight == pytest.approx(-1 / 7, abs=1e-12) and other == 0.0


def test_two_move_update_worked_out_by_hand() -> None:
    agent = WeightGridAgent(memory="default", rule="regression")
    rows = agent.learn([START, AFTER_A1], [sq("a1"), sq("d6")], 0, 1.0, {})
    # White's move counts with target -1 (white lost): solve (I + x1 x1^T + x2 x2^T) w = x1 - x2
    # with w = a x1 + b x2. Matching the x1 and x2 parts, with x1.x1 = 3.5, x2.x2 = 4 and
    # x1.x2 = 1: 4.5 a + b = 1 and a + 5 b = -1, so a = 12/43 and b = -11/43. Only x1 flips
    # anything: a C-square is worth 0.5 a = 6/43 and a centre disc -6/43.
    sums = RegressionSums.decode(rows[SUMS_KEY])
    coef = np.linalg.solve(sums.xtx, sums.xty)
    assert np.allclose(coef, 12 / 43 * X1 - 11 / 43 * X2, atol=1e-12)
    c_square, centre, other = grid_weights(decode_grid(rows[GRID_KEY]))
    assert c_square == pytest.approx(6 / 43, abs=1e-12)
    assert centre == pytest.approx(-6 / 43, abs=1e-12) and other == 0.0
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
    with pytest.raises(ValueError, match="5112"):
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
