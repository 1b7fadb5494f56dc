"""One Othello scoring rule everywhere: at the end the empty squares go to the winner (a draw
splits them), so a finished game's score always sums to 64 - on the board, in the text
render, in the result line of history, replays and analyses."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from db.store import Store
from engine.games.catalog import game_info
from engine.games.othello import OthelloState
from lobby.core import Lobby, Person
from lobby.pool import EnginePool
from lobby.present import result_line, score_line

ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "score.db")
    lob = Lobby(store, pool)
    yield lob
    await lob.close()
    await store.close()


def test_a_wipeout_with_empty_squares_scores_64_to_0() -> None:
    state = OthelloState.from_notation("X" * 10 + "-" * 54 + "O")  # white has no disc left
    assert state.is_over()
    assert game_info("othello").score(state) == (
        "Final score ⚫ 64 - 0 ⚪ (empty squares go to the winner)"
    )
    assert state.render_text().endswith("game over: X wins (X 64, O 0)")


async def test_a_finished_games_score_sums_to_64_on_the_board_and_in_its_result(
    lobby: Lobby,
) -> None:
    rng = random.Random(8)
    snap = await lobby.start_pvp(ALICE, BOB, "othello")
    while snap.live:
        mover = ALICE if snap.state.to_move() == 0 else BOB
        snap = await lobby.play(snap.id, mover, rng.choice(snap.state.legal_moves()))
    line = score_line(snap)
    assert line is not None and line.startswith("Final score")
    black, white = (int(w) for w in line.split() if w.isdigit())
    assert black + white == 64
    words = result_line(snap)
    assert f" {black}-{white} (no moves left)" in words
