"""`/settings` through discord.py's real dispatch (tests/harness): members with Manage Server
see and change the server's settings in one embed, everyone else is refused and nothing is
stored; bad values change nothing; the settings apply to the next game (the channels, by name,
and the limits); every request as Discord's API description allows."""

from __future__ import annotations

from typing import Any

import discord

from tests.boardbot import ALICE, BOB, buttons
from tests.harness import DEFAULT_CHANNEL_ID, DEFAULT_GUILD_ID, Call, assert_within_limits, user
from tests.harness.mentions import unescaped, unsafe_mentions

ADMIN = user(105, "admin", permissions=discord.Permissions(manage_guild=True, view_channel=True))
GAMES_ROOM = DEFAULT_CHANNEL_ID + 1
EPHEMERAL = 64


async def nobody(_: object) -> bool:
    return False  # the harness's Discord has no application owner


def reply(h: Any) -> dict[str, Any]:
    message: dict[str, Any] = h.last_message(ephemeral=True)
    return message


def fields(message: dict[str, Any]) -> dict[str, str]:
    return {f["name"]: f["value"] for f in message["embeds"][0]["fields"]}


async def stored(bot: Any) -> dict[str, Any]:
    return dict((await bot.lobby.store.settings.get(DEFAULT_GUILD_ID)).values)


async def test_an_admin_sees_and_changes_the_settings_in_one_embed(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[DEFAULT_CHANNEL_ID, GAMES_ROOM]))
    calls: list[Call] = await h.slash("settings", {}, user=ADMIN)
    shown = reply(h)
    assert len(shown["embeds"]) == 1 and shown["embeds"][0]["title"] == "Settings of this server"
    assert fields(shown)["Games against the bot per member"] == "3 (the bot's own)"
    calls += await h.slash(
        "settings",
        {
            "channels": f"<#{GAMES_ROOM}>",
            "bot_games": 1,
            "turn_seconds": 120,
            "levels": "easy, medium",
            "rated_hints": "refused",
            "announcements": f"<#{GAMES_ROOM}>",
        },
        user=ADMIN,
    )
    shown = reply(h)
    got = fields(shown)
    assert got["Channels where games may be started"] == f"<#{GAMES_ROOM}>"
    assert got["Games against the bot per member"] == "1"
    assert got["Turn clock (seconds)"] == "120" and got["Levels offered"] == "easy, medium"
    assert got["Hints in rated games"] == "refused"
    assert got["Announcement channel"] == f"<#{GAMES_ROOM}>"
    assert "Last changed by **admin**" in shown["embeds"][0]["description"]
    assert await stored(bot) == {
        "channels": [GAMES_ROOM],
        "bot_games": 1,
        "turn_seconds": 120,
        "levels": ["easy", "medium"],
        "rated_hints": False,
        "announcements": GAMES_ROOM,
    }
    [change] = await bot.lobby.store.settings.history(DEFAULT_GUILD_ID)
    admin = await bot.lobby.store.players.find_user(ADMIN.id)
    assert admin is not None and change.player_id == admin.id
    for call in calls:
        if call.json:
            assert_within_limits(call)
        assert unsafe_mentions(call, set()) is None
    # reset: one setting, then all, back to the bot's own
    await h.slash("settings", {"reset": "levels"}, user=ADMIN)
    assert "levels" not in await stored(bot)
    await h.slash("settings", {"reset": "all"}, user=ADMIN)
    assert await stored(bot) == {}


async def test_a_member_without_manage_server_is_refused_and_nothing_stored(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody
    for options in ({}, {"bot_games": 0}, {"reset": "all"}):
        await h.slash("settings", options, user=ALICE)
        assert reply(h)["content"] == "⚠️ You need the manage guild permission for that."
    assert await bot.lobby.store.settings.history(DEFAULT_GUILD_ID) == []
    assert await bot.lobby.store.players.find_user(ALICE.id) is None


async def test_bad_values_change_nothing_and_say_why_in_one_line(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[DEFAULT_CHANNEL_ID]))
    refused: list[tuple[dict[str, Any], str]] = [
        ({"games": "chess"}, "games: chess is not one of"),
        ({"levels": "all hard"}, "levels: all is not one of"),
        ({"channels": "#general"}, "'#general' is not a #channel"),
        ({"channels": "<#123>"}, "there is no channel 123 on this server"),
        ({"channels": "@everyone <@&5>"}, "is not a #channel"),
        ({"announcements": f"<#{DEFAULT_CHANNEL_ID}> <#{DEFAULT_CHANNEL_ID}>"}, "name one"),
        ({"turn_seconds": 5}, "turn_seconds must be a number from 30 to 604800"),
        ({"bot_games": 1000}, "bot_games must be a whole number from 0 to 100"),
    ]
    calls: list[Call] = []
    for options, words in refused:
        calls += await h.slash("settings", {"bot_matches": 1, **options}, user=ADMIN)
        line = reply(h)["content"]
        assert line.startswith("⚠️ ") and words in line.replace("\\", ""), (options, line)
    assert await bot.lobby.store.settings.history(DEFAULT_GUILD_ID) == []
    assert [bad for c in calls if (bad := unescaped(c, ("@everyone", "<@&5>")))] == []


async def test_the_settings_apply_to_the_next_game(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[DEFAULT_CHANNEL_ID, GAMES_ROOM]))
    await h.slash("settings", {"channels": f"{GAMES_ROOM}", "bot_games": 1}, user=ADMIN)
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    assert reply(h)["content"] == "⚠️ on this server games are started in #channel-1"
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    assert reply(h)["content"] == "⚠️ on this server games are started in #channel-1"
    await h.slash(
        "play", {"game": "connect4", "opponent": "easy"}, user=ALICE, channel_id=GAMES_ROOM
    )
    board = h.last_message(ephemeral=False)
    assert board["embeds"][0]["title"].startswith("Connect Four")
    await h.slash(
        "play", {"game": "othello", "opponent": "easy"}, user=ALICE, channel_id=GAMES_ROOM
    )
    assert "games against the bot in progress (the limit)" in reply(h)["content"]


async def test_boards_of_rated_games_offer_no_hint_or_analysis_the_server_refuses(
    env: Any,
) -> None:
    bot, h = env
    bot.owner_check = nobody
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    prefixes = [b["custom_id"][:3] for b in buttons(h.last_message(ephemeral=False))]
    assert "hn:" in prefixes  # the bot's own settings: hints allowed
    await h.slash("settings", {"rated_hints": "refused", "rated_analysis": "refused"}, user=ADMIN)
    await h.slash("play", {"game": "othello", "opponent": "easy"}, user=BOB)
    board = h.last_message(ephemeral=False)
    assert [b["custom_id"][:3] for b in buttons(board)][-1:] == ["rs:"]  # resign, no hint
    select = next(b for b in buttons(board) if b["custom_id"].startswith("ot:"))
    await h.click(board, select["custom_id"], user=BOB, values=[select["options"][0]["value"]])
    board = h.last_message(ephemeral=False)  # the bot has answered
    resign = next(b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("rs:"))
    await h.click(board, resign, user=BOB)
    final = h.last_message(ephemeral=False)
    snap = await bot.lobby.snapshot(int(resign.split(":")[1]))
    assert snap.match.rated and snap.match.ply >= 2 and not snap.live
    assert [b["custom_id"][:3] for b in buttons(final)] == ["rm:"]  # rated: no Analyse
