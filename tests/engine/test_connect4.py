"""Connect Four: the bitboard engine checked against the naive tests/reference/c4_reference.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine.games import c4kernels as kern
from engine.games.base import (
    GameState,
    IllegalMoveError,
    NotationError,
    Outcome,
    Termination,
)
from engine.games.connect4 import Connect4State
from tests.reference.c4_reference import RefBoard

U = np.uint64

# A drawn full 7x6 board, found with c4_reference by random games that avoid completing a line
# (restarting on failure), not written by hand.
DRAWN_7X6 = "656173566152215676422337377473141445425321"

# Every allowed board shape: (rows + 1) * cols <= 64 bits and room for a line of k >= 2.
ALL_SHAPES = [(r, c) for c in range(1, 33) for r in range(1, 64 // c) if max(r, c) >= 2]


def ref_after(state: Connect4State) -> RefBoard:
    ref = RefBoard(state.rows, state.cols, state.k)
    for col in state.moves:
        ref.play(col)
    return ref


def bit_of(state: Connect4State, col: int, row: int) -> int:
    return col * (state.rows + 1) + row


def assert_matches_reference(state: Connect4State, ref: RefBoard) -> None:
    """Bitboard invariants, and agreement with the reference on everything observable."""
    h = state.rows + 1
    heights = [len(column) for column in ref.columns]
    assert state.current & ~state.mask == 0
    assert state.mask >> (h * state.cols) == 0
    for c in range(state.cols):
        assert (state.mask >> (c * h)) & ((1 << h) - 1) == (1 << heights[c]) - 1
    assert state.heights == tuple(heights)
    assert state.current.bit_count() == state.ply // 2
    expected_grid = np.zeros((state.rows, state.cols), dtype=np.int8)
    for c, column in enumerate(ref.columns):
        for row, player in enumerate(column):
            expected_grid[state.rows - 1 - row, c] = player + 1
    np.testing.assert_array_equal(state.board(), expected_grid)

    assert state.legal_moves() == ref.legal_moves()
    assert state.is_over() == ref.is_over()
    winner = ref.winner()
    outcome = state.outcome()
    if winner is not None:
        assert outcome is not None
        assert (outcome.termination, outcome.winner) == (Termination.CONNECT, winner)
        assert set(outcome.cells) == {bit_of(state, c, r) for c, r in ref.winning_cells()}
    elif ref.is_full():
        assert outcome == Outcome(Termination.BOARD_FULL, None)
    else:
        assert outcome is None
    wins = []
    for col in ref.legal_moves():
        ref.play(col)
        if ref.winner() is not None:
            wins.append(col)
        ref.undo()
    assert state.winning_moves() == wins


# -- perft --------------------------------------------------------------------------------------


def kernel_perft(state: Connect4State, depth: int) -> int:
    return int(kern.perft(U(state.current), U(state.mask), state.rows, state.cols, state.k, depth))


@pytest.mark.parametrize("depth", range(7))
def test_perft_standard_matches_reference(depth: int) -> None:
    state = Connect4State.new()
    assert state.perft(depth) == kernel_perft(state, depth) == RefBoard().perft(depth)


@pytest.mark.parametrize("depth", range(9))
def test_perft_small_board_matches_reference(depth: int) -> None:
    state = Connect4State.new(rows=4, cols=4, k=3)
    assert state.perft(depth) == RefBoard(4, 4, 3).perft(depth)


def test_perft_standard_deep_constants() -> None:
    # Computed once with the reference: RefBoard(6, 7, 4).perft(7) and .perft(8) (about 30 s).
    # Depth 7 is 7**7 minus the 7 paths that drop all 7 discs into one column; from depth 8 on
    # finished games stop their paths.
    state = Connect4State.new()
    assert state.perft(7) == 823_536
    assert state.perft(8) == 5_686_266


@pytest.mark.parametrize(
    ("rows", "cols", "k", "moves", "depth"),
    [
        (7, 8, 4, "18888181", 4),  # 64-bit board: column 8's sentinel is bit 63
        (15, 4, 5, "11223344", 4),
        (1, 32, 3, "1a2b", 3),
        (3, 5, 3, "12312", 6),
        (6, 7, 4, "4453", 4),
    ],
)
def test_perft_positions_match_reference(
    rows: int, cols: int, k: int, moves: str, depth: int
) -> None:
    state = Connect4State.from_moves(moves, rows=rows, cols=cols, k=k)
    assert state.perft(depth) == ref_after(state).perft(depth)


def test_perft_of_finished_game_is_one() -> None:
    won = Connect4State.from_moves("1212121")
    assert won.perft(3) == 1
    assert Connect4State.from_moves(DRAWN_7X6).perft(2) == 1


# -- property tests -----------------------------------------------------------------------------


@st.composite
def variants(draw: st.DrawFn) -> tuple[int, int, int]:
    rows, cols = draw(st.sampled_from(ALL_SHAPES))
    k = draw(st.integers(2, min(max(rows, cols), 6)))
    return rows, cols, k


@st.composite
def move_picks(draw: st.DrawFn, rows: int, cols: int) -> list[int]:
    """Move choices (indices into the legal moves) for up to a full board's worth of moves."""
    n = draw(st.integers(0, rows * cols))
    return draw(st.lists(st.integers(0, 63), min_size=n, max_size=n))


