"""Puzzles on Discord, through the harness (real dispatch, subcommands nested as Discord sends):
/puzzle play for the asker alone, answered with the board's own inputs; /puzzle daily for the
channel, each answer told to its player alone, posted once a day in the announcement channel;
/puzzle stats; the board picture when preferred; forged ids refused in one line; a puzzle
answered after a restart."""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

import cogs.puzzleinputs as inputs
from engine.puzzles.pool import Puzzle, load_pool
from lobby.core import Person
from lobby.pool import EnginePool
from lobby.puzzle import position
from tests.boardbot import ALICE, BOB, buttons, callbacks, make_bot
from tests.clock import Clock
from tests.harness import DEFAULT_CHANNEL_ID, Call, FakeUser, Harness, http_error, user
from tests.harness.mentions import HOSTILE_PARTS, unescaped, unsafe_mentions
from tests.harness.payloads import FLAG_EPHEMERAL
from tests.lobby.test_retry import LATE, discord_game, only_the_late_blunder, warm_solvers

ANNOUNCE = 700_000_000_000_000_555


async def puzzle(
    h: Harness,
    sub: str,
    options: dict[str, Any] | None = None,
    *,
    user: FakeUser,
) -> list[Call]:
    """`/puzzle <sub>`: Discord sends it as a subcommand of the group, its options nested."""
    calls = await h.slash(f"puzzle {sub}", options or {}, user=user)
    assert callbacks(calls), f"/puzzle {sub} was not answered"
    return calls


def ids(message: dict[str, Any], prefix: str) -> list[str]:
    return [b["custom_id"] for b in buttons(message) if b["custom_id"].startswith(prefix)]


def text_of(message: dict[str, Any]) -> str:
    return str(message["embeds"][0]["description"])


def ephemeral(message: dict[str, Any]) -> bool:
    return bool(int(message.get("flags") or 0) & FLAG_EPHEMERAL)


def refusal(calls: list[Call]) -> str:
    lines = [c.content or "" for c in calls if (c.is_callback or c.is_followup) and c.ephemeral]
    assert lines, f"not refused: {calls}"
    return re.sub(r"\\(.)", r"\1", lines[-1]).replace("\u200b", "")


def the_puzzle(message: dict[str, Any]) -> Puzzle:
    key = message["embeds"][0]["footer"]["text"].removeprefix("Puzzle ")
    return next(p for g in ("connect4", "othello") for p in load_pool(g) if p.id == key)


def column(p: Puzzle, move: str) -> str:
    return f"pz:{p.id}:{int(move) - 1}"


def wrong(p: Puzzle) -> str:
    state, _ = position(p.game, p.moves)
    return next(t for m in state.legal_moves() if (t := state.move_to_str(m)) != p.answer)


async def test_play_answer_right_then_next_then_wrong(env: Any) -> None:
    _bot, h = env
    await puzzle(h, "play", {"game": "connect4"}, user=ALICE)
    shown = h.last_message()
    assert ephemeral(shown) and shown["embeds"][0]["title"] == "Connect Four puzzle"
    assert "to play and win in" in text_of(shown)
    assert shown["embeds"][0]["fields"][0]["name"] == "Board in words"
    p = the_puzzle(shown)
    assert len(ids(shown, "pz:")) == 7 and all(
        i.startswith(f"pz:{p.id}:") for i in ids(shown, "pz")
    )
    [cb] = callbacks(await h.click(shown, column(p, p.answer), user=ALICE))
    assert cb.callback_type == 7  # the message itself turns into the verdict
    answered = h.messages[int(shown["id"])]
    assert f"✅ Column {p.answer} is right." in text_of(answered)
    assert f"The solver's line: {' '.join(p.line)} (" in text_of(answered)
    assert "Your puzzle rating: " in text_of(answered) and "streak 1" in text_of(answered)
    assert ids(answered, "pz:") == [] and ids(answered, "pn:") == ["pn:connect4"]

    await h.click(answered, "pn:connect4", user=ALICE)
    second = h.messages[int(shown["id"])]
    q = the_puzzle(second)
    assert q.id != p.id and ids(second, "pz:")
    await h.click(second, column(q, wrong(q)), user=ALICE)
    missed = text_of(h.messages[int(shown["id"])])
    assert f"❌ Column {wrong(q)} is not it: the answer was column {q.answer}." in missed
    assert "streak 0" in missed

    await puzzle(h, "stats", {}, user=BOB)
    assert h.last_message()["embeds"][0]["title"] == "Puzzles of bob"
    await puzzle(h, "stats", {"user": ALICE}, user=BOB)
    stats = h.last_message()
    assert not ephemeral(stats) and stats["embeds"][0]["title"] == "Puzzles of alice"
    assert "1 of 2 solved · streak 0 (best 1)" in text_of(stats)


