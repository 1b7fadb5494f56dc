"""What the fuzz run's members send to `/settings` and `/prefs` (`fuzz.py` runs them): options
from and around the valid ones (every bound and one past it, the wrong type, hostile text,
mentions where a channel goes), by members without Manage Server (always refused) and by the
moderator. The moderator changes the second guild only, so the limits the run probes in the
first stay the bot's own; a refusal must change no row (the run's fingerprint covers the
settings, their log and the preferences)."""

from __future__ import annotations

from typing import Any

from benchmarks.robustness.fuzz_inputs import Inputs
from tests.harness import Call

#: Hostile text for the text options.
TEXT = [
    "any",
    "all",
    "none",
    "<#1>",
    "<#700000000000000002>",
    "<#700000000000000002> <#700000000000000003>",
    "#general",
    "@everyone",
    "<@&555>",
    "connect4 othello",
    "chess",
    "easy, medium",
    "EXPERT",
    "nan",
    "x" * 3000,
    "",
    " ",
    "'; DROP TABLE guild_settings; --",
    "\x00",
    "１",
]
#: (option, Discord type, valid values and the ones around them)
OPTIONS: list[tuple[str, int, list[Any]]] = [
    ("channels", 3, TEXT),
    ("turn_seconds", 4, [-1, 0, 29, 30, 600, 604800, 604801, 10**18]),
    ("bot_games", 4, [-1, 0, 1, 100, 101, 2**63]),
    ("bot_matches", 4, [-1, 0, 2, 100, 101]),
    ("server_bot_matches", 4, [-1, 0, 5, 1000, 1001]),
    ("challenges", 4, [-1, 0, 5, 100, 101]),
    ("games", 3, TEXT),
    ("levels", 3, TEXT),
    ("rated_hints", 3, ["allowed", "refused", "maybe", ""]),
    ("rated_analysis", 3, ["allowed", "refused", "yes"]),
    ("announcements", 3, TEXT),
    ("reset", 3, ["all", "levels", "channels", "nosuch", "x" * 200]),
]


class SettingsInputs(Inputs):
    """The /settings and /prefs interactions of the run (in its first channel)."""

    async def gen_settings(self) -> list[Call]:
        rng = self.rng
        moderator = rng.random() < 0.5
        who = self.mod if moderator else rng.choice(self.people)
        guild = self.guilds[1] if moderator else rng.choice(self.guilds)
        raw = []
        for name, kind, values in rng.sample(OPTIONS, rng.randint(0, 3)):
            value = rng.choice(values)
            if rng.random() < 0.1:  # the wrong type: what no client sends
                kind, value = (3, str(value)) if kind == 4 else (4, rng.randrange(-5, 5))
            raw.append({"name": name, "type": kind, "value": value})
        return await self.h.slash(
            "settings", raw, user=who, guild_id=guild, channel_id=self.channels[0],
            expect_response=False,
        )  # fmt: skip

    async def gen_prefs(self) -> list[Call]:
        value = self.rng.choice(["emoji", "image", "picture", "", "IMAGE", *TEXT[:4]])
        raw = [] if self.rng.random() < 0.2 else [{"name": "board", "type": 3, "value": value}]
        return await self.h.slash(
            "prefs", raw, user=self.rng.choice(self.people), guild_id=self.guilds[0],
            channel_id=self.channels[0], expect_response=False,
        )  # fmt: skip
