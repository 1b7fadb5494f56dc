"""Boards everyone can read: a position in words (whose turn, the last move, the legal moves,
every disc) and as a picture, for both games."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from db.models import Match, Player
from engine.games import new_game
from engine.games.base import GameState, Move
from lobby.boards import MAX_WORDS, board_png, describe, picture_of, position_words
from lobby.core import Seat, Snapshot


def _player(pid: int, name: str) -> Player:
    return Player(pid, "local", name, None, None, name, 0.0, 0.0)


def snapshot(
    game: str, moves: str = "", names: tuple[str, str] = ("ann", "bob"), **match: Any
) -> Snapshot:
    """A live match of `game` after `moves` (space-separated, as stored)."""
    state: GameState = new_game(game)
    last: Move | None = None
    for text in moves.split():
        last = state.parse_move(text)
        state = state.play(last)
    m = Match(
        id=1, game=game, variant=state.variant, kind="pvp", player0_id=1, player1_id=2,
        status="live", result=None, termination=None, rated=True, guild_id=None,
        channel_id=None, message_id=None, created_at=0.0, updated_at=0.0, finished_at=None,
        turn_deadline=None, turn_seconds=600.0, options={}, ply=state.ply,
    )  # fmt: skip
    m = dataclasses.replace(m, **match)
    seats = (Seat(_player(1, names[0])), Seat(_player(2, names[1])))
    return Snapshot(m, state, seats, last)


def test_connect_four_in_words_by_column_from_the_bottom() -> None:
    snap = snapshot("connect4", "4 4 5")
    text = describe(snap)
    assert text.startswith("Connect Four, move 4: yellow (bob) to play.")
    assert "Last move: red column 5." in text
    assert "Legal moves: 1, 2, 3, 4, 5, 6, 7." in text
    assert "Position: column 4: red, yellow; column 5: red." in text


def test_othello_in_words_by_colour_and_square() -> None:
    snap = snapshot("othello", "f5")
    text = describe(snap)
    assert text.startswith("Othello, move 2: white (bob) to play.")
    assert "Last move: black f5." in text
    assert "Legal moves: d6, f4, f6." in text
    assert "Position: black: d5 e4 e5 f5; white: d4." in text


def test_an_empty_board_and_a_finished_match() -> None:
    assert "Position: the board is empty." in describe(snapshot("connect4"))
    won = snapshot(
        "connect4", "1 2 1 2 1 2 1", status="finished", result="0", termination="connect"
    )
    text = describe(won)
    assert text.startswith("Connect Four: red (ann) wins (four in a row).")
    assert "Legal moves" not in text and "Last move: red column 1." in text


def test_names_go_through_the_front_ends_function() -> None:
    text = describe(snapshot("connect4", names=("**x**", "y")), name=lambda n: n.upper() + "!")
    assert "red (**X**!) to play" in text


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 63), max_size=70), st.text(max_size=300))
def test_any_othello_position_is_worded_within_discords_limit(picks: list[int], name: str) -> None:
    state: GameState = new_game("othello")
    moves = []
    for pick in picks:
        legal = state.legal_moves()
        if not legal:
            break
        mv = legal[pick % len(legal)]
        moves.append(state.move_to_str(mv))
        state = state.play(mv)
    snap = snapshot("othello", " ".join(moves), names=(name or "a", "b"))
    text = describe(snap)
    assert len(text) <= MAX_WORDS
    black, white = snap.state.disc_counts()  # type: ignore[attr-defined]
    words = position_words(picture_of(snap))
    listed = [sq for part in words.split(";") for sq in part.split(":")[1].split() if sq != "none"]
    assert len(listed) == len(set(listed)) == black + white


def test_the_picture_is_a_png_of_the_position() -> None:
    png = board_png(snapshot("othello", "f5"))
    img = Image.open(io.BytesIO(png))
    assert img.format == "PNG" and img.width > 300 and img.height > 300
