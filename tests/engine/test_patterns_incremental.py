"""The search's incremental pattern evaluation: the indices updated move by move (and pass by
pass) give the value the evaluation from scratch gives with the weights rounded to int16 units
(`patterns.quantize`), on seeded random games and on games hypothesis draws, for the shipped
weights and for random ones; the rounding moves a value by rounding only; a search with it
returns what a plain minimax over the evaluation from scratch returns."""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from engine.agents.othello import patterns as pt
from engine.agents.othello.evals import terminal_score
from engine.agents.othello.patvector import FIRST_FLIPS
from engine.agents.othello.search import MAX_PLY, OthelloSearch
from engine.games.othello import PASS, OthelloState
from engine.games.othkernels import flips

U64Array = npt.NDArray[np.uint64]


@njit(cache=False)  # numba's cache would not see a change in patterns.py
def _walk(
    me: U64Array, opp: U64Array, moves: npt.NDArray[np.int64], w: npt.NDArray[np.float32],
    tables: npt.NDArray[np.int16], terms: npt.NDArray[np.float64], start: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:  # fmt: skip
    """Each position of a game as the search sees it from ply `start` on: (incremental values,
    values from scratch with `w`). moves[i] is played from position i (PASS: a pass)."""
    idx = np.zeros((MAX_PLY + 1, pt.ROW), dtype=np.uint16)
    words = idx.view(np.uint64)
    pt.set_indices(me[0], opp[0], start, idx)
    n = me.shape[0]
    inc = np.empty(n, dtype=np.int64)
    ref = np.empty(n, dtype=np.int64)
    for i in range(n):
        ply = start + i
        inc[i] = pt.indexed_value(me[i], opp[i], idx, ply, tables, terms)
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
    over nine decades (its small weights round to zero)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 3, size=(pt.PHASES, pt.WEIGHTS)).astype(np.float32)
    if wide:
        w = (w * 10.0 ** rng.integers(-6, 3, size=w.shape)).astype(np.float32)
    w.setflags(write=False)
    return w


def _check(seed: int, plies: int, start: int, w: npt.NDArray[np.float32]) -> None:
    me, opp, moves = _game(seed, plies)
    sw = pt.search_weights(w)
    inc, ref = _walk(me, opp, moves, pt.quantize(w), sw.tables, sw.terms, start)
    assert np.array_equal(inc, ref), (seed, np.flatnonzero(inc != ref)[:5])


def test_the_incremental_values_are_the_ones_from_scratch_in_seeded_games() -> None:
    """The rounded weights' values from scratch, also for moves that flip more discs than the
    update adds up without a loop (`patvector.FIRST_FLIPS`)."""
    shipped = pt.load()
    wide = _random_weights(2, wide=True)
    passes = 0
    most = 0
    for seed in range(150):
        for w in (shipped, _random_weights(1), wide):
            _check(seed, 60, seed % 2, w)  # the search's first ply is 0 or 1
        me, opp, moves = _game(seed, 60)
        passes += int(np.count_nonzero(moves[:-1] == PASS))
        for m, o, move in zip(me[:-1], opp[:-1], moves[:-1], strict=True):
            if move != PASS:
                most = max(most, bin(int(flips(m, o, move))).count("1"))
    assert passes > 0  # some games pass on the way
    assert most > FIRST_FLIPS + 1


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 60), st.integers(0, 1))
def test_the_incremental_values_are_the_ones_from_scratch(
    seed: int, plies: int, start: int
) -> None:
    _check(seed, plies, start, _random_weights(seed % 7, wide=seed % 2 == 1))


