"""Accuracy as lichess computes it (modules/analyse/src/main/AccuracyPercent.scala and
modules/common/src/main/Maths.scala in lichess-org/lila), and what it says of known games."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from engine.accuracy import game_accuracy, move_accuracy, weights
from engine.analysis import analyse, split_moves
from tests.machine import scaled


def lichess_move(before: float, after: float) -> float:
    """lichess's fromWinPercents, win percents 0..100 in, accuracy percent out."""
    if after >= before:
        return 100.0
    raw = 103.1668100711649 * math.exp(-0.04354415386753951 * (before - after)) - 3.166924740191411
    return min(100.0, max(0.0, raw + 1))


def lichess_weights(percents: list[float]) -> list[float]:
    """lichess's gameAccuracy windows: (size - 2) copies of the first window, then every window
    of `size` positions in turn; a move's weight is its window's population standard deviation
    within 0.5..12."""
    size = min(8, max(2, (len(percents) - 1) // 10))
    first = percents[:size]
    windows = [first] * (min(size, len(percents)) - 2)
    windows += [percents[i : i + size] for i in range(len(percents) - size + 1)]
    return [min(12.0, max(0.5, statistics.pstdev(w))) for w in windows][: len(percents) - 1]


def test_a_move_lost_next_to_nothing_is_perfect_as_lichess_reads_it() -> None:
    # lichess adds 1 to every move's accuracy for the analysis's own uncertainty
    assert move_accuracy(0.5, 0.4) == pytest.approx(0.6458, abs=0.0005)
    assert move_accuracy(0.5, 0.498) == 1.0  # 0.2 points of win chance lost
    assert move_accuracy(0.5, 0.497) < 1.0
    assert move_accuracy(1.0, 0.0) == 0.0
    rng = random.Random(3)
    for _ in range(500):
        before, after = rng.random(), rng.random()
        assert move_accuracy(before, after) == pytest.approx(
            lichess_move(100 * before, 100 * after) / 100, abs=1e-12
        )


def test_a_player_whose_every_move_lost_next_to_nothing_has_100_percent() -> None:
    moves = [(move_accuracy(0.6, 0.6 - 0.0015 * i / 10), 1.0 + i) for i in range(10)]
    assert game_accuracy(moves) == 1.0


@pytest.mark.parametrize("length", [2, 3, 5, 9, 21, 29, 30, 39, 41, 59, 60, 81, 95])
def test_the_weights_are_lichess_windows(length: int) -> None:
    rng = random.Random(length)
    chances = [rng.random() for _ in range(length + 1)]
    ours = weights(chances)
    theirs = lichess_weights([100 * c for c in chances])
    assert len(ours) == len(theirs) == length
    assert ours == pytest.approx(theirs)


def test_a_game_accuracy_is_lichess_mean_of_the_weighted_and_harmonic_means() -> None:
    rng = random.Random(7)
    for _ in range(50):
        moves = [(rng.random() ** 2, rng.uniform(0.5, 12)) for _ in range(rng.randint(1, 40))]
        percents = [100 * a for a, _ in moves]
        weighted = sum(p * w for p, (_, w) in zip(percents, moves, strict=True)) / sum(
            w for _, w in moves
        )
        harmonic = len(percents) / sum(1 / max(1.0, p) for p in percents)
        got = game_accuracy(moves)
        assert got is not None and 100 * got == pytest.approx((weighted + harmonic) / 2)


#: The expert (first) wiping out a random mover 64-0, two random opening plies first, 0.3 s a
#: move (`python -m benchmarks.strength.othello_accuracy`, seed 6).
WIPEOUT = (
    "f5d6c6f4e6b7c5f6c7c4g5g4b3b6d7b4f7c8e7g7e8g6d8b2b8f8a8a7a5b5a6passa4passg8passh5h4a3h6"
    "a2passc3d3d2c2a1d1h8h7h3g3g2h2h1g1f1passb1e3c1f3f2e2e1"
)


def test_a_random_mover_wiped_out_by_the_expert_has_low_accuracy() -> None:
    a = analyse("othello", split_moves("othello", WIPEOUT), budget=scaled(9))
    expert, random_mover = a.players
    assert expert.accuracy is not None and random_mover.accuracy is not None
    assert random_mover.accuracy < 0.65 and expert.accuracy > 0.85
    assert expert.accuracy - random_mover.accuracy > 0.3
    assert random_mover.blunders >= 2
