"""Othello: bitboard kernels and OthelloState, cross-checked against a naive reference."""

from __future__ import annotations

import csv
import itertools
import random
import re
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.games import othkernels as k
from engine.games.base import GameState, IllegalMoveError, NotationError, Termination
from engine.games.bits import popcount
from engine.games.othello import PASS, OthelloState, square_name
from tests.reference.othello_reference import RefBoard

START = "---------------------------OX------XO--------------------------- X"
PERFT = [1, 4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288]
FFO = Path(__file__).parents[1] / "data" / "ffo_40_44.tsv"


def ref_of(state: OthelloState) -> RefBoard:
    return RefBoard.from_bitboards(state.black, state.white, state.side)


def from_cells(cells: dict[str, str], side: str = "X") -> OthelloState:
    """A position from {'a1': 'X', ...}, everything else empty."""
    board = ["-"] * 64
    for name, piece in cells.items():
        board[OthelloState.new().parse_move(name)] = piece
    return OthelloState.from_notation("".join(board) + " " + side)


def ffo_rows() -> list[dict[str, str]]:
    with FFO.open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


# -- start position, notation, moves -------------------------------------------------------------


def test_start_position_and_protocol():
    s = OthelloState.new()
    assert isinstance(s, GameState)
    assert (s.game, s.variant, s.ply, s.to_move()) == ("othello", "8x8", 0, 0)
    assert s.to_notation() == START
    assert OthelloState.from_notation(START) == s
    assert s.disc_counts() == (2, 2)
    assert [s.move_to_str(m) for m in s.legal_moves()] == ["d3", "c4", "f5", "e6"]
    assert s.key() == (s.black, s.white, 0)
    assert (s.me, s.opp) == (s.black, s.white)
    assert s.outcome() is None and not s.is_over()


def test_play_flips_and_switches_side():
    s = OthelloState.new()
    d3, d4 = s.parse_move("d3"), s.parse_move("d4")
    assert s.flips(d3) == 1 << d4
    t = s.play(d3)
    assert (t.side, t.ply, t.disc_counts()) == (1, 1, (4, 1))
    assert t.black >> d4 & 1 and t.black >> d3 & 1
    assert (t.me, t.opp) == (t.white, t.black)
    assert t.to_notation() == "-------------------X-------XX------XO--------------------------- O"
    assert s.flips(0) == 0 and s.flips(PASS) == 0 and s.flips(d4) == 0


def test_notation_is_lenient_on_case_dots_and_whitespace():
    messy = "  " + " ".join(START[i : i + 8].replace("-", ".").lower() for i in range(0, 64, 8))
    assert OthelloState.from_notation(messy + "\n x ") == OthelloState.new()
    # The ply is unknown from a position: discs - 4.
    assert OthelloState.from_notation(OthelloState.new().play(19).to_notation()).ply == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "got 0"),
        (START[:-2], "got 64"),
        (START + "X", "got 66"),
        (START.replace("-", "?", 1), "bad cell '?' at a1"),
        ("-" * 63 + "Z X", "bad cell 'Z' at h8"),
        (START[:-1] + "B", "bad side to move 'B'"),
        (START[:-1] + "-", "bad side to move '-'"),
    ],
)
def test_malformed_positions_raise_notation_error(text: str, reason: str):
    with pytest.raises(NotationError, match=re.escape(reason)):
        OthelloState.from_notation(text)


def test_parse_and_format_moves():
    s = OthelloState.new()
    assert s.parse_move("D3") == s.parse_move(" d3 ") == 19
    assert s.parse_move("a1") == 0 and s.parse_move("h1") == 7
    assert s.parse_move("a8") == 56 and s.parse_move("H8") == 63
    assert s.parse_move("PASS") == PASS and s.move_to_str(PASS) == "pass"
    assert [s.move_to_str(m) for m in (0, 7, 56, 63)] == ["a1", "h1", "a8", "h8"]
    for bad in ("", "i1", "a9", "a0", "d33", "3d", "pas"):
        with pytest.raises(NotationError):
            s.parse_move(bad)
    with pytest.raises(NotationError):
        s.move_to_str(65)


def test_illegal_moves_raise_and_leave_state_unchanged():
    s = OthelloState.new()
    before = (s.black, s.white, s.side, s.ply)
    cases = {
        s.parse_move("d4"): "d4 is already occupied",
        s.parse_move("a1"): "a1 is not legal: it flips no discs",
        # The message goes to the player who typed it: no side letter ("X has ...").
        PASS: r"^cannot pass: you have legal moves \(d3, c4, f5, e6\)$",
        -1: "no such square",
        99: "no such square",
    }
    for move, message in cases.items():
        with pytest.raises(IllegalMoveError, match=message):
            s.play(move)
    assert (s.black, s.white, s.side, s.ply) == before
    assert s.play(np.int64(19)) == s.play(19)  # numpy integers from agents are fine


