"""Boards everyone can read, through discord.py's real dispatch (tests/harness): every board
carries the position in words, and `/prefs board:image` shows a member's boards as a picture
whose alt text is those words; names escaped, nobody pinged, every request as Discord's API
description allows (the harness checks each one)."""

from __future__ import annotations

from typing import Any

from cogs.render import WORDS_FIELD
from tests.boardbot import ALICE, BOB, buttons, column_ids, description
from tests.harness import Call, assert_within_limits, user
from tests.harness.mentions import HOSTILE_PARTS, unescaped, unsafe_mentions

EPHEMERAL = 64


def words(message: dict[str, Any]) -> str:
    [field] = [f for f in message["embeds"][0].get("fields", []) if f["name"] == WORDS_FIELD]
    return str(field["value"])


def ephemeral_text(h: Any) -> str:
    return str(h.last_message(ephemeral=True)["content"])


async def test_an_emoji_board_has_the_position_in_words_under_it(env: Any) -> None:
    _bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    assert "1️⃣2️⃣3️⃣4️⃣5️⃣6️⃣7️⃣" in description(board) and board["attachments"] == []
    assert words(board).startswith("Connect Four, move 1: red (alice) to play.")
    assert "Legal moves: 1, 2, 3, 4, 5, 6, 7. Position: the board is empty." in words(board)
    await h.click(board, column_ids(board)[3], user=ALICE)
    board = h.last_message(ephemeral=False)
    text = words(board)  # the bot's answer is in, whatever it was
    assert text.startswith("Connect Four, move 3: red (alice) to play.")
    assert "column 4: red" in text and "Last move: yellow column" in text


async def test_prefs_image_shows_a_picture_with_alt_text_instead_of_emoji(env: Any) -> None:
    bot, h = env
    await h.slash("prefs", {}, user=ALICE)
    assert "as emoji" in ephemeral_text(h)
    calls: list[Call] = await h.slash("prefs", {"board": "image"}, user=ALICE)
    assert "as a picture" in ephemeral_text(h)
    calls += await h.slash("play", {"game": "othello", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    [picture] = board["attachments"]
    assert picture["filename"].endswith(".png")
    assert picture["description"].startswith("Othello, move 1: black (alice) to play.")
    assert "Position: black: d5 e4; white: d4 e5." in picture["description"]
    assert "🟩" not in description(board) and "fields" not in board["embeds"][0]
    sent = [c for c in calls if c.files]
    assert sent and all(blob.startswith(b"\x89PNG") for c in sent for blob in c.files.values())
    # A move: the picture is replaced by the new position's (a new name, so clients reload it).
    select = next(b for b in buttons(board) if b["custom_id"].startswith("ot:"))
    calls = await h.click(
        board, select["custom_id"], user=ALICE, values=[select["options"][0]["value"]]
    )
    board = h.last_message(ephemeral=False)
    [after] = board["attachments"]
    assert after["filename"] != picture["filename"]
    assert "Last move: " in after["description"] and "move 3: black" in after["description"]
    for call in calls:
        if call.json:
            assert_within_limits(call)
    # Back to emoji: the next board has no picture and its words again.
    await h.slash("prefs", {"board": "emoji"}, user=ALICE)
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    assert board["attachments"] == [] and words(board).startswith("Connect Four")
    assert await bot.lobby.store.prefs.board_styles([1, 2, 3]) in ({1: "emoji"}, {2: "emoji"})


async def test_a_picture_when_either_person_of_a_match_prefers_one(env: Any) -> None:
    _bot, h = env
    await h.slash("prefs", {"board": "image"}, user=BOB)
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    board = h.last_message(ephemeral=False)
    [picture] = board["attachments"]
    assert picture["description"].startswith("Connect Four, move 1: red (alice) to play.")


async def test_hostile_names_are_escaped_in_the_words_and_the_alt_text(env: Any) -> None:
    _bot, h = env
    mallory = user(666, " ".join(HOSTILE_PARTS))
    calls: list[Call] = []
    calls += await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=mallory)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    calls += await h.click(invite, accept, user=BOB)
    board = h.last_message(ephemeral=False)
    assert "red (@\u200beveryone @\u200bhere \\<@\u200b&555\\>" in words(board)
    calls += await h.slash("prefs", {"board": "image"}, user=BOB)
    calls += await h.click(board, column_ids(board)[0], user=mallory)
    board = h.last_message(ephemeral=False)
    calls += await h.click(board, column_ids(board)[1], user=BOB)
    board = h.last_message(ephemeral=False)
    [picture] = board["attachments"]
    assert "@\u200beveryone" in picture["description"]
    assert [bad for c in calls if (bad := unescaped(c))] == []
    assert [why for c in calls if (why := unsafe_mentions(c, {str(BOB.id)}))] == []
