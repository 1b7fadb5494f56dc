"""Each server's settings in the lobby: checked and bounded, stored with who changed them, and
applied at every start (channels, the turn clock, the limits, the games and levels offered),
to hints and analyses of rated games; the console's one server; no server: the bot's own."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person, Where
from lobby.errors import BadRequest, LimitReached
from lobby.pool import EnginePool
from lobby.settings import CONSOLE_SERVER, SPECS, NotHere, check
from tests.clock import Clock

ADMIN = Person("user", 1, "admin")
ANN = Person("user", 11, "ann")
BOB = Person("user", 12, "bob")
HERE = Where(guild_id=5, channel_id=50)
ELSEWHERE = Where(guild_id=6, channel_id=60)


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "lobby.db", clock=clock)
    lob = Lobby(store, pool, LobbyConfig(seed=3, max_bot_games=3), clock=clock)
    yield lob
    await lob.close()
    await store.close()


async def test_a_change_is_checked_stored_and_logged_with_who_made_it(
    lobby: Lobby, caplog: pytest.LogCaptureFixture
) -> None:
    fresh = await lobby.server_settings(5)
    assert fresh.values == {} and fresh.value("bot_games") == 3  # the bot's own
    with caplog.at_level(logging.INFO, logger="lobby.settings"):
        found = await lobby.change_settings(
            5, ADMIN, {"bot_games": 1, "turn_seconds": 90.0, "games": ["othello"]}
        )
    assert found.values == {"bot_games": 1, "turn_seconds": 90, "games": ["othello"]}
    assert found.changed_by == "admin" and "changed by admin" in caplog.text
    [change] = await lobby.store.settings.history(5)
    admin = await lobby.store.players.find_user(1)
    assert admin is not None and change.player_id == admin.id
    assert change.changes["bot_games"] == (None, 1)
    back = await lobby.change_settings(5, ADMIN, {"bot_games": None})  # the bot's own again
    assert "bot_games" not in back.values and back.value("bot_games") == 3
    assert (await lobby.server_settings(6)).values == {}  # another server: untouched


BAD = [
    ("turn_seconds", 5),
    ("turn_seconds", float("nan")),
    ("turn_seconds", "600"),
    ("bot_games", 101),
    ("bot_games", 1.5),
    ("bot_games", True),
    ("games", []),
    ("games", ["chess"]),
    ("levels", ["impossible"]),
    ("channels", [0]),
    ("channels", list(range(1, 30))),
    ("rated_hints", "yes"),
    ("announcements", -1),
    ("nosuch", 1),
]


@pytest.mark.parametrize(("name", "value"), BAD)
async def test_a_bad_value_changes_nothing(lobby: Lobby, name: str, value: Any) -> None:
    with pytest.raises(BadRequest):
        await lobby.change_settings(5, ADMIN, {"bot_matches": 1, name: value})
    assert (await lobby.store.settings.get(5)).values == {}
    assert await lobby.store.settings.history(5) == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(SPECS)),
    value=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
        st.lists(st.one_of(st.integers(-5, 2**64), st.text(max_size=10)), max_size=30),
    ),
)
async def test_hostile_values_are_refused_or_kept_exactly(
    lobby: Lobby, name: str, value: Any
) -> None:
    try:
        expected = check(name, value)
    except BadRequest:
        with pytest.raises(BadRequest):
            await lobby.change_settings(7, ADMIN, {name: value})
        return
    found = await lobby.change_settings(7, ADMIN, {name: value})
    stored = (await lobby.store.settings.get(7)).values
    assert stored.get(name) == expected == found.values.get(name)


async def test_the_servers_limits_and_clock_apply_to_its_starts(lobby: Lobby) -> None:
    await lobby.change_settings(5, ADMIN, {"bot_games": 1, "turn_seconds": 45})
    snap = await lobby.start_pve(ANN, "connect4", "easy", where=HERE)
    assert snap.match.turn_seconds == 45
    with pytest.raises(LimitReached, match="1 games against the bot"):
        await lobby.start_pve(ANN, "connect4", "easy", where=HERE)
    other = await lobby.start_pve(BOB, "connect4", "easy", where=ELSEWHERE)  # the bot's own
    assert other.match.turn_seconds == lobby.config.turn_seconds
    await lobby.change_settings(5, ADMIN, {"challenges": 1})
    await lobby.challenge(BOB, ANN, "connect4", HERE)
    with pytest.raises(LimitReached, match="1 challenges"):
        await lobby.challenge(BOB, ADMIN, "connect4", HERE)


async def test_channels_games_and_levels_offered(lobby: Lobby) -> None:
    await lobby.change_settings(5, ADMIN, {"channels": [51, 52], "levels": ["easy", "medium"]})
    with pytest.raises(NotHere) as refused:
        await lobby.start_pve(ANN, "connect4", "easy", where=HERE)
    assert refused.value.channels == (51, 52)
    with pytest.raises(NotHere):
        await lobby.challenge(ANN, BOB, "connect4", HERE)
    there = Where(guild_id=5, channel_id=52)
    await lobby.start_pve(ANN, "connect4", "easy", where=there)
    with pytest.raises(BadRequest, match="the expert level is not offered here: choose easy"):
        await lobby.start_pve(BOB, "connect4", "expert", where=there)
    with pytest.raises(BadRequest, match="the hard level"):
        await lobby.start_eve("othello", "easy", "hard", where=there, starter=BOB)
    await lobby.change_settings(5, ADMIN, {"games": ["othello"]})
    with pytest.raises(BadRequest, match="this server offers othello only"):
        await lobby.start_pve(BOB, "connect4", "easy", where=there)
    assert await lobby.store.matches.count_live("pve") == 1  # nothing else was stored
    await lobby.start_pve(BOB, "connect4", "expert")  # no server (a DM): the bot's own


async def test_hints_and_analyses_of_rated_games_when_the_server_allows(lobby: Lobby) -> None:
    await lobby.change_settings(5, ADMIN, {"rated_hints": False, "rated_analysis": False})
    snap = await lobby.start_pve(ANN, "connect4", "easy", where=HERE)
    with pytest.raises(BadRequest, match="no hints in rated games"):
        await lobby.hint(snap.id, ANN)
    game = await lobby.start_pvp(ANN, BOB, "connect4", HERE)
    await lobby.play(game.id, ANN, "4")
    await lobby.resign(game.id, BOB)
    with pytest.raises(BadRequest, match="no analyses of rated games"):
        await lobby.analysis_target(game.id, ANN)
    with pytest.raises(BadRequest, match="no analyses of rated games"):
        await lobby.analyse(game.id, ANN)
    await lobby.change_settings(5, ADMIN, {"rated_analysis": True})
    assert (await lobby.analysis_target(game.id, ANN)).match_id == game.id


async def test_the_console_has_one_server(lobby: Lobby) -> None:
    with pytest.raises(BadRequest, match="settings belong to a server"):
        await lobby.change_settings(None, ADMIN, {"turn_seconds": 60})
    lobby.config.home_server = CONSOLE_SERVER
    local = Person("local", "ann", "ann")
    await lobby.change_settings(None, local, {"turn_seconds": 60, "levels": ["easy"]})
    assert (await lobby.store.settings.get(CONSOLE_SERVER)).values["turn_seconds"] == 60
    snap = await lobby.start_pvp(local, Person("local", "bob", "bob"), "connect4")
    assert snap.match.turn_seconds == 60
    with pytest.raises(BadRequest, match="the medium level"):
        await lobby.start_pve(local, "connect4", "medium")