# -- passes and the end of the game --------------------------------------------------------------


def test_forced_pass():
    # X to move has nothing to flank; O can play d1 over the X on c1.
    s = from_cells({"a1": "O", "b1": "O", "c1": "X"}, "X")
    assert s.legal_mask() == 0 and not s.is_over() and s.outcome() is None
    assert s.legal_moves() == [PASS]
    with pytest.raises(IllegalMoveError, match="d1 is not legal: you must pass"):
        s.play(s.parse_move("d1"))
    t = s.play(PASS)
    assert (t.side, t.ply, t.black, t.white) == (1, s.ply + 1, s.black, s.white)
    assert t.legal_moves() == [s.parse_move("d1")]
    assert s.perft(1) == 1 and s.perft(2) == 1 and s.perft(3) == ref_of(s).perft(3)


def test_final_score_gives_empties_to_the_winner():
    # Nobody can move: the discs never touch.
    s = from_cells({"a1": "X", "b1": "X", "h8": "O"}, "O")
    assert s.legal_moves() == [] and s.is_over()
    out = s.outcome()
    assert out is not None
    assert (out.termination, out.winner, out.score) == (Termination.NO_MOVES, 0, (63, 1))
    assert out.result_for(0) == 1.0
    with pytest.raises(IllegalMoveError, match="game is over"):
        s.play(PASS)
    with pytest.raises(IllegalMoveError, match="the game is over"):
        s.play(s.parse_move("c1"))
    assert s.perft(5) == 1

    white_wins = from_cells({"a1": "X", "g8": "O", "h8": "O", "h7": "O"}, "X").outcome()
    assert white_wins is not None and (white_wins.winner, white_wins.score) == (1, (1, 63))


def test_draw_splits_the_empties():
    out = from_cells({"a1": "X", "h8": "O"}).outcome()
    assert out is not None and (out.winner, out.score) == (None, (32, 32))
    full = "XO" * 32 + " X"  # a full board, 32-32: no empties
    out = OthelloState.from_notation(full).outcome()
    assert out is not None and (out.winner, out.score) == (None, (32, 32))


# -- perft ---------------------------------------------------------------------------------------


def test_perft_known_values_1_to_9():
    s = OthelloState.new()
    assert [s.perft(d) for d in range(10)] == PERFT


def test_reference_perft_agrees_to_depth_6():
    ref = RefBoard.start()
    assert [ref.perft(d) for d in range(7)] == PERFT[:7]


def test_reference_perft_agrees_on_ffo_positions():
    for row in ffo_rows():
        s = OthelloState.from_notation(row["board_a1_to_h8"] + " " + row["side_to_move"])
        assert s.perft(3) == ref_of(s).perft(3), row["ffo_id"]


def test_ffo_positions_parse_and_best_moves_are_legal():
    rows = ffo_rows()
    assert len(rows) == 5
    for row in rows:
        s = OthelloState.from_notation(row["board_a1_to_h8"] + " " + row["side_to_move"])
        assert 64 - sum(s.disc_counts()) == int(row["empties"])
        assert s.to_move() == (0 if row["side_to_move"] == "X" else 1)
        legal = s.legal_moves()
        for name in row["best_moves"].split(","):
            assert s.parse_move(name) in legal, (row["ffo_id"], name)


# -- random games against the reference ----------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False))
def test_random_games_agree_with_reference(rng: random.Random):
    """Whole random games: every state is legal and matches the reference, to the final score."""
    s, ref = OthelloState.new(), RefBoard.start()
    placed = 0
    for played in itertools.count():
        assert s.ply == played
        assert s.black & s.white == 0
        assert sum(s.disc_counts()) == 4 + placed
        moves = s.legal_moves()
        assert moves == ref.legal_moves()
        out, ref_out = s.outcome(), ref.result()
        if ref_out is not None:
            assert out is not None and (out.winner, out.score) == ref_out
            assert not moves and sum(out.score or ()) == 64
            break
        assert out is None
        # Round trips: the position string and every legal move's notation.
        assert OthelloState.from_notation(s.to_notation()).key() == s.key()
        assert [s.parse_move(s.move_to_str(m).upper()) for m in moves] == moves
        # A square that is not a legal move raises and changes nothing.
        illegal = rng.choice([q for q in range(64) if q not in moves])
        before = s.key()
        with pytest.raises(IllegalMoveError):
            s.play(illegal)
        assert s.key() == before
        move = rng.choice(moves)
        if move != PASS:
            expected = {f + 8 * r for f, r in ref.flipped(move % 8, move // 8, s.side)}
            assert {q for q in range(64) if s.flips(move) >> q & 1} == expected
            placed += 1
        s, ref = s.play(move), ref.play(move)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 1))