async def test_forged_and_stale_ids_are_refused_in_one_line(env: Any) -> None:
    bot, h = env
    await puzzle(h, "play", {"game": "connect4"}, user=ALICE)
    shown = h.last_message()
    p = the_puzzle(shown)
    before = copy.deepcopy(h.messages[int(shown["id"])])
    for cid, words in (
        ("pz:c4-000000000000:3", "there is no such puzzle"),
        ("pz:m999.8:3", "there is no match #999"),
        (f"pz:{p.id}:9", "not legal"),
    ):
        forged: dict[str, Any] = json.loads(json.dumps(shown))
        forged["components"][0]["components"][0]["custom_id"] = cid
        calls = await h.click(forged, cid, user=ALICE, force=True)
        assert words in refusal(calls), cid
    assert h.messages[int(shown["id"])] == before  # nothing changed
    assert await bot.lobby.store.puzzles.scores(1) == []
    for module_class in (inputs.PuzzleColumn, inputs.PuzzleSelect, inputs.NextPuzzleButton):
        assert module_class in set(bot._connection._view_store._dynamic_items.values())
        assert module_class._on_click is not None


async def test_the_daily_for_everyone_and_its_post_in_the_announcement_channel(env: Any) -> None:
    bot, h = env
    guild = h.guild_id
    await bot.lobby.change_settings(guild, Person("user", ALICE.id, "alice"),
                                    {"announcements": ANNOUNCE})  # fmt: skip
    await puzzle(h, "daily", {"game": "othello"}, user=ALICE)
    daily = h.last_message(DEFAULT_CHANNEL_ID)
    assert not ephemeral(daily) and daily["embeds"][0]["title"].startswith("Daily Othello puzzle")
    posted = h.last_message(ANNOUNCE)
    assert posted["embeds"][0]["title"] == daily["embeds"][0]["title"]
    await puzzle(h, "daily", {"game": "othello"}, user=BOB)  # once a day: no second post
    assert [m for m in h.messages.values() if int(m["channel_id"]) == ANNOUNCE] == [posted]

    p = the_puzzle(daily)
    [select] = [c for row in daily["components"] for c in row["components"] if c["type"] == 3]
    value = next(o["value"] for o in select["options"] if o["label"] == p.answer)
    calls = await h.click(daily, select["custom_id"], user=BOB, values=[value])
    [cb] = callbacks(calls)
    assert cb.ephemeral and cb.callback_type == 4  # told to bob alone
    told = h.last_message(ephemeral=True)
    assert f"✅ Square {p.answer} is right." in text_of(told) and "daily streak 1" in text_of(told)
    assert h.messages[int(daily["id"])] == daily  # the channel's puzzle stays for the others
    calls = await h.click(daily, select["custom_id"], user=BOB, values=[value])
    assert "not rated" in text_of(h.last_message(ephemeral=True))


async def test_a_picture_when_preferred(env: Any) -> None:
    bot, h = env
    await bot.lobby.set_board_style(Person("user", ALICE.id, "alice"), "image")
    await puzzle(h, "play", {"game": "othello"}, user=ALICE)
    shown = h.last_message()
    [attachment] = shown["attachments"]
    assert (
        attachment["filename"].endswith(".png") and "Position: black:" in attachment["description"]
    )
    assert shown["embeds"][0]["image"]["url"].startswith("attachment://")
    assert not shown["embeds"][0].get("fields")  # the words are the picture's alt text
    p = the_puzzle(shown)
    [select] = [c for row in shown["components"] for c in row["components"] if c["type"] == 3]
    value = next(o["value"] for o in select["options"] if o["label"] == p.answer)
    await h.click(shown, select["custom_id"], user=ALICE, values=[value])
    answered = h.messages[int(shown["id"])]
    assert len(answered["attachments"]) == 1 and "is right" in text_of(answered)