@st.composite
def games(draw: st.DrawFn) -> Connect4State:
    """A random legal game on a random variant, stopped anywhere (possibly at its end)."""
    rows, cols, k = draw(variants())
    state = Connect4State.new(rows, cols, k)
    for pick in draw(move_picks(rows, cols)):
        legal = state.legal_moves()
        if not legal:
            break
        state = state.play(legal[pick % len(legal)])
    return state


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_games_agree_with_reference(data: st.DataObject) -> None:
    rows, cols, k = data.draw(variants())
    state = Connect4State.new(rows, cols, k)
    ref = RefBoard(rows, cols, k)
    assert_matches_reference(state, ref)
    for pick in data.draw(move_picks(rows, cols)):
        legal = state.legal_moves()
        if not legal:
            break
        col = legal[pick % len(legal)]
        state = state.play(col)
        ref.play(col)
        assert_matches_reference(state, ref)
    outcome = state.outcome()
    event("unfinished" if outcome is None else outcome.termination.value)


@settings(max_examples=100, deadline=None)
@given(games())
def test_notation_round_trips(state: Connect4State) -> None:
    text = state.to_notation()
    assert len(text) == state.ply
    again = Connect4State.from_moves(text, rows=state.rows, cols=state.cols, k=state.k)
    assert again == state
    assert Connect4State.from_moves(list(state.moves), state.rows, state.cols, state.k) == state
    for col in range(state.cols):
        assert state.parse_move(state.move_to_str(col)) == col
        assert state.parse_move(f" {col + 1} ") == col


@settings(max_examples=100, deadline=None)
@given(games())
def test_mirror_key_is_key_of_mirrored_game(state: Connect4State) -> None:
    mirrored = [state.cols - 1 - c for c in state.moves]
    other = Connect4State.from_moves(mirrored, state.rows, state.cols, state.k)
    assert state.mirror_key() == other.key()
    assert other.mirror_key() == state.key()


@settings(max_examples=100, deadline=None)
@given(games())
def test_kernel_helpers_agree_with_state(state: Connect4State) -> None:
    r, c = state.rows, state.cols
    cur, mask = U(state.current), U(state.mask)
    legal = int(kern.legal_mask(mask, r, c))
    h = r + 1
    columns_open = [col for col in range(c) if (legal >> (col * h)) & ((1 << h) - 1)]
    assert columns_open == [col for col in range(c) if state.heights[col] < r]
    assert kern.popcount(mask) == state.ply
    assert kern.mirror(U(kern.mirror(mask, r, c)), r, c) == mask
    for col in columns_open:
        move = U(kern.move_bit(mask, col, r))
        assert int(move) == 1 << (col * h + state.heights[col])
        if not state.is_over():
            nxt = state.play(col)
            assert kern.play_bit(cur, mask, move) == (U(nxt.current), U(nxt.mask))


# -- illegal moves and notation errors ----------------------------------------------------------


def test_illegal_moves_raise_and_leave_state_unchanged() -> None:
    state = Connect4State.from_moves("444444")
    before = (state.current, state.mask, state.moves)
    for col in (-1, 7, 3):
        with pytest.raises(IllegalMoveError):
            state.play(col)
        assert (state.current, state.mask, state.moves) == before
    assert issubclass(IllegalMoveError, ValueError)
    with pytest.raises(IllegalMoveError, match="full"):
        state.play(3)
    won = Connect4State.from_moves("1212121")
    with pytest.raises(IllegalMoveError, match="over"):
        won.play(4)


