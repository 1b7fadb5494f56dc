"""What each person prefers, in the lobby: kept per person, checked, and a board shown as a
picture when one of its people prefers it (never when the store cannot say)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person
from lobby.errors import BadRequest
from lobby.pool import EnginePool
from tests.clock import Clock

ANN = Person("user", 11, "ann")
BOB = Person("user", 12, "bob")


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "lobby.db", clock=clock)
    lob = Lobby(store, pool, LobbyConfig(seed=3), clock=clock)
    yield lob
    await lob.close()
    await store.close()


async def test_a_style_is_kept_per_person_and_checked(lobby: Lobby) -> None:
    assert await lobby.board_style(ANN) == "emoji"
    assert await lobby.store.players.find_user(11) is None  # asking stores nobody
    assert await lobby.set_board_style(ANN, " Image ") == "image"
    assert await lobby.board_style(ANN) == "image" and await lobby.board_style(BOB) == "emoji"
    for bad in ("picture", "", "emoji; DROP TABLE players", "x" * 500):
        with pytest.raises(BadRequest, match="board must be one of emoji, image"):
            await lobby.set_board_style(BOB, bad)
    assert await lobby.store.players.find_user(12) is None  # a refusal stores nothing


async def test_a_board_is_a_picture_when_one_of_its_people_prefers_it(lobby: Lobby) -> None:
    snap = await lobby.start_pvp(ANN, BOB, "connect4")
    assert await lobby.board_style_for(snap) == "emoji"
    await lobby.set_board_style(BOB, "image")
    assert await lobby.board_style_for(snap) == "image"
    vs_bot = await lobby.start_pve(ANN, "othello", "easy")
    assert await lobby.board_style_for(vs_bot) == "emoji"  # ann's own choice: emoji
    watched = await lobby.start_eve("connect4", "easy", "medium", starter=BOB)
    assert await lobby.board_style_for(watched) == "image"  # the starter's
    await lobby.stop(watched.id)


async def test_a_store_that_cannot_answer_leaves_boards_as_emoji(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = await lobby.start_pvp(ANN, BOB, "connect4")
    await lobby.set_board_style(ANN, "image")
    lobby.prefs._styles.clear()  # as after the cache's few seconds

    async def busy(ids: object) -> dict[int, str]:
        from db.errors import TransientError

        raise TransientError("database is locked")

    monkeypatch.setattr(lobby.store.prefs, "board_styles", busy)
    assert await lobby.board_style_for(snap) == "emoji"
