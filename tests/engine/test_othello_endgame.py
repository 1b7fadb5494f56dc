"""The exact Othello endgame solver (`engine/agents/othello/endgame.py`) and the agents using it.

Checked against the FFO answers (every move's published score for #1-#19, 14-16 empties), a slow
pure-Python negamax over the reference board of `tests/reference/othello_reference.py` (nothing
shared with the bitboards) on random small endgames, the win/draw/loss window, the stable discs
against random continuations, the time budget and determinism.
"""

from __future__ import annotations

import functools
import random
import time
from pathlib import Path

import numpy as np
import pytest

from engine.agents.base import Budget
from engine.agents.othello import endlast
from engine.agents.othello.minimax import OthelloMinimax
from engine.agents.othello.search import OthelloSearch, OutOfBudget
from engine.games.othello import PASS, OthelloState
from engine.games.othkernels import flips
from tests.machine import scaled
from tests.reference.othello_reference import RefBoard

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Compile or load the solver's kernels once, outside any timed assertion."""
    search = OthelloSearch(tt_bits=10, eg_bits=10)
    search.reset(None, None)
    for row in ffo_rows()[:1]:
        s = OthelloState.from_notation(f"{row[1]} {row[2]}")
        search.solve(s.me, s.opp)
    OthelloMinimax().choose(random_state(random.Random(1), 12), Budget(time=0.5), random.Random(0))


def ffo_rows() -> list[list[str]]:
    return [line.split("\t") for line in (DATA / "ffo_1_19.tsv").read_text().splitlines()[1:]]


def random_state(rng: random.Random, empties: int) -> OthelloState:
    """A random-game position with `empties` empty squares that is not over."""
    while True:
        state = OthelloState.new()
        while not state.is_over() and 64 - sum(state.disc_counts()) > empties:
            state = state.play(rng.choice(state.legal_moves()))
        if not state.is_over() and 64 - sum(state.disc_counts()) == empties:
            return state


def solve(state: OthelloState, search: OthelloSearch | None = None) -> tuple[int, int]:
    search = search or OthelloSearch(tt_bits=10, eg_bits=16)
    search.reset(None, None)
    return search.solve(state.me, state.opp)


# -- against the published answers ------------------------------------------------------------


@pytest.mark.parametrize("row", ffo_rows(), ids=lambda r: f"ffo{r[0]}")
def test_ffo_1_to_19_scores_and_moves(row: list[str]) -> None:
    _id, cells, side, _empties, score, best = row
    s = OthelloState.from_notation(f"{cells} {side}")
    got, move = solve(s)
    assert got == int(score)
    assert s.move_to_str(move) in best.split(",")


def test_every_move_of_ffo_1_to_19_has_its_published_score() -> None:
    # fforum-1-19.obf lists the exact score of each move: the solver on the position after it
    search = OthelloSearch(tt_bits=10, eg_bits=18)
    rows = [line.split("\t") for line in (DATA / "ffo_1_19_moves.tsv").read_text().splitlines()]
    checked = 0
    for _id, cells, side, move, score in rows[1:]:
        s = OthelloState.from_notation(f"{cells} {side}")
        child = s.play(s.parse_move(move))
        got, _ = solve(child, search)
        assert -got == int(score), (_id, move)
        checked += 1
    assert checked == 145


# -- against a slow reference -----------------------------------------------------------------


@functools.cache
def ref_score(board: RefBoard) -> int:
    """Plain negamax over the reference board: the final disc difference for the side to move,
    empties to the winner."""
    moves = board.legal_moves()
    if not moves:
        x, o = board.count("X"), board.count("O")
        diff = (x - o) if board.side == 0 else (o - x)
        empty = 64 - x - o
        return diff + empty if diff > 0 else (diff - empty if diff < 0 else 0)
    return max(-ref_score(board.play(m)) for m in moves)


def to_ref(state: OthelloState) -> RefBoard:
    return RefBoard.from_bitboards(state.black, state.white, state.side)


def test_solver_agrees_with_the_reference_on_random_small_endgames() -> None:
    rng = random.Random(11)
    search = OthelloSearch(tt_bits=10, eg_bits=14)
    for empties in [1, 2, 3, 4, 5, 6, 7, 8] * 3:
        s = random_state(rng, empties)
        got, move = solve(s, search)
        ref = to_ref(s)
        exact = ref_score(ref)
        assert got == exact, (s.to_notation(), got, exact)
        if move == PASS:
            assert ref.legal_moves() == [PASS]
        else:
            assert -ref_score(ref.play(move)) == exact


def test_solver_agrees_with_the_reference_through_passes() -> None:
    rng = random.Random(23)
    search = OthelloSearch(tt_bits=10, eg_bits=14)
    checked = 0
    while checked < 6:
        s = random_state(rng, rng.randint(4, 8))
        if not any(s.play(m).legal_moves() == [PASS] for m in s.legal_moves() if m != PASS):
            continue
        assert solve(s, search)[0] == ref_score(to_ref(s))
        checked += 1


