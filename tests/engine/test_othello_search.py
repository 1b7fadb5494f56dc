"""Othello search agents: evaluation, minimax, exact endgames, expectiminimax, weight grid.

Position-based and seeded: known positions with a known best move, FFO endgames with their
published exact scores, and random endgames checked against a plain brute-force negamax written
over the OthelloState API (nothing shared with the numba search).
"""

from __future__ import annotations

import functools
import pickle
import random
import time
from pathlib import Path

import numpy as np
import pytest

from engine.agents.base import Budget
from engine.agents.othello.evals import WIN, evaluate_state, stable_edges
from engine.agents.othello.minimax import OthelloExpectiminimax, OthelloMinimax
from engine.agents.othello.search import OthelloSearch
from engine.agents.othello.weightgrid import (
    DEFAULT_GRID,
    WeightGridAgent,
    capture_score,
    weight_capture_move,
)
from engine.games.othello import PASS, OthelloState
from tests.machine import scaled

FFO = Path(__file__).parents[1] / "data" / "ffo_1_19.tsv"


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Compile or load every kernel of the search once, outside any timed assertion."""
    search = OthelloSearch(tt_bits=10)
    state = OthelloState.from_notation(
        "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXOOOOOOOOOOOOOOOOOOOOO--- X"
    )
    search.reset(None, None)
    search.negamax(state.me, state.opp, 2)
    search.solve(state.me, state.opp)
    search.expectimax(state.me, state.opp, 1, 2)


def board(black: str, white: str, side: int = 0) -> OthelloState:
    """A state from space-separated square names."""
    sq = OthelloState.new()
    b = sum(1 << sq.parse_move(s) for s in black.split())
    w = sum(1 << sq.parse_move(s) for s in white.split())
    return OthelloState(b, w, side, 0)


def random_state(rng: random.Random, empties: int) -> OthelloState:
    """A random-game position with `empties` empty squares that is not over."""
    while True:
        state = OthelloState.new()
        while not state.is_over() and 64 - sum(state.disc_counts()) > empties:
            state = state.play(rng.choice(state.legal_moves()))
        if not state.is_over() and 64 - sum(state.disc_counts()) == empties:
            return state


def final_diff(state: OthelloState) -> int:
    """Final disc difference for the side to move, empties to the winner (FFO convention)."""
    outcome = state.outcome()
    assert outcome is not None
    assert outcome.score is not None
    b, w = outcome.score
    return (b - w) if state.side == 0 else (w - b)


@functools.cache
def brute(state: OthelloState) -> int:
    """Plain negamax over every move to the end: the exact score for the side to move."""
    moves = state.legal_moves()
    if not moves:
        return final_diff(state)
    return max(-brute(state.play(m)) for m in moves)


def ffo_rows() -> list[list[str]]:
    return [line.split("\t") for line in FFO.read_text().splitlines()[1:]]


# -- evaluation -------------------------------------------------------------------------------


def test_evaluation_is_antisymmetric_under_colour_swap() -> None:
    rng = random.Random(7)
    for empties in (56, 44, 30, 16, 6):
        for _ in range(10):
            s = random_state(rng, empties)
            assert evaluate_state(s.me, s.opp) == -evaluate_state(s.opp, s.me)


def test_evaluation_scores_finished_games_exactly() -> None:
    # black wipes white out with 59 empties left: WIN + 5 + 59 for black, negated for white
    won = board("a1 b1 c1 d1 e1", "")
    assert evaluate_state(won.me, won.opp) == WIN + 64
    assert evaluate_state(won.opp, won.me) == -(WIN + 64)


def test_evaluation_prefers_a_corner_and_dislikes_x_squares() -> None:
    base = board("d4 e5", "d5 e4")
    corner = board("d4 e5 a1", "d5 e4")
    x_square = board("d4 e5 b2", "d5 e4")
    score = evaluate_state(base.me, base.opp)
    assert evaluate_state(corner.me, corner.opp) > score + 500
    assert evaluate_state(x_square.me, x_square.opp) < score


def test_stable_edges_runs_from_owned_corners() -> None:
    s = board("a1 b1 c1 e1 a2", "d1 h1 g1")
    stable = stable_edges(np.uint64(s.black), np.uint64(s.white))
    names = {OthelloState.new().move_to_str(q) for q in range(64) if int(stable) >> q & 1}
    assert names == {"a1", "b1", "c1", "a2"}
    stable_w = stable_edges(np.uint64(s.white), np.uint64(s.black))
    assert int(stable_w) == (1 << 7) | (1 << 6)


# -- minimax ----------------------------------------------------------------------------------


def test_minimax_takes_the_corner() -> None:
    s = board("d4 e4 d5", "e5 c3 b2")
    assert s.legal_mask() & 1  # a1 is legal
    for depth in (1, 2, 3, 4):
        d = OthelloMinimax().choose(s, Budget(depth=depth), random.Random(0))
        assert s.move_to_str(d.move) == "a1", depth


def test_minimax_plays_a_move_that_wins_at_once() -> None:
    # Black f4 flips d4 and e4: white has no disc left and black wins at once; d3 and f3 flip
    # one disc each and the game goes on. Then the same with the colours swapped.
    agent = OthelloMinimax(endgame_empties=0)  # the midgame search alone must see it
    for s in (board("c4 d5", "d4 e4"), board("d4 e4", "c4 d5", side=1)):
        wins = {m for m in s.legal_moves() if s.play(m).is_over()}
        assert {s.move_to_str(m) for m in wins} == {"f4"}
        assert len(s.legal_moves()) == 3
        for depth in (1, 2, 3):
            d = agent.choose(s, Budget(depth=depth), random.Random(0))
            assert s.move_to_str(d.move) == "f4"
            assert d.score is not None and d.score > WIN


@pytest.mark.parametrize("row", ffo_rows()[:7], ids=lambda r: f"ffo{r[0]}")
def test_solver_matches_ffo_scores(row: list[str]) -> None:
    _id, cells, side, _empties, score, best = row
    s = OthelloState.from_notation(f"{cells} {side}")
    search = OthelloSearch(tt_bits=18)
    search.reset(None, None)
    got, move = search.solve(s.me, s.opp)
    assert got == int(score)
    assert s.move_to_str(move) in best.split(",")


def test_agent_solves_an_ffo_endgame_within_its_budget() -> None:
    _id, cells, side, _e, score, best = ffo_rows()[0]
    s = OthelloState.from_notation(f"{cells} {side}")
    d = OthelloMinimax().choose(s, Budget(time=3.0), random.Random(0))
    assert d.info["exact"] is True
    assert d.score == int(score)
    assert s.move_to_str(d.move) in best.split(",")


def test_solver_agrees_with_brute_force_on_random_endgames() -> None:
    rng = random.Random(3)
    search = OthelloSearch(tt_bits=14)
    for _ in range(12):
        s = random_state(rng, 7)
        search.reset(None, None)
        got, move = search.solve(s.me, s.opp)
        exact = brute(s)
        assert got == exact
        assert move == PASS or -brute(s.play(move)) == exact


def test_midgame_search_to_the_end_agrees_with_the_solver() -> None:
    # Two different kernels (eval search at full depth vs. the endgame solver) on 10 empties.
    rng = random.Random(5)
    search = OthelloSearch(tt_bits=16)
    for _ in range(6):
        s = random_state(rng, 10)
        search.reset(None, None)
        solved, _ = search.solve(s.me, s.opp)
        search.reset(None, None)
        score, _ = search.negamax(s.me, s.opp, 24)
        proven = score - WIN if score > 0 else (score + WIN if score < 0 else 0)
        assert proven == solved


def test_passes_are_moves() -> None:
    # White to move has no legal move but black does: white must pass.
    must_pass = board("a1 b1", "c1 a3", side=1)
    assert must_pass.legal_moves() == [PASS]
    d = OthelloMinimax().choose(must_pass, Budget(depth=3), random.Random(0))
    assert d.move == PASS
    # A position whose solution runs through passes: brute force and the solver agree.
    rng = random.Random(17)
    search = OthelloSearch(tt_bits=12)
    checked = 0
    while checked < 3:
        s = random_state(rng, 6)
        if not any(s.play(m).legal_moves() == [PASS] for m in s.legal_moves() if m != PASS):
            continue
        search.reset(None, None)
        assert search.solve(s.me, s.opp)[0] == brute(s)
        checked += 1


def test_minimax_is_deterministic_and_pickles() -> None:
    rng = random.Random(21)
    states = [random_state(rng, e) for e in (50, 40, 30)]
    a, b = OthelloMinimax(), OthelloMinimax()
    for s in states:
        da = a.choose(s, Budget(depth=5), random.Random(1))
        db = b.choose(s, Budget(depth=5), random.Random(1))
        assert (da.move, da.score, da.nodes) == (db.move, db.score, db.nodes)
    clone = pickle.loads(pickle.dumps(a))
    assert len(pickle.dumps(a)) < 2000  # tables are not pickled
    dc = clone.choose(states[0], Budget(depth=5), random.Random(1))
    da = a.choose(states[0], Budget(depth=5), random.Random(1))
    assert (dc.move, dc.score) == (da.move, da.score)


def test_unknown_eval_is_an_error() -> None:
    with pytest.raises(ValueError, match="standard"):
        OthelloMinimax(eval="nonsense")
    with pytest.raises(ValueError, match="standard"):
        OthelloExpectiminimax(eval="nonsense")


@pytest.mark.parametrize("agent_cls", [OthelloMinimax, OthelloExpectiminimax])
def test_no_move_goes_over_the_time_budget(agent_cls: type) -> None:
    rng = random.Random(9)
    positions = [random_state(rng, e) for e in (58, 45, 35, 24, 18, 15)]
    _id, cells, side, *_ = ffo_rows()[12]  # 16 empties
    positions.append(OthelloState.from_notation(f"{cells} {side}"))
    agent = agent_cls()
    for budget in (0.05, 0.25):
        for s in positions:
            t0 = time.perf_counter()
            d = agent.choose(s, Budget(time=budget), random.Random(0))
            elapsed = time.perf_counter() - t0
            assert elapsed <= budget + scaled(0.05), (s.to_notation(), elapsed)
            assert d.move in s.legal_moves()


def test_node_budget_is_honoured() -> None:
    s = random_state(random.Random(4), 40)
    d = OthelloMinimax().choose(s, Budget(nodes=5000), random.Random(0))
    assert d.nodes <= 5000 + 64
    assert d.move in s.legal_moves()


# -- expectiminimax ---------------------------------------------------------------------------


def test_expectiminimax_plays_the_corner_deterministically() -> None:
    s = board("d4 e4 d5", "e5 c3 b2")
    d = OthelloExpectiminimax().choose(s, Budget(depth=3), random.Random(0))
    assert s.move_to_str(d.move) == "a1"
    assert d.info["line"] == "minimax"
    assert d.info["decisive"] == "corner"
    assert "force_random_reply" not in d.info


def test_expectiminimax_lines_and_flags() -> None:
    rng = random.Random(13)
    agent = OthelloExpectiminimax()
    lines = set()
    for _ in range(30):
        s = random_state(rng, rng.randint(30, 56))
        d = agent.choose(s, Budget(depth=3), random.Random(2))
        assert d.move in s.legal_moves()
        lines.add(d.info["line"])
        if d.info["line"] == "chance":
            assert d.info["force_random_reply"] is True
            assert d.info["expectation"] > d.info["minimax"]
        else:
            assert d.info["line"] == "minimax"
            assert "force_random_reply" not in d.info
    assert lines == {"chance", "minimax"}


def test_expectiminimax_without_chance_plies_is_minimax() -> None:
    rng = random.Random(15)
    for _ in range(5):
        s = random_state(rng, 44)
        e = OthelloExpectiminimax(chance_plies=0).choose(s, Budget(depth=3), random.Random(0))
        m = OthelloMinimax().choose(s, Budget(depth=3), random.Random(0))
        assert e.info["line"] == "minimax"
        assert e.move == m.move


def test_expectiminimax_is_deterministic() -> None:
    rng = random.Random(19)
    states = [random_state(rng, e) for e in (54, 46, 38, 30)]
    da = [OthelloExpectiminimax().choose(s, Budget(depth=3), random.Random(5)) for s in states]
    db = [OthelloExpectiminimax().choose(s, Budget(depth=3), random.Random(5)) for s in states]
    assert [(d.move, d.score, d.info["line"]) for d in da] == [
        (d.move, d.score, d.info["line"]) for d in db
    ]


# -- weight grid ------------------------------------------------------------------------------


def test_capture_score_sums_the_flipped_squares_only() -> None:
    # Black c1 flips b1 (a C-square, -20); black d3 flips d2 (-2) and c2 (-2).
    s = board("a1 d1 b4", "b1 d2 c3")
    moves = {s.move_to_str(m): capture_score(s, m, DEFAULT_GRID) for m in s.legal_moves()}
    for m in s.legal_moves():
        flipped = [q for q in range(64) if s.flips(m) >> q & 1]
        assert capture_score(s, m, DEFAULT_GRID) == sum(DEFAULT_GRID.reshape(64)[flipped])
    best, score = weight_capture_move(s, DEFAULT_GRID)
    assert score == max(moves.values())
    assert s.move_to_str(best) == max(moves, key=lambda k: (moves[k], -s.parse_move(k)))


def test_weight_capture_prefers_valuable_squares_to_many_discs() -> None:
    # e1 flips one edge disc (d1: +5); f4 flips two inner discs (d4, e4: -1 each).
    s = board("c1 c4", "d1 d4 e4")
    flips = {s.move_to_str(m): s.flips(m).bit_count() for m in s.legal_moves()}
    assert flips == {"e1": 1, "f4": 2}
    move, score = weight_capture_move(s, DEFAULT_GRID)
    assert (s.move_to_str(move), score) == ("e1", 5.0)


def test_weightgrid_agent_mixes_capture_and_greedy() -> None:
    rng = random.Random(23)
    states = [random_state(rng, e) for e in range(56, 20, -3)]
    always = WeightGridAgent(capture_share=1.0)
    never = WeightGridAgent(capture_share=0.0)
    for s in states:
        assert always.choose(s, Budget(), random.Random(0)).info["strategy"] == "weight_capture"
        assert never.choose(s, Budget(), random.Random(0)).info["strategy"] == "greedy-random"
    mixed = WeightGridAgent()
    picks = random.Random(1)
    used = [mixed.choose(states[0], Budget(), picks).info["strategy"] for _ in range(400)]
    assert 40 < used.count("weight_capture") < 120  # about 20%
    first = [mixed.choose(s, Budget(), random.Random(8)).move for s in states]
    again = [
        pickle.loads(pickle.dumps(mixed)).choose(s, Budget(), random.Random(8)).move for s in states
    ]
    assert first == again
    with pytest.raises(ValueError, match="grid"):
        WeightGridAgent(grid="learned:nothing")


def test_weightgrid_is_registered() -> None:
    from engine.agents import registry

    spec, _budget = registry.resolve("weightgrid:capture_share=0.5", "othello")
    agent = registry.build(spec, "othello")
    assert isinstance(agent, WeightGridAgent) and agent.capture_share == 0.5
    with pytest.raises(ValueError):
        registry.resolve("weightgrid", "connect4")