def test_kernels_match_reference_on_arbitrary_boards(black: int, white: int, side: int):
    """Random disc patterns (not reachable from the start) stress the edge masks."""
    white &= ~black
    s = OthelloState(black, white, side)
    ref = ref_of(s)
    assert s.legal_moves() == ref.legal_moves()
    for move in s.legal_moves():
        if move != PASS:
            expected = {f + 8 * r for f, r in ref.flipped(move % 8, move // 8, side)}
            assert {q for q in range(64) if s.flips(move) >> q & 1} == expected
    assert popcount(np.uint64(black)) == black.bit_count()


def test_the_plain_python_flips_match_the_kernel() -> None:
    """With numba's JIT off the flips are plain Python ints: the same discs as the kernel."""
    rng = random.Random(5)
    for _ in range(300):
        s = OthelloState.new()
        for _ in range(rng.randrange(0, 50)):
            if s.is_over():
                break
            s = s.play(rng.choice(s.legal_moves()))
        me, opp = np.uint64(s.me), np.uint64(s.opp)
        for sq in range(64):
            if not (s.me | s.opp) >> sq & 1:
                assert k._flips_python(me, opp, sq) == k.flips(me, opp, sq)


# -- playout kernels -----------------------------------------------------------------------------


def test_random_playouts():
    s = OthelloState.new()
    me, opp = np.uint64(s.me), np.uint64(s.opp)
    results = {k.random_playout(me, opp, seed) for seed in range(200)}
    assert results <= {-1, 0, 1} and {-1, 1} <= results
    assert k.random_playout(me, opp, 7) == k.random_playout(me, opp, 7)
    assert abs(k.playouts(me, opp, 500, 3)) <= 500
    won = from_cells({"a1": "X", "b1": "X", "h8": "O"}, "X")
    assert k.random_playout(np.uint64(won.me), np.uint64(won.opp), 1) == 1
    assert k.random_playout(np.uint64(won.opp), np.uint64(won.me), 1) == -1
    for sq in (0, 7, 56, 63, 27):
        assert k.bit_index(np.uint64(1 << sq)) == sq


# -- rendering -----------------------------------------------------------------------------------


def test_render_text():
    text = OthelloState.new().render_text()
    lines = text.splitlines()
    assert lines[0].split() == list("abcdefgh")
    assert lines[1].startswith("8 ") and lines[8].startswith("1 ")
    assert lines[5] == "4 . . . O X . . . 4"  # rank 4: d4 = O, e4 = X
    assert lines[4] == "5 . . . X O . . . 5"
    assert lines[-1] == "X to move (X 2, O 2)"
    over = from_cells({"a1": "X", "h8": "O"}).render_text()
    assert over.splitlines()[-1] == "game over: draw (X 32, O 32)"  # empties split on a draw


def is_regional_indicator(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def test_render_emoji_layout_and_markers():
    s = OthelloState.new()
    d3 = s.parse_move("d3")
    t = s.play(d3)
    board = t.render_emoji(last=d3)
    assert len(board) < 1000  # Discord's limit is 4096 (embed description) / 2000 (message)
    lines = board.split("\n")
    assert len(lines) == 9
    header = lines[0]
    letters = [ch for ch in header if is_regional_indicator(ch)]
    assert [unicodedata.name(ch)[-1] for ch in letters] == list("ABCDEFGH")
    # No two regional indicators touch, or clients would draw flags (🇦🇩 = Andorra).
    assert not any(
        is_regional_indicator(a) and is_regional_indicator(b) for a, b in itertools.pairwise(header)
    )
    for row, rank in zip(lines[1:], range(8, 0, -1), strict=True):
        assert row.startswith(f"{rank}\ufe0f\u20e3")
        cells = row[3:]
        assert len(cells) == 8, row  # one code point per cell: rows line up
    grid = {square_name(8 * r + f): lines[8 - r][3 + f] for r in range(8) for f in range(8)}
    assert grid["d3"] == "🖤" and grid["d4"] == "⚫" and grid["e5"] == "⚪"
    legal = {square_name(m) for m in t.legal_moves()}
    assert {name for name, cell in grid.items() if cell == "🟢"} == legal
    assert "🟢" not in t.render_emoji(show_legal=False)
    assert "🖤" not in t.render_emoji() and "🤍" not in board
    u = t.play(t.legal_moves()[0])
    assert u.render_emoji(last=t.legal_moves()[0]).count("🤍") == 1
    assert s.render_emoji(last=PASS) == s.render_emoji()
