"""Pascal Pons' solver against his published test sets, and the agents built on it."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.agents import registry
from engine.agents.base import Budget, Limits
from engine.agents.connect4 import solver as c4solver
from engine.games.connect4 import Connect4State
from tests.machine import scaled

DATA = Path(__file__).parents[1] / "data"


def load(name: str) -> list[tuple[str, int]]:
    out = []
    for line in (DATA / name).read_text().splitlines():
        if line.strip():
            moves, score = line.split()
            out.append((moves, int(score)))
    return out


# Pons' sets: Test_L3_R1 (End-Easy), Test_L2_R1 (Middle-Easy), Test_L1_R1 (Begin-Easy).
END = load("pons_end_easy.txt")
MIDDLE = load("pons_middle_easy.txt")
BEGIN = load("pons_begin_easy.txt")
ALL = END + MIDDLE + BEGIN


def sign(x: int) -> int:
    return (x > 0) - (x < 0)


def move_value(state: Connect4State, col: int) -> int:
    """Exact Pons score of playing `col`, for the side to move."""
    child = state.play(col)
    if child.is_over():
        outcome = child.outcome()
        assert outcome is not None
        return 0 if outcome.winner is None else (state.rows * state.cols + 1 - state.ply) // 2
    return -c4solver.solve(child)


@pytest.fixture
def no_books() -> Iterator[None]:
    """The solver without its opening book and 12-disc database: early positions take seconds
    again, for the tests of what happens when a budget runs out."""
    c4solver.use_books(opening=False, edge=False)
    yield
    c4solver.use_books(opening=True, edge=True)


def test_fixtures_cover_the_three_easy_sets() -> None:
    assert len(END) >= 20 and len(MIDDLE) >= 20 and len(BEGIN) >= 5


@pytest.mark.parametrize(("moves", "score"), ALL)
def test_exact_scores_match_pons(moves: str, score: int) -> None:
    state = Connect4State.from_moves(moves)
    assert c4solver.solve(state) == score
    assert c4solver.solve_weak(state) == sign(score)


@pytest.mark.parametrize(("moves", "score"), END + MIDDLE[:10])
def test_best_moves_are_exactly_the_moves_keeping_the_score(moves: str, score: int) -> None:
    state = Connect4State.from_moves(moves)
    got, best = c4solver.best_moves(state)
    assert got == score
    values = {col: move_value(state, col) for col in state.legal_moves()}
    assert best == sorted(c for c, v in values.items() if v == score)
    assert max(values.values()) == score


def test_a_begin_easy_position_has_a_single_best_column() -> None:
    moves, score = BEGIN[0]
    got, best = c4solver.best_moves(Connect4State.from_moves(moves))
    assert got == score and len(best) >= 1


@pytest.mark.parametrize(("moves", "score"), END[:10] + MIDDLE[:10] + BEGIN[:3])
def test_solver_agent_plays_a_best_move(moves: str, score: int) -> None:
    state = Connect4State.from_moves(moves)
    # The exact answer is the point here: no ceiling (by default the solver gets 5 s a move).
    spec, budget = registry.resolve("solver", "connect4", limits=Limits.none())
    decision = registry.build(spec, "connect4").choose(state, budget, random.Random(0))
    assert decision.score == score
    assert move_value(state, decision.move) == score


@pytest.mark.parametrize(("moves", "score"), END[:10] + MIDDLE + BEGIN[:3])
def test_perfect_agent_keeps_the_outcome(moves: str, score: int) -> None:
    state = Connect4State.from_moves(moves)
    spec, budget = registry.resolve("perfect", "connect4")
    assert budget == Budget(time=0.9)
    decision = registry.build(spec, "connect4").choose(state, budget, random.Random(0))
    assert sign(move_value(state, decision.move)) == sign(score)


def test_perfect_agent_solves_every_early_position_within_its_budget() -> None:
    spec, _ = registry.resolve("perfect", "connect4")
    agent = registry.build(spec, "connect4")
    # The opening book and the 12-disc database leave little to search: every move is solved.
    for moves in ("", "435", "43344", "413526", "432516", "123456"):
        state = Connect4State.from_moves(moves)
        t0 = time.perf_counter()
        decision = agent.choose(state, Budget(time=0.25), random.Random(1))
        assert time.perf_counter() - t0 < 0.25 + scaled(0.05)
        assert decision.info["reason"] in ("solved", "win now", "only move"), moves
        if decision.info["reason"] == "solved":
            assert move_value(state, decision.move) == c4solver.solve(state), moves


def test_perfect_agent_respects_its_time_budget_without_books(no_books: None) -> None:
    spec, _ = registry.resolve("perfect", "connect4")
    agent = registry.build(spec, "connect4")
    # Without the books early positions take seconds to solve: the agent must still answer
    # within its budget (once its fallback's kernels are loaded: the books leave them unused).
    agent.choose(Connect4State.from_moves("4"), Budget(time=0.25), random.Random(1))
    reasons = set()
    for moves in ("", "435", "43344", "413526", "432516", "123456"):
        state = Connect4State.from_moves(moves)
        t0 = time.perf_counter()
        decision = agent.choose(state, Budget(time=0.25), random.Random(1))
        assert time.perf_counter() - t0 < 0.25 + scaled(0.05)
        assert decision.move in state.legal_moves()
        reasons.add(decision.info["reason"])
    assert "timeout" in reasons


def test_node_budget_and_deadline_give_up(no_books: None) -> None:
    empty = Connect4State.new()
    with pytest.raises(c4solver.BudgetExceeded):
        c4solver.solve(empty, max_nodes=10_000)
    t0 = time.perf_counter()
    with pytest.raises(c4solver.BudgetExceeded):
        c4solver.best_moves(empty, deadline=t0 + 0.05)
    assert time.perf_counter() - t0 < scaled(0.1)
    # The table keeps what the aborted searches proved: the answer is still exact afterwards.
    state = Connect4State.from_moves(MIDDLE[0][0])
    assert c4solver.solve(state) == MIDDLE[0][1]


def test_unsupported_variants_raise_a_clear_error() -> None:
    with pytest.raises(c4solver.UnsupportedVariant):
        c4solver.solve(Connect4State.new(6, 7, 5))


def test_other_board_sizes_with_four_in_a_row() -> None:
    # On a 4x4 board nobody can force four in a row: a draw.
    state = Connect4State.new(4, 4, 4)
    assert c4solver.solve(state) == 0
    # Back on 7x6 the table was cleared for the new size: scores are still exact.
    assert c4solver.solve(Connect4State.from_moves(END[0][0])) == END[0][1]


@pytest.mark.parametrize(("moves", "score"), END[:15] + MIDDLE[:15])
def test_probe_finds_a_move_above_each_threshold_exactly_when_one_exists(
    moves: str, score: int
) -> None:
    state = Connect4State.from_moves(moves)
    if state.winning_moves() or c4solver.every_move_loses(state):
        return  # probe's precondition: no win on the spot, some move that does not lose
    columns = c4solver.non_losing_moves(state)
    values = {col: move_value(state, col) for col in columns}
    for threshold in (0, -1):
        result = c4solver.probe(state, columns, threshold)
        assert result.complete
        if max(values.values()) > threshold:
            assert result.found is not None and values[result.found] > threshold
        else:
            assert result.found is None
        for col, verdict in result.verdicts.items():
            assert verdict == (1 if values[col] > threshold else -1)


def test_probe_reports_an_unfinished_search_and_rejects_full_columns(no_books: None) -> None:
    state = Connect4State.from_moves("1")
    result = c4solver.probe(state, [3, 2, 4], 0, deadline=time.perf_counter() + 0.01)
    assert not result.complete and result.found is None
    with pytest.raises(ValueError, match="column 1 is full"):
        c4solver.probe(Connect4State.from_moves("111111"), [0], 0)


def test_perfect_agent_stops_at_its_node_budget(no_books: None) -> None:
    spec, _ = registry.resolve("perfect", "connect4")
    agent = registry.build(spec, "connect4")
    state = Connect4State.from_moves("413526")  # past the opening book: a real search
    small = agent.choose(state, Budget(nodes=20_000, time=5.0), random.Random(0))
    big = agent.choose(state, Budget(nodes=2_000_000, time=5.0), random.Random(0))
    assert small.move in state.legal_moves() and big.move in state.legal_moves()
    assert small.nodes is not None and big.nodes is not None
    # Every search checks its count every 1024 nodes, so each may overrun a little.
    assert small.nodes <= 20_000 + 10 * 1024 < big.nodes <= 2_000_000 + 10 * 1024
    assert small.info["reason"] == "timeout"