@pytest.mark.parametrize(
    ("text", "error", "index"),
    [
        ("4444444", IllegalMoveError, 7),
        ("12121213", IllegalMoveError, 8),
        ("120", NotationError, 3),
        ("1238", NotationError, 4),
        ("4 4", NotationError, 2),
        ("44?", NotationError, 3),
    ],
)
def test_from_moves_errors_name_the_move(text: str, error: type[Exception], index: int) -> None:
    with pytest.raises(error, match=f"move {index}:"):
        Connect4State.from_moves(text)


def test_from_moves_sequence_errors() -> None:
    with pytest.raises(IllegalMoveError, match="move 2:"):
        Connect4State.from_moves([3, 9])
    with pytest.raises(NotationError, match="move 1:"):
        Connect4State.from_moves([1.5])  # type: ignore[list-item]


@pytest.mark.parametrize("text", ["", "0", "8", "x", "44", "10", "-1", "١", "İ"])
def test_parse_move_rejects_bad_text(text: str) -> None:
    with pytest.raises(NotationError):
        Connect4State.new().parse_move(text)


def test_wide_board_notation_uses_letters() -> None:
    state = Connect4State.new(rows=3, cols=16, k=4)
    assert [state.move_to_str(c) for c in (0, 8, 9, 15)] == ["1", "9", "a", "g"]
    assert state.parse_move("A") == state.parse_move("a") == state.parse_move("10") == 9
    game = Connect4State.from_moves(" 9ag ", rows=3, cols=16, k=4)
    assert game.moves == (8, 9, 15)
    assert game.to_notation() == "9ag"


@pytest.mark.parametrize(
    ("rows", "cols", "k"),
    [(0, 7, 4), (6, 0, 4), (7, 9, 4), (63, 2, 4), (6, 7, 1), (6, 7, 8), (1, 33, 2)],
)
def test_bad_sizes_rejected(rows: int, cols: int, k: int) -> None:
    with pytest.raises(ValueError):
        Connect4State.new(rows, cols, k)


# -- specific positions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "moves", "line"),
    [
        (4, "18888181828", [(7, r) for r in range(3, 7)]),
        (4, "5262827", [(c, 0) for c in range(4, 8)]),
        (4, "12233434474", [(i, i) for i in range(4)]),
        (4, "55555556666667777878828", [(7 - i, 3 + i) for i in range(4)]),
        (5, "1828818182828", [(7, r) for r in range(2, 7)]),
        (5, "528242627", [(c, 0) for c in range(3, 8)]),
        (5, "122334344545555", [(i, i) for i in range(5)]),
        (5, "4444444555555666676778788", [(7 - i, 2 + i) for i in range(5)]),
    ],
    ids=["v4", "h4", "d4", "a4", "v5", "h5", "d5", "a5"],
)
def test_wins_on_8x7(k: int, moves: str, line: list[tuple[int, int]]) -> None:
    state = Connect4State.from_moves(moves, rows=7, cols=8, k=k)
    before = Connect4State.from_moves(moves[:-1], rows=7, cols=8, k=k)
    assert not before.is_over()
    assert before.can_win_now(state.moves[-1])
    assert state.is_over() and state.legal_moves() == []
    outcome = state.outcome()
    assert outcome is not None
    assert outcome.termination is Termination.CONNECT and outcome.winner == 0
    assert sorted(state.cell_of(b) for b in outcome.cells) == sorted(line)
    assert_matches_reference(state, ref_after(state))


def test_full_board_draw() -> None:
    state = Connect4State.from_moves(DRAWN_7X6)
    assert state.ply == 42
    assert state.outcome() == Outcome(Termination.BOARD_FULL, None)
    assert state.is_over() and state.legal_moves() == []
    assert_matches_reference(state, ref_after(state))
    assert kern.random_playout(U(state.current), U(state.mask), 6, 7, 4, 1) == 0


def test_protocol_and_basics() -> None:
    state = Connect4State.from_moves("4453")
    assert isinstance(state, GameState)
    assert (state.game, state.variant, state.ply, state.to_move()) == ("connect4", "7x6k4", 4, 0)
    assert Connect4State.new(rows=7, cols=8, k=5).variant == "8x7k5"
    assert state.key() == (6, 7, 4, state.current, state.mask)
    assert state.opponent == state.current ^ state.mask
    assert state.heights == (0, 0, 1, 2, 1, 0, 0)
    assert state.cell_of(bit_of(state, 3, 1)) == (3, 1)
    assert Connect4State.from_moves("4354").key() == state.key()  # transposition
    assert Connect4State.new().to_notation() == ""
    assert Connect4State.from_moves("  ") == Connect4State.new()


