"""Accuracy from the expected score, as lichess computes it for chess (lichess.org/page/accuracy):
each move's accuracy from the win chance it lost, and a player's accuracy in a game as the mean
of two means of their moves' accuracies: one weighted by how much the win chance was moving
around each move (so that moves in a decided game, where nothing changes the chance, count
little) and the harmonic mean (so that a few very bad moves count a lot).

Win chances here are the mover's expected score, 0..1 (`engine.analysis.Review`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

#: A move's weight is the spread of the win chance (standard deviation, in points of 100) over
#: a few positions up to it, within these bounds.
MIN_WEIGHT, MAX_WEIGHT = 0.5, 12.0
#: The harmonic mean reads every accuracy as at least this (percent): one move of 0% would
#: make the mean 0 whatever the rest.
HARMONIC_FLOOR = 1.0


#: Percent added to every move's accuracy that lost something, as lichess adds it: the values
#: are an analysis's, not perfect, so a move that lost next to nothing reads as 100%.
UNCERTAINTY_BONUS = 1.0


def move_accuracy(before: float, after: float) -> float:
    """A move's accuracy (0..1) from the expected score it lost, by lichess's curve:
    103.1668 exp(-0.04354 d) - 3.1669 percent for a drop of d points of win chance (of 100),
    plus `UNCERTAINTY_BONUS`, within 0..100. Nothing lost (or under 0.22 points) is 100%, a drop
    of 10 points 65%, 25 points 33%, 50 points 9.5%, 89 points or more 0%."""
    drop = 100.0 * (before - after)
    if drop <= 0:
        return 1.0
    raw = 103.1668100711649 * math.exp(-0.04354415386753951 * drop) - 3.166924740191411
    return min(100.0, max(0.0, raw + UNCERTAINTY_BONUS)) / 100.0


def weights(chances: Sequence[float | None]) -> list[float]:
    """Each move's weight from the first player's win chance of every position (the start
    first, None where unknown): the spread over the window of positions ending just after
    the move, as many positions as a tenth of the moves (2 to 8; the first moves share the
    first window)."""
    size = min(8, max(2, (len(chances) - 1) // 10))
    out = []
    for move in range(len(chances) - 1):
        end = max(size, move + 2)
        known = [100.0 * c for c in chances[max(0, end - size) : end] if c is not None]
        spread = statistics.pstdev(known) if len(known) >= 2 else MIN_WEIGHT
        out.append(min(MAX_WEIGHT, max(MIN_WEIGHT, spread)))
    return out


def game_accuracy(moves: Sequence[tuple[float, float]]) -> float | None:
    """A player's accuracy (0..1) from their moves' (accuracy, weight): the mean of the
    weighted mean and the harmonic mean. None without moves."""
    if not moves:
        return None
    total = sum(w for _, w in moves)
    weighted = sum(a * w for a, w in moves) / total
    floor = HARMONIC_FLOOR / 100
    harmonic = len(moves) / sum(1.0 / max(floor, a) for a, _ in moves)
    return (weighted + harmonic) / 2
