"""The console's /settings: the settings of its one server, shown as lines, changed with
key:value options (each checked: one bad value changes nothing) and applied to its games."""

from __future__ import annotations

from lobby.core import Lobby
from lobby.settings import CONSOLE_SERVER
from tests.console.test_console_boards import run


async def test_settings_are_shown_changed_and_applied(lobby: Lobby) -> None:
    lines = await run(
        lobby,
        "/settings\n"
        "/settings turn_seconds:45 levels:easy,medium rated_hints:refused\n"
        "/play game:connect4 opponent:hard\n"
        "/challenge opponent:bob game:connect4\n"
        "/settings reset:levels\n",
    )
    first = lines.index("> /settings")
    assert lines[first + 1].startswith("Settings of this console")
    assert "  turn_seconds: 600 (the bot's own)" in lines
    assert "  turn_seconds: 45" in lines and "  levels: easy, medium" in lines
    assert "  rated_hints: refused" in lines and "Last changed by ann." in lines
    assert "error: the hard level is not offered here: choose easy, medium" in lines
    match = await lobby.store.matches.get(1)
    assert match is not None and match.turn_seconds == 45  # the hot-seat game: the clock
    found = await lobby.store.settings.get(CONSOLE_SERVER)
    assert found.values == {"turn_seconds": 45, "rated_hints": False}
    assert len(await lobby.store.settings.history(CONSOLE_SERVER)) == 2


async def test_bad_values_change_nothing(lobby: Lobby) -> None:
    lines = await run(
        lobby,
        "/settings bot_games:1000\n/settings rated_hints:maybe\n/settings games:chess\n"
        "/settings turn_seconds:nan\n/settings channels:5\n/settings reset:nosuch\n",
    )
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 6, lines
    assert errors[0] == "error: bot_games must be a whole number from 0 to 100"
    assert "has no option 'channels'" in errors[4]
    assert (await lobby.store.settings.get(CONSOLE_SERVER)).values == {}
