"""The search's incremental pattern evaluation: the indices updated move by move (and pass by
pass) give the value the evaluation from scratch gives, on seeded random games and on games
hypothesis draws, for the shipped weights and for random ones; a search with it returns what a
plain minimax over the evaluation from scratch returns."""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from engine.agents.othello import patterns as pt
from engine.agents.othello.evals import terminal_score
from engine.agents.othello.search import MAX_PLY, OthelloSearch
from engine.games.othello import PASS, OthelloState
from engine.games.othkernels import flips

U64Array = npt.NDArray[np.uint64]


@njit(cache=False)  # numba's cache would not see a change in patterns.py
def _walk(
    me: U64Array, opp: U64Array, moves: npt.NDArray[np.int64], w: npt.NDArray[np.float32],
    sw: npt.NDArray[np.float32], start: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:  # fmt: skip
    """Each position of a game as the search sees it from ply `start` on: (incremental values,
    values from scratch). moves[i] is played from position i (PASS: a pass)."""
    idx = np.zeros((MAX_PLY + 1, pt.ROW), dtype=np.uint16)
    words = idx.view(np.uint64)
    pt.set_indices(me[0], opp[0], start, idx)
    n = me.shape[0]
    inc = np.empty(n, dtype=np.int64)
    ref = np.empty(n, dtype=np.int64)
    for i in range(n):
        ply = start + i
        inc[i] = pt.indexed_value(me[i], opp[i], idx, ply, sw)
        ref[i] = pt.pattern_value(me[i], opp[i], w)
        if i + 1 < n:
            if moves[i] == PASS:
                pt.pass_indices(words, ply)
            else:
                pt.play_indices(words, ply, moves[i], flips(me[i], opp[i], moves[i]))
    return inc, ref


def _game(seed: int, plies: int) -> tuple[U64Array, U64Array, npt.NDArray[np.int64]]:
    """A seeded random game of at most `plies` plies: its positions and the moves between."""
    rng = random.Random(seed)
    state = OthelloState.new()
    me, opp = [state.me], [state.opp]
    moves: list[int] = []
    while len(moves) < plies and not state.is_over():
        move = rng.choice(state.legal_moves())
        state = state.play(move)
        moves.append(move)
        me.append(state.me)
        opp.append(state.opp)
    moves.append(PASS)  # none is played from the last position
    return np.array(me, np.uint64), np.array(opp, np.uint64), np.array(moves, np.int64)


def _random_weights(seed: int, wide: bool = False) -> npt.NDArray[np.float32]:
    """Every entry its own value: an index off by one digit changes the sum. `wide`: spread
    over nine decades, so that the order of the additions changes a rounding."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 3, size=(pt.PHASES, pt.WEIGHTS)).astype(np.float32)
    if wide:
        w = (w * 10.0 ** rng.integers(-6, 3, size=w.shape)).astype(np.float32)
    w.setflags(write=False)
    return w


def _check(seed: int, plies: int, start: int, w: npt.NDArray[np.float32]) -> None:
    me, opp, moves = _game(seed, plies)
    inc, ref = _walk(me, opp, moves, w, pt.search_weights(w), start)
    assert np.array_equal(inc, ref), (seed, np.flatnonzero(inc != ref)[:5])


def test_the_incremental_values_are_the_ones_from_scratch_in_seeded_games() -> None:
    shipped = pt.load()
    grid = (np.round(_random_weights(1) * 2.0**20) / 2.0**20).astype(np.float32)
    wide = _random_weights(2, wide=True)
    assert pt.exact_in_any_order(shipped) and pt.exact_in_any_order(grid)
    assert not pt.exact_in_any_order(wide)  # added one by one, in instance order
    passes = 0
    for seed in range(150):
        for w in (shipped, grid, wide):
            _check(seed, 60, seed % 2, w)  # the search's first ply is 0 or 1
        passes += int(np.count_nonzero(_game(seed, 60)[2][:-1] == PASS))
    assert passes > 0  # some games pass on the way


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 60), st.integers(0, 1))
def test_the_incremental_values_are_the_ones_from_scratch(
    seed: int, plies: int, start: int
) -> None:
    _check(seed, plies, start, _random_weights(seed % 7, wide=seed % 2 == 1))


def test_the_swapped_weights_read_a_position_from_the_other_side() -> None:
    w = _random_weights(3)
    sw = pt.search_weights(w)
    assert sw.shape == (2 * pt.PHASES, pt.WEIGHTS + 1) and not sw.flags.writeable
    assert np.array_equal(sw[: pt.PHASES, : pt.WEIGHTS], w)
    assert (sw[:, pt.EXACT] == float(pt.exact_in_any_order(w))).all()
    # corner3x3 with only its first square (a1) taken: digit 1 one way is digit 2 the other
    first = 3**8
    assert sw[pt.PHASES + 4, first] == w[4, 2 * first]
    assert sw[pt.PHASES + 4, 2 * first] == w[4, first]
    assert np.array_equal(sw[pt.PHASES :, pt.TABLE : pt.WEIGHTS], w[:, pt.TABLE :])


def _minimax(me: int, opp: int, depth: int, w: npt.NDArray[np.float32]) -> int:
    """The search's score by plain minimax over the evaluation from scratch."""
    if depth == 0:
        return pt.evaluate(me, opp, w)
    state = OthelloState(me, opp)
    moves = state.legal_moves()
    if moves == [PASS]:
        return -_minimax(opp, me, depth - 1, w)
    if not moves:
        return int(terminal_score(np.uint64(me), np.uint64(opp)))
    best = -(10**9)
    for move in moves:
        f = state.flips(move)
        best = max(best, -_minimax(opp ^ f, me | f | 1 << move, depth - 1, w))
    return best


def test_a_search_with_the_incremental_values_scores_as_plain_minimax() -> None:
    rng = random.Random(8)
    search = OthelloSearch(tt_bits=14, eval="patterns")
    w = pt.load()
    for _ in range(6):
        state = OthelloState.new()
        for _ in range(rng.randrange(10, 50)):
            if state.is_over():
                break
            state = state.play(rng.choice(state.legal_moves()))
        if state.is_over():
            continue
        search.reset(None, None)
        score, _ = search.negamax(state.me, state.opp, 3)
        assert score == _minimax(state.me, state.opp, 3, w)
