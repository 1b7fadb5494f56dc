"""The static Othello evaluation (numba) the searches score at their horizon: mobility, frontier
discs, corners and the squares next to them, stable edge discs and the disc difference, weighted
by the game phase, in "centidiscs" for the side to move. The terms: docs/agents.md.
"""

from __future__ import annotations

import numpy as np

from engine.games.bits import ONE, ZERO, inline_kernel, kernel, popcnt
from engine.games.othkernels import legal_masks

WIN = 100_000
"""Score of a won finished game before the disc difference is added."""

EVAL_BOUND = 50_000
"""Static evaluations are clipped to +-EVAL_BOUND, far below WIN."""

_NOT_A = np.uint64(0xFEFEFEFEFEFEFEFE)  # every file but a
_NOT_H = np.uint64(0x7F7F7F7F7F7F7F7F)  # every file but h
_S1 = np.uint64(1)
_S7 = np.uint64(7)
_S8 = np.uint64(8)
_S9 = np.uint64(9)

_CORNER_MASK = np.uint64(0x8100000000000081)
# Per corner a1, h1, a8, h8: the corner, its X-square and its two C-squares.
_CORNER_SQ = np.array([0, 7, 56, 63], dtype=np.int64)
_X_SQ = np.array([9, 14, 49, 54], dtype=np.int64)
_C_SQ = np.array([[1, 8], [6, 15], [48, 57], [62, 55]], dtype=np.int64)

# The four edges as square sequences (rank 1, rank 8, file a, file h), used for stability.
_EDGES = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [56, 57, 58, 59, 60, 61, 62, 63],
        [0, 8, 16, 24, 32, 40, 48, 56],
        [7, 15, 23, 31, 39, 47, 55, 63],
    ],
    dtype=np.int64,
)
_EDGE_MASKS = np.array(
    [0x00000000000000FF, 0xFF00000000000000, 0x0101010101010101, 0x8080808080808080],
    dtype=np.uint64,
)

W_CORNER = 800
W_XSQUARE = 250
W_CSQUARE = 80
W_STABLE = 120


@inline_kernel
def _neighbours(x: np.uint64) -> np.uint64:
    """Squares adjacent (8 directions) to any set square of `x`."""
    e = (x << _S1) & _NOT_A
    w = (x >> _S1) & _NOT_H
    row = x | e | w
    return (row | (row << _S8) | (row >> _S8)) & ~x


@kernel
def final_score(me: np.uint64, opp: np.uint64) -> int:
    """Disc difference of a finished game for `me`, empties to the winner."""
    a = popcnt(me)
    b = popcnt(opp)
    diff = a - b
    empties = 64 - a - b
    if diff > 0:
        return diff + empties
    if diff < 0:
        return diff - empties
    return 0


@kernel
def terminal_score(me: np.uint64, opp: np.uint64) -> int:
    """Search score of a finished game: +-(WIN + disc difference), 0 for a draw."""
    d = final_score(me, opp)
    if d > 0:
        return WIN + d
    if d < 0:
        return -WIN + d
    return 0


@kernel
def stable_edges(me: np.uint64, opp: np.uint64) -> np.uint64:
    """Discs of `me` that can never flip because of an edge: corner-anchored runs, full edges."""
    occupied = me | opp
    stable = ZERO
    for e in range(4):
        if (occupied & _EDGE_MASKS[e]) == _EDGE_MASKS[e]:
            stable |= me & _EDGE_MASKS[e]
            continue
        for i in range(8):  # run from the first corner of the edge
            bit = ONE << np.uint64(_EDGES[e, i])
            if not me & bit:
                break
            stable |= bit
        for i in range(7, -1, -1):  # and from the other corner
            bit = ONE << np.uint64(_EDGES[e, i])
            if not me & bit:
                break
            stable |= bit
    return stable


@kernel
def _corner_terms(me: np.uint64, opp: np.uint64) -> int:
    """Corners held minus the X/C-square liabilities next to empty corners, for `me`."""
    occupied = me | opp
    score = W_CORNER * (popcnt(me & _CORNER_MASK) - popcnt(opp & _CORNER_MASK))
    for c in range(4):
        if occupied & (ONE << np.uint64(_CORNER_SQ[c])):
            continue
        x = ONE << np.uint64(_X_SQ[c])
        if me & x:
            score -= W_XSQUARE
        elif opp & x:
            score += W_XSQUARE
        for j in range(2):
            cs = ONE << np.uint64(_C_SQ[c, j])
            if me & cs:
                score -= W_CSQUARE
            elif opp & cs:
                score += W_CSQUARE
    return score


@kernel
def evaluate(me: np.uint64, opp: np.uint64) -> int:
    """Static score of the position for the side to move (`me`); see the module docstring."""
    my_moves, their_moves = legal_masks(me, opp)
    if my_moves == ZERO and their_moves == ZERO:
        return terminal_score(me, opp)
    occupied = me | opp
    empty = ~occupied
    empties = 64 - popcnt(occupied)

    # Phase weights: opening (e ~ 60) -> midgame -> endgame (e -> 0).
    w_mob = 60 + empties // 2
    w_front = 8 + empties // 3
    w_disc = -4 if empties > 24 else (25 - empties) * 8

    score = w_mob * (popcnt(my_moves) - popcnt(their_moves))
    frontier_zone = _neighbours(empty)
    score -= w_front * (popcnt(me & frontier_zone) - popcnt(opp & frontier_zone))
    score += _corner_terms(me, opp)
    score += W_STABLE * (popcnt(stable_edges(me, opp)) - popcnt(stable_edges(opp, me)))
    score += w_disc * (popcnt(me) - popcnt(opp))
    if score > EVAL_BOUND:
        return EVAL_BOUND
    if score < -EVAL_BOUND:
        return -EVAL_BOUND
    return score


def evaluate_state(me: int, opp: int) -> int:
    """Python entry point: `evaluate` for plain-int bitboards."""
    return int(evaluate(np.uint64(me), np.uint64(opp)))


EVALS = ("standard", "patterns")
"""Evaluation names the Othello search agents accept (`eval=` setting): the hand-made one
here, or the pattern evaluation fitted from games (`patterns.py`)."""