def test_the_rounded_weights_move_a_value_by_rounding_only() -> None:
    """`quantize` rounds each phase's tables to the finest unit that keeps them within int16,
    leaves rounded weights as they are, and moves the shipped evaluation by at most two
    hundredths of a disc (46 weights, each moved by at most 2**-12 discs)."""
    raw = pt.load()
    with np.load(pt.DATA) as data:
        exact = np.asarray(data["weights"], dtype=np.float32)
    q = pt.quantize(exact)
    assert np.array_equal(raw, q) and np.array_equal(pt.quantize(q), q)
    assert not q.flags.writeable
    assert np.array_equal(q[:, pt.TABLE :], exact[:, pt.TABLE :])
    sw = pt.search_weights(exact)
    units = sw.terms[:, 2]
    for p in range(pt.PHASES):
        counts = q[p, : pt.TABLE].astype(np.float64) / units[p]
        assert np.array_equal(counts, np.round(counts))
        assert 16384 <= np.abs(counts).max() <= 32767  # the finest unit that fits
        assert np.abs(q[p, : pt.TABLE] - exact[p, : pt.TABLE]).max() <= units[p] / 2
    assert (units <= 2.0**-11).all()
    moved = []
    for seed in range(40):
        me, opp, moves = _game(seed, 60)
        _, before = _walk(me, opp, moves, exact, sw.tables, sw.terms, 0)
        _, after = _walk(me, opp, moves, q, sw.tables, sw.terms, 0)
        moved.append(np.abs(after - before))
    diff = np.concatenate(moved)
    assert diff.max() <= 2 and np.count_nonzero(diff) < 0.2 * diff.size


def test_the_search_weights_read_a_position_from_either_side() -> None:
    w = _random_weights(3)
    q = pt.quantize(w)
    sw = pt.search_weights(w)
    assert sw.tables.shape == (2 * pt.PHASES, pt.TABLE + 1) and sw.tables.dtype == np.int16
    assert not sw.tables.flags.writeable and not sw.terms.flags.writeable
    assert (sw.tables[:, 0] == 0).all()  # the column a first weight's gather reads below it
    units = np.concatenate([sw.terms[:, 2], sw.terms[:, 2]])[:, None]
    assert np.array_equal(sw.tables[: pt.PHASES, 1:] * units[: pt.PHASES], q[:, : pt.TABLE])
    # corner3x3 with only its first square (a1) taken: digit 1 one way is digit 2 the other
    first = 1 + 3**8
    assert sw.tables[pt.PHASES + 4, first] == sw.tables[4, 2 * first - 1]
    assert sw.tables[pt.PHASES + 4, 2 * first - 1] == sw.tables[4, first]
    assert np.array_equal(sw.terms[:, :2], q[:, pt.TABLE : pt.WEIGHTS])


@njit(cache=False)
def _sums(
    idx: npt.NDArray[np.uint16], tables: npt.NDArray[np.int16]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per row of `idx` and table row: the sum the leaves use, and the one weight by one."""
    rows = idx.shape[0] * tables.shape[0]
    fast = np.empty(rows, dtype=np.int64)
    plain = np.empty(rows, dtype=np.int64)
    for ply in range(idx.shape[0]):
        for r in range(tables.shape[0]):
            fast[ply * tables.shape[0] + r] = pt._sum(idx, ply, tables, r)
            plain[ply * tables.shape[0] + r] = pt._table_sum(idx, ply, tables, r)
    return fast, plain


def test_the_leaf_sum_adds_the_weights_of_every_instance() -> None:
    """The leaves' sum (by gathers on AVX-512) is the plain one, for the largest and smallest
    indices too (the first and last weights of a table, the last of the last row)."""
    rng = np.random.default_rng(5)
    sizes = pt.INST_LEN
    idx = np.zeros((40, pt.ROW), dtype=np.uint16)
    idx[:, : pt.N_INST] = rng.integers(0, 3**sizes, size=(40, pt.N_INST))
    idx[0, : pt.N_INST] = 0
    idx[1, : pt.N_INST] = 3**sizes - 1
    tables = rng.integers(-32767, 32768, size=(4, pt.TABLE + 1)).astype(np.int16)
    tables[:, 0] = 0
    tables.setflags(write=False)
    fast, plain = _sums(idx, tables)
    assert np.array_equal(fast, plain)
    expected = sum(int(tables[3, 1 + pt.INST_OFF[i] + 3 ** sizes[i] - 1]) for i in range(pt.N_INST))
    assert plain[1 * 4 + 3] == expected


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