def test_windows_bound_the_exact_score() -> None:
    # fail-soft: a score outside the window is a bound on the same side; inside, it is exact
    rng = random.Random(5)
    search = OthelloSearch(tt_bits=10, eg_bits=16)
    for _ in range(12):
        s = random_state(rng, rng.randint(8, 14))
        exact, _ = solve(s, search)
        for alpha, beta in ((-1, 1), (exact - 1, exact + 1), (exact + 1, exact + 3), (-64, -40)):
            search.reset(None, None)
            got, _ = search.solve(s.me, s.opp, alpha, beta)
            if got <= alpha:
                assert exact <= got
            elif got >= beta:
                assert exact >= got
            else:
                assert got == exact


def test_stable_discs_never_flip() -> None:
    rng = random.Random(9)
    table = endlast.edge_table()
    marked = 0
    for _ in range(60):
        s = random_state(rng, rng.randint(4, 30))
        me, opp = np.uint64(s.me), np.uint64(s.opp)
        mine = int(endlast.stable_discs(me, opp, table))
        theirs = int(endlast.stable_discs(opp, me, table))
        assert mine & ~s.me == 0 and theirs & ~s.opp == 0
        marked += mine.bit_count() + theirs.bit_count()
        for _ in range(10):
            t = s
            while not t.is_over():
                t = t.play(rng.choice(t.legal_moves()))
                owner_me = t.me if t.side == s.side else t.opp
                owner_opp = t.opp if t.side == s.side else t.me
                assert mine & ~owner_me == 0
                assert theirs & ~owner_opp == 0
    assert marked > 100


def test_last_flip_counts_match_the_flips() -> None:
    # the table count of the last move against the full flip, on random full boards
    rng = random.Random(17)
    for _ in range(3000):
        sq = rng.randrange(64)
        me = rng.getrandbits(64) & ~(1 << sq)
        opp = ~me & ~(1 << sq) & (1 << 64) - 1
        f = int(flips(np.uint64(me), np.uint64(opp), sq))
        assert endlast.count_last_flip(np.uint64(me), sq) == f.bit_count()


# -- the agents -------------------------------------------------------------------------------


def test_the_agent_solves_twenty_empties_exactly_when_set_to() -> None:
    rng = random.Random(31)
    s = random_state(rng, 20)
    d = OthelloMinimax(endgame_empties=20).choose(s, Budget(time=60.0), random.Random(0))
    assert d.info["exact"] is True
    exact, _ = solve(s, OthelloSearch(tt_bits=10, eg_bits=20))
    assert d.score == exact
    assert -solve(s.play(d.move), OthelloSearch(tt_bits=10, eg_bits=20))[0] == exact


def test_no_endgame_move_goes_over_the_time_budget() -> None:
    # the solve is interrupted (20-24 empties at 0.1 s) or finishes (16 empties): never late
    rng = random.Random(41)
    positions = [random_state(rng, e) for e in (24, 22, 20, 18, 16)]
    agent = OthelloMinimax()
    for budget in (0.1, 0.3):
        for s in positions:
            t0 = time.perf_counter()
            d = agent.choose(s, Budget(time=budget), random.Random(0))
            elapsed = time.perf_counter() - t0
            assert elapsed <= budget + scaled(0.05), (s.to_notation(), budget, elapsed)
            assert d.move in s.legal_moves()


def test_an_interrupted_solve_raises_and_the_search_recovers() -> None:
    rows = [line.split("\t") for line in (DATA / "ffo_40_44.tsv").read_text().splitlines()[1:]]
    s = OthelloState.from_notation(f"{rows[1][1]} {rows[1][2]}")  # FFO #41, 22 empties
    search = OthelloSearch(tt_bits=10, eg_bits=16)
    search.reset(time.perf_counter() + 0.05, None)
    with pytest.raises(OutOfBudget):
        search.solve(s.me, s.opp)
    small = random_state(random.Random(2), 6)
    assert solve(small, search)[0] == ref_score(to_ref(small))


def test_solves_and_agents_are_deterministic() -> None:
    rng = random.Random(51)
    states = [random_state(rng, e) for e in (18, 15, 12)]
    for s in states:
        a = solve(s, OthelloSearch(tt_bits=10, eg_bits=16))
        search = OthelloSearch(tt_bits=10, eg_bits=16)
        b = solve(s, search)
        assert a == b
        n1 = search.nodes
        assert solve(s, search) == a and search.nodes == n1  # a reused search starts afresh
        budget = Budget(nodes=3_000_000)
        da = OthelloMinimax().choose(s, budget, random.Random(7))
        db = OthelloMinimax().choose(s, budget, random.Random(7))
        assert (da.move, da.score, da.nodes, da.info["exact"]) == (
            db.move,
            db.score,
            db.nodes,
            db.info["exact"],
        )
