"""Connect Four exact at every ply: the 12-disc database read by our own code, the expert at
the edges of the books, and analyses that leave no move unjudged."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4 import book, edge
from engine.agents.connect4 import solver as sv
from engine.analysis import analyse
from engine.games.connect4 import Connect4State
from tests.machine import scaled

# Two positions of 12 discs from the database's documentation, rows top down, 1 the first
# player's discs, 2 the second's: the first player wins with the 29th disc from now (value 71),
# and loses to the second player's 12th disc from now (value -88).
WON = ["0000000", "0001000", "0102000", "0201020", "0102010", "0201020"]
LOST = ["0000000", "0000000", "0011000", "0022000", "0121000", "0112022"]


def moves_for(grid: list[str]) -> str:
    """A move order (columns from 1) that builds the grid, the first player starting."""
    columns = ["".join(row[c] for row in reversed(grid)).rstrip("0") for c in range(7)]
    total = sum(len(col) for col in columns)

    def walk(state: Connect4State, heights: list[int]) -> str | None:
        if state.ply == total:
            return state.to_notation()
        want = "1" if state.ply % 2 == 0 else "2"
        for c in range(7):
            if heights[c] < len(columns[c]) and columns[c][heights[c]] == want:
                child = state.play(c)
                if not child.is_over():
                    heights[c] += 1
                    found = walk(child, heights)
                    heights[c] -= 1
                    if found:
                        return found
        return None

    found = walk(Connect4State.new(), [0] * 7)
    assert found is not None
    return found


@pytest.fixture
def no_books() -> Iterator[None]:
    sv.use_books(opening=False, edge=False)
    yield
    sv.use_books(opening=True, edge=True)


def test_the_database_reader_on_known_positions() -> None:
    data = edge.data()
    assert data.shape[0] == 5 * 4200899  # the package's 12-ply file with distances
    won = Connect4State.from_moves(moves_for(WON))
    lost = Connect4State.from_moves(moves_for(LOST))
    # Value 71: a win with disc 12 + 29 = 41 of the game, Pons' score (44 - 41) // 2 = 1.
    assert edge.lookup(data, np.uint64(won.current), np.uint64(won.mask)) == 1
    # Value -88: the opponent's 24th disc, -(44 - 24) // 2 = -10.
    assert edge.lookup(data, np.uint64(lost.current), np.uint64(lost.mask)) == -10
    mirror = Connect4State.from_moves("".join(str(8 - int(c)) for c in moves_for(LOST)))
    assert edge.lookup(data, np.uint64(mirror.current), np.uint64(mirror.mask)) == -10
    # Not 12 discs, or the side to move wins at once: not in the file.
    eleven = Connect4State.from_moves(moves_for(LOST)[:-1])
    assert edge.lookup(data, np.uint64(eleven.current), np.uint64(eleven.mask)) == edge.MISSING


def test_the_database_agrees_with_the_search_alone(no_books: None) -> None:
    won = Connect4State.from_moves(moves_for(WON))
    lost = Connect4State.from_moves(moves_for(LOST))
    assert (sv.solve(won), sv.solve(lost)) == (1, -10)


def _random_position(rng: random.Random, ply: int) -> Connect4State:
    while True:
        state = Connect4State.new()
        for _ in range(ply):
            state = state.play(rng.choice(state.legal_moves()))
            if state.is_over():
                break
        else:
            if not state.winning_moves() and not sv.every_move_loses(state):
                return state


def test_the_expert_plays_the_best_score_at_the_edges_of_the_books() -> None:
    rng = random.Random(7)
    edges = [book.BOOK_PLY, book.BOOK_PLY + 1, edge.PLY - 1, edge.PLY, edge.PLY + 1]
    positions = [_random_position(rng, ply) for ply in edges for _ in range(2)]
    # The reference values come from the search alone below the opening book (it is what the
    # expert reads there), and from the search alone near the database.
    reference = {}
    for state in positions:
        near_edge = state.ply >= edge.PLY - 1
        sv.use_books(opening=False, edge=not near_edge)
        reference[state.to_notation()] = {col: _value(state, col) for col in state.legal_moves()}
    sv.use_books(opening=True, edge=True)
    agent = registry.build(registry.resolve("perfect", "connect4")[0], "connect4")
    agent.choose(Connect4State.from_moves("44"), Budget(time=0.9), random.Random(0))  # loads
    for state in positions:
        values = reference[state.to_notation()]
        decision = agent.choose(state, Budget(time=0.9), random.Random(0))
        assert decision.info["reason"] in ("solved", "only move"), state.to_notation()
        # The fastest win, the draw, or the longest defence: the best exact score.
        assert values[decision.move] == max(values.values()), state.to_notation()


def _value(state: Connect4State, col: int) -> int:
    """The exact Pons score of playing `col`, for the side to move."""
    child = state.play(col)
    result = child.outcome()
    if result is not None:
        return 0 if result.winner is None else (42 + 1 - state.ply) // 2
    return -sv.solve(child)


def _thrown_win(rng: random.Random, ply: int) -> tuple[str, str] | None:
    """(moves to a won position of `ply` discs, a column that throws the win), if found."""
    for _ in range(50):
        state = _random_position(rng, ply)
        if sv.solve(state) <= 0:
            continue
        for col in state.legal_moves():
            child = state.play(col)
            if not child.is_over() and sv.solve(child) >= 0:
                return state.to_notation(), str(col + 1)
    return None


def test_a_thrown_win_is_found_at_every_ply() -> None:
    rng = random.Random(3)
    found = 0
    for ply in range(0, 36):
        thrown = _thrown_win(rng, ply)
        if thrown is None:
            continue
        moves, bad = thrown
        a = analyse("connect4", [*moves, bad], budget=scaled(2.0))
        last = a.moves[-1]
        assert last.outcome_before == "win" and last.verdict in ("blunder", "miss"), moves
        assert last.exact and last.best is not None and last.best != bad
        assert all(r.verdict != "unsure" for r in a.moves), moves
        found += 1
    assert found >= 30


def test_a_short_game_analysis_has_no_unsure_move() -> None:
    for moves in ("4453", "44444", "4444443"):
        a = analyse("connect4", list(moves), budget=scaled(1.0))
        assert [r.verdict for r in a.moves if r.verdict == "unsure"] == [], moves
        assert all(r.exact and r.best is not None and r.best_in for r in a.moves), moves
