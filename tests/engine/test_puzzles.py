"""The puzzle pool (engine/puzzles): the shipped files read, a sample of shipped puzzles proven
again by the solvers, and the uniqueness rules that turn positions down."""

from __future__ import annotations

import dataclasses

import pytest

from engine.agents.connect4 import solver
from engine.games.connect4 import Connect4State
from engine.games.othello import PASS, OthelloState
from engine.puzzles import connect4 as c4puzzles
from engine.puzzles import difficulty, pool
from engine.puzzles import othello as othpuzzles
from engine.puzzles import proof as pf
from engine.puzzles.verify import position, verify

SAMPLE = 4  # shipped puzzles a game proven again here (the benchmark proves them all)


@pytest.mark.parametrize("game", pool.GAMES)
def test_the_shipped_pool_holds_puzzles_of_its_game(game: str) -> None:
    puzzles = pool.load_pool(game)
    assert puzzles, f"no shipped {game} puzzles"
    assert len({p.id for p in puzzles}) == len(puzzles)
    for p in puzzles:
        assert p.game == game and p.kind == pool.KINDS[game]
        assert p.id.startswith(pool.PREFIXES[game] + "-")
        assert p.line[0] == p.answer and 10.0 <= p.rating <= 40.0
        if game == "connect4":
            assert p.plies % 2 == 1 and 3 <= p.plies <= 15 and p.value == p.plies
            assert len(p.line) == p.plies
        else:
            assert 10 <= p.plies <= 16 and -64 <= p.value <= 64
    assert pool.load_pool(game) is puzzles  # read once