async def test_a_puzzle_is_answered_after_a_restart(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    db = tmp_path / "restart.db"
    bot, h = await make_bot(db, clock, pool)
    await puzzle(h, "daily", {"game": "connect4"}, user=ALICE)
    daily = h.last_message(ephemeral=False)
    await h.close()
    await bot.lobby.close()
    await bot.lobby.store.close()
    bot2, h2 = await make_bot(db, clock, pool, h.messages)  # Discord kept the message
    try:
        p = the_puzzle(daily)
        await h2.click(daily, column(p, p.answer), user=BOB)
        assert "is right" in text_of(h2.last_message(ephemeral=True))
    finally:
        await h2.close()
        await bot2.lobby.close()
        await bot2.lobby.store.close()


@pytest.fixture(scope="module")
def _solvers_warm() -> None:
    warm_solvers()


@pytest.mark.usefixtures("_solvers_warm")
async def test_ones_own_blunder_first_judged_by_the_solvers(env: Any) -> None:
    bot, h = env
    bot.lobby.config.analysis_seconds = 1.0
    n = await discord_game(bot.lobby)
    await only_the_late_blunder(bot.lobby, n)
    await puzzle(h, "play", {"game": "connect4"}, user=ALICE)
    shown = h.last_message()
    assert shown["embeds"][0]["title"] == "Connect Four: learn from your mistakes"
    assert shown["embeds"][0]["footer"]["text"] == f"Puzzle m{n}.{LATE}"
    assert f"From your match #{n}, move {LATE + 1}: 🔴 **alice** to play." in text_of(shown)
    cid = f"pz:m{n}.{LATE}:0"
    forged: dict[str, Any] = json.loads(json.dumps(shown))
    assert "is not yours" in refusal(await h.click(forged, cid, user=BOB))  # alice's blunder
    await h.click(shown, f"pz:m{n}.{LATE}:6", user=ALICE)  # the blunder again
    missed = h.messages[int(shown["id"])]
    assert "Column 7 does not hold: win -> loss" in text_of(missed)
    assert "The best move was column 1" in text_of(missed) and ids(missed, "pn:")
    await puzzle(h, "play", {"game": "connect4"}, user=ALICE)  # served once: a shipped one now
    assert h.last_message()["embeds"][0]["title"].endswith("Connect Four puzzle")


async def test_a_hostile_name_pings_nobody_and_shows_as_plain_text(env: Any) -> None:
    _bot, h = env
    mallory = user(666, " ".join(HOSTILE_PARTS))
    calls = await puzzle(h, "play", {"game": "connect4"}, user=mallory)
    shown = h.last_message()
    p = the_puzzle(shown)
    calls += await h.click(shown, column(p, p.answer), user=mallory)
    calls += await puzzle(h, "stats", {}, user=mallory)
    calls += await puzzle(h, "stats", {"user": mallory}, user=BOB)
    assert "Puzzles of " in h.last_message()["embeds"][0]["title"]
    assert [why for c in calls if (why := unsafe_mentions(c, ()))] == []
    assert [bad for c in calls if (bad := unescaped(c))] == []


async def test_the_daily_post_is_not_doubled_in_its_own_channel_nor_an_error_when_refused(
    env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot, h = env
    admin = Person("user", ALICE.id, "alice")
    await bot.lobby.change_settings(h.guild_id, admin, {"announcements": DEFAULT_CHANNEL_ID})
    await puzzle(h, "daily", {"game": "connect4"}, user=ALICE)  # asked in that very channel
    assert len(h.messages) == 1

    def refused(call: Call) -> Any:
        raise http_error(403, 50013, "Missing Permissions")

    h.responders[("POST", "/channels/{channel_id}/messages")] = refused
    await bot.lobby.change_settings(h.guild_id, admin, {"announcements": ANNOUNCE})
    with caplog.at_level(logging.WARNING):
        await puzzle(h, "daily", {"game": "othello"}, user=ALICE)
    assert h.last_message()["embeds"][0]["title"].startswith("Daily Othello puzzle")
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("cogs")]
    assert said and all(level == logging.WARNING for level, _ in said), said
    assert "the daily puzzle was not posted" in said[0][1]