def test_kernel_masks_standard_board() -> None:
    assert int(kern.bottom_mask(6, 7)) == sum(1 << (7 * c) for c in range(7))
    assert int(kern.top_mask(6, 7)) == sum(1 << (7 * c + 5) for c in range(7))
    assert int(kern.board_mask(6, 7)) == sum(0b111111 << (7 * c) for c in range(7))
    full_64 = kern.board_mask(7, 8)
    assert int(full_64) == sum(0x7F << (8 * c) for c in range(8))
    assert int(kern.legal_mask(full_64, 7, 8)) == 0
    assert int(kern.column_mask(7, 7)) == 0x7F << 56
    # One 63-row column: a column plus sentinel is all 64 bits, so no shift may reach 64.
    assert kern.mirror(U(1 << 62), 63, 1) == 1 << 62
    assert kern.is_win(U((1 << 63) - 1), 63, 63)
    assert not kern.is_win(U((1 << 62) - 1), 63, 63)


def test_random_playouts() -> None:
    empty = Connect4State.new()
    results = {kern.random_playout(U(0), U(0), 6, 7, 4, seed) for seed in range(200)}
    assert {-1, 1} <= results <= {-1, 0, 1}
    assert kern.random_playout(U(0), U(0), 6, 7, 4, 7) == kern.random_playout(
        U(0), U(0), 6, 7, 4, 7
    )
    wins, draws, losses = kern.playouts(U(empty.current), U(empty.mask), 6, 7, 4, 20_000, 3)
    assert wins + draws + losses == 20_000
    assert 0.5 < wins / 20_000 < 0.6  # the first player wins about 55% of random games
    won = Connect4State.from_moves("1212121")
    assert kern.playouts(U(won.current), U(won.mask), 6, 7, 4, 10, 1) == (0, 0, 10)
    # One row of two cells, k=2: the players take one cell each, always a draw.
    assert kern.playouts(U(0), U(0), 1, 2, 2, 50, 5) == (0, 50, 0)


# -- rendering ----------------------------------------------------------------------------------


def test_render_text() -> None:
    state = Connect4State.from_moves("4453", rows=3, cols=5, k=3)
    assert state.render_text() == "\n".join(
        [
            "1 2 3 4 5",
            ". . . . .",
            ". . . O .",
            ". . O X X",
        ]
    )


def test_render_emoji_marks_last_move_and_full_columns() -> None:
    state = Connect4State.from_moves("444444" + "5", rows=6, cols=7, k=4)
    lines = state.render_emoji().split("\n")
    assert len(lines) == 7
    assert lines[0] == "1️⃣2️⃣3️⃣⬛5️⃣6️⃣7️⃣"
    assert lines[-1] == "⚫⚫⚫🔴🟥⚫⚫"
    assert lines[1] == "⚫⚫⚫🟡⚫⚫⚫"
    assert "⬛" not in state.render_emoji(show_legal=False)
    assert state.render_emoji(last=3).split("\n")[1] == "⚫⚫⚫🟨⚫⚫⚫"
    assert "🟥" not in Connect4State.new().render_emoji()


def test_render_emoji_highlights_winning_line() -> None:
    state = Connect4State.from_moves("2131415")  # player 0 wins on the bottom row, 2..5
    text = state.render_emoji()
    assert text.split("\n")[-1] == "🟡🟥🟥🟥🟥⚫⚫"
    assert "⬛" not in text


def test_render_emoji_wide_board_header() -> None:
    state = Connect4State.new(rows=1, cols=12, k=2)
    header = state.render_emoji().split("\n")[0]
    assert header.startswith("1️⃣") and "🔟" in header
    assert header.endswith("\u200b🇧\u200b🇨")


@pytest.mark.parametrize(("rows", "cols"), ALL_SHAPES)
def test_render_emoji_fits_discord(rows: int, cols: int) -> None:
    # The longest header is the empty board's (keycaps, no ⬛); the longest rows are all discs
    # (non-BMP emoji). Together they bound every board of the shape.
    empty = Connect4State.new(rows, cols, 2).render_emoji()
    full_mask = int(kern.board_mask(rows, cols))
    full = Connect4State(rows, cols, 2, full_mask, full_mask, ()).render_emoji()
    assert "⚫" not in full
    assert len(empty.split("\n")) == len(full.split("\n")) == rows + 1
    assert len(empty.encode("utf-16-le")) // 2 + len(full.encode("utf-16-le")) // 2 <= 4096