@pytest.mark.parametrize("game", pool.GAMES)
def test_a_sample_of_shipped_puzzles_is_proven_again_by_the_solver(game: str) -> None:
    puzzles = pool.load_pool(game)
    step = max(1, len(puzzles) // SAMPLE)
    for p in puzzles[::step][:SAMPLE]:
        assert verify(p) is None, p.id


def test_a_puzzle_is_found_by_its_id_and_an_unknown_game_is_refused() -> None:
    p = pool.load_pool("othello")[0]
    assert pool.puzzle_by_id(p.id) == p
    assert pool.puzzle_by_id("c4-000000000000") is None
    with pytest.raises(ValueError, match="no puzzles for 'chess'"):
        pool.load_pool("chess")


def test_a_puzzle_line_reads_back_what_was_written() -> None:
    p = pool.load_pool("connect4")[0]
    assert pool.from_line("connect4", pool.to_line(p)) == p
    with pytest.raises(ValueError, match="7 tab-separated fields"):
        pool.from_line("connect4", "c4-1\t4 4\t3")
    with pytest.raises(ValueError, match="starts with oth-"):
        pool.from_line("othello", pool.to_line(p))


def test_a_changed_puzzle_fails_its_verification() -> None:
    p = pool.load_pool("connect4")[0]
    wrong = next(c for c in "1234567" if c != p.answer)
    assert verify(dataclasses.replace(p, answer=wrong, line=(wrong, *p.line[1:]))) is not None
    assert verify(dataclasses.replace(p, id="c4-000000000000")) is not None
    o = pool.load_pool("othello")[0]
    assert verify(dataclasses.replace(o, value=o.value + 2)) is not None


def test_connect4_a_position_with_two_winning_moves_is_no_puzzle() -> None:
    # Column 5 wins in 3 plies, column 1 wins too, later: the fastest win is unique, but two
    # moves win, so the position is turned down.
    state = Connect4State.from_moves("177736561733566374")
    score, fastest = solver.best_moves(state)
    assert score > 0 and fastest == [4] and c4puzzles.win_plies(state, score) == 3
    assert c4puzzles.winning_moves(state) == [0, 4]
    assert c4puzzles.examine(state) == pf.NOT_UNIQUE


def test_connect4_a_win_in_n_with_one_winning_move_is_a_puzzle() -> None:
    p = pool.load_pool("connect4")[0]
    state = position(p)
    assert isinstance(state, Connect4State)
    assert c4puzzles.winning_moves(state) == [state.parse_move(p.answer)]
    proof = c4puzzles.examine(state)
    assert isinstance(proof, pf.Proof) and proof.answer == p.answer and proof.plies == p.plies


def test_connect4_positions_out_of_range_are_turned_down() -> None:
    assert c4puzzles.examine(Connect4State.from_moves("4444")) == pf.OUT_OF_RANGE  # far off
    assert c4puzzles.examine(Connect4State.from_moves("445566")) == pf.OUT_OF_RANGE  # a win in 1


def test_othello_two_moves_of_the_same_exact_value_are_no_puzzle() -> None:
    # 10 empties; f1, h2 and a3 all end 10 discs up.
    moves = (
        "e6 f4 d3 c6 c5 c2 b7 c4 f3 f7 c3 b3 d2 f6 g4 c7 d7 e2 d1 f5 f8 g3 b5 d6 a2 a4 g2 g5 h4 "
        "g6 b1 b8 h7 a7 e7 h5 a8 a5 c8 e3 h6 g7 b6 a6 d8 c1 e8 g1 h1 a1"
    )
    state = _othello(moves)
    search = othpuzzles.shared_search()
    values = {
        state.move_to_str(m): -othpuzzles.value(search, state.play(m)) for m in state.legal_moves()
    }
    assert max(values.values()) == 10 and sorted(values.values()).count(10) == 3
    assert othpuzzles.examine(state) == pf.NOT_UNIQUE


ONE_MOVE = (  # 10 empties, one legal move
    "e6 d6 c7 f5 f4 d3 c4 f3 c2 d7 d8 b8 b7 d2 g4 b2 c6 h5 f2 g5 g6 e2 f1 g7 h3 b4 h6 c5 a4 d1 g2 "
    "e7 b5 g3 e3 b3 e8 h2 g1 h7 b1 f7 c3 h1 e1 a8 a7 c8 c1 f8"
)
A_PASS = (  # 10 empties, a pass to play
    "d3 c5 b6 c3 d6 b5 b3 e3 f4 a7 a5 c6 f3 f2 c7 a3 b2 g4 b4 g3 g1 b7 h2 c8 g5 a6 d8 e7 b8 a8 d7 "
    "e6 e2 c4 d2 h4 f5 c2 a4 d1 e1 h3 h5 b1 f7 f1 c1 g2 a2 h1"
)


def _othello(moves: str) -> OthelloState:
    state = OthelloState.new()
    for text in moves.split():
        state = state.play(state.parse_move(text))
    return state


def test_othello_positions_without_a_choice_are_turned_down() -> None:
    assert othpuzzles.examine(OthelloState.new()) == pf.OUT_OF_RANGE  # 60 empties
    one, passing = _othello(ONE_MOVE), _othello(A_PASS)
    assert othpuzzles.empties(one) == othpuzzles.empties(passing) == 10
    assert len(one.legal_moves()) == 1 and passing.legal_moves() == [PASS]
    assert othpuzzles.examine(one) == othpuzzles.examine(passing) == pf.NO_CHOICE


def test_othello_a_line_through_positions_the_table_settles_is_still_named() -> None:
    # 13 empties, won 64-0 by d8 alone: after the other moves' solves the table settles the
    # positions of the line by itself, and the best move is still found for each.
    state = _othello(
        "d3 c5 b6 f3 f5 c6 d6 c4 e3 f4 c3 e6 g3 b3 a3 g6 h7 g4 f6 g5 h5 h4 h3 h6 b4 h8 pass h2 "
        "pass g7 g8 f2 f1 f8 g2 b5 a4 h1 g1 e1 e2 d1 d2 f7 e7 c1 c2 b2 b1"
    )
    proof = othpuzzles.examine(state)
    assert isinstance(proof, pf.Proof)
    assert (proof.answer, proof.plies, proof.value) == ("d8", 13, 64)
    assert len(proof.line) == 17 and proof.line[-1] == "a1"  # four passes on the way


@pytest.mark.parametrize("game", pool.GAMES)
def test_a_shipped_puzzle_s_rating_is_its_difficulty(game: str) -> None:
    for p in pool.load_pool(game)[:SAMPLE]:
        state = position(p)
        if isinstance(state, Connect4State):
            assert c4puzzles.rating(state, p.answer, p.plies) == p.rating, p.id
        else:
            assert isinstance(state, OthelloState)
            assert othpuzzles.rating(state, p.answer) == p.rating, p.id
        assert 0 <= difficulty.misses(state, p.answer) <= len(difficulty.SEARCHES[game])


def test_each_search_that_misses_the_answer_raises_the_rating() -> None:
    assert difficulty.rating(20.0, 0) == 20.0
    assert difficulty.rating(20.0, 2) == 20.0 + 2 * difficulty.MISS
    assert difficulty.rating(39.0, 3) == 40.0 and difficulty.rating(5.0, 0) == 10.0
    # A win in one ply (column 4) every search takes; any other column is missed by all three.
    state = Connect4State.from_moves("112233")
    assert difficulty.misses(state, "4") == 0 and difficulty.misses(state, "7") == 3
