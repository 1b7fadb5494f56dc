"""The fuzz run's /settings and /prefs members (benchmarks/robustness/fuzz_settings.py) against
the real bot: every interaction answered, none unhandled or logged as an error, a member without
Manage Server never changes a setting, and no refusal changes a row of the settings, their log
or the preferences."""

from __future__ import annotations

import logging
import random
import sqlite3
from typing import Any

import discord
import pytest

from benchmarks.robustness.fuzz_settings import SettingsInputs
from tests.harness import DEFAULT_CHANNEL_ID, DEFAULT_GUILD_ID, user
from tests.harness.mentions import unescaped, unsafe_mentions

MOD = user(8999, "moderator", permissions=discord.Permissions(manage_guild=True))
PEOPLE = [user(9000 + i, f"m{i} @everyone **x**") for i in range(4)]
OTHER_GUILD = DEFAULT_GUILD_ID + 76


async def nobody(_: object) -> bool:
    return False


def rows(db: str) -> tuple[Any, ...]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(
            con.execute(sql).fetchall()
            for sql in (
                "SELECT guild_id, settings, updated_by FROM guild_settings ORDER BY 1",
                "SELECT id, player_id FROM settings_log ORDER BY 1",
                "SELECT player_id, board FROM member_prefs ORDER BY 1",
            )
        )
    finally:
        con.close()


async def test_hostile_settings_and_prefs_are_answered_and_refusals_change_nothing(
    env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot, h = env
    bot.owner_check = nobody
    db = bot.lobby.store.path
    fuzz = SettingsInputs(
        random.Random(5), h, PEOPLE, MOD, (DEFAULT_GUILD_ID, OTHER_GUILD),
        (DEFAULT_CHANNEL_ID, DEFAULT_CHANNEL_ID + 1),
    )  # fmt: skip
    counts = {"refused": 0, "accepted": 0, "members_refused": 0}
    for i in range(160):
        before = rows(db)
        calls = await (fuzz.gen_settings() if i % 4 else fuzz.gen_prefs())
        answers = [c for c in calls if c.is_callback or c.is_followup]
        assert answers, calls  # every interaction is answered
        assert [c for c in calls if unsafe_mentions(c, set()) or unescaped(c)] == []
        if any((c.content or "").startswith("⚠️") for c in answers):
            counts["refused"] += 1
            assert rows(db) == before, answers[-1].content
            if i % 4:  # a /settings
                counts["members_refused"] += "permission" in (answers[-1].content or "")
        else:
            counts["accepted"] += 1
    # every refusal a checked one: nothing unexpected ("something went wrong") was logged
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    settings = await bot.lobby.store.settings.get(DEFAULT_GUILD_ID)
    assert settings.values == {}  # members never changed the first guild; the moderator never did
    mod = await bot.lobby.store.players.find_user(MOD.id)
    for change in await bot.lobby.store.settings.history(OTHER_GUILD, limit=1000):
        assert mod is not None and change.player_id == mod.id
    assert counts["refused"] > 40 and counts["accepted"] > 10 and counts["members_refused"] > 10
