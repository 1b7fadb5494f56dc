"""The fuzz run's /tournament members (benchmarks/robustness/fuzz_tournaments.py) against the
real bot: every interaction answered in one line, none unhandled, nobody mentioned and no name's
markdown shown, no refusal changing what the fuzz run's fingerprint covers (players, tournaments,
their entrants and first rounds among them), and what the store holds at the end keeping the
rules. Then generated `/tournament create` options (hypothesis)
from and around the valid ones: a refusal changes nothing, and what is taken is stored as the
rules have it."""

from __future__ import annotations

import itertools
import logging
import math
import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import discord
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.robustness.fuzz_figures import FINGERPRINT
from benchmarks.robustness.fuzz_tournaments import (
    FORMAT_VALUES,
    GAMES,
    TOURNAMENT_RULES,
    TournamentInputs,
    tournament_rules,
)
from tests.harness import DEFAULT_CHANNEL_ID, DEFAULT_GUILD_ID, Call, user
from tests.harness.mentions import unescaped, unsafe_mentions
from tests.robustness.test_fuzz import SETTINGS, TEXT, World, world

__all__ = ["world"]  # the fixture: one bot for the module, whose agents never move

MOD = user(8999, "moderator", permissions=discord.Permissions(manage_guild=True))
PEOPLE = [user(9000 + i, f"m{i} @everyone **x**") for i in range(5)]
OTHER_GUILD = DEFAULT_GUILD_ID + 76


def reader(db: str | Path) -> Any:
    def read(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    return read


def rows(db: str | Path) -> tuple[Any, ...]:
    read = reader(db)
    return tuple(read(sql)[0] for _name, sql in FINGERPRINT)


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What was logged as an ERROR (an unexpected exception, the person told "something went
    wrong")."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def refusals(calls: list[Call]) -> list[str]:
    answers = [c for c in calls if c.is_callback or c.is_followup]
    assert answers, calls  # every interaction is answered
    return [c.content or "" for c in answers if (c.content or "").startswith("⚠️")]


def test_hostile_tournament_requests_are_answered_and_refusals_change_nothing(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    fuzz = TournamentInputs(
        random.Random(3), world.h, PEOPLE, MOD, (DEFAULT_GUILD_ID, OTHER_GUILD),
        (DEFAULT_CHANNEL_ID, DEFAULT_CHANNEL_ID + 1),
    )  # fmt: skip
    counts: Counter[str] = Counter()
    for _ in range(240):
        before = rows(world.db)
        calls = world.run(fuzz.gen_tournament())
        assert [c for c in calls if unsafe_mentions(c, set()) or unescaped(c)] == []
        refused = refusals(calls)
        if refused:
            counts["refused"] += 1
            assert len(refused) == 1 and "\n" not in refused[0], refused
            assert rows(world.db) == before, refused[0]
        else:
            counts["accepted"] += 1
    assert errors(caplog) == []  # nothing unexpected: every refusal is a checked one
    details: list[str] = []
    rules = tournament_rules(reader(world.db), world.lobby.config, details)
    assert {k: rules[k] for k in TOURNAMENT_RULES if rules.get(k)} == {}, details
    assert counts["refused"] > 60 and counts["accepted"] > 40, counts
    assert rules["tournaments"] > 5 and rules["started"] > 1, rules


#: A server and a channel of its own for each example (a server holds at most 3 tournaments).
PLACES = itertools.count(800_000_000_000_000_000, 10)
NUMBER = st.one_of(
    st.none(),
    st.sampled_from([0, 1, 12, 13, 29, 30, 86400, 86401, 10080, 10081, -1]),
    st.integers(-(10**21), 10**21),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["3", "30", "nan", "", "x"]),
)


def option(name: str, value: Any) -> dict[str, Any]:
    """A raw option as a client could send it: its Discord type taken from the value."""
    kind = 3 if isinstance(value, str) else 10 if isinstance(value, float) else 4
    return {"name": name, "type": kind, "value": value}


@SETTINGS
@given(
    game=st.one_of(st.sampled_from(GAMES), TEXT),
    fmt=st.one_of(st.sampled_from(FORMAT_VALUES), TEXT),
    rounds=NUMBER,
    clock=NUMBER,
    start=NUMBER,
)
def test_create_options_from_and_around_the_valid_ones(
    world: World,
    caplog: pytest.LogCaptureFixture,
    game: str,
    fmt: str,
    rounds: Any,
    clock: Any,
    start: Any,
) -> None:
    guild = next(PLACES)
    options = [option("game", game), option("format", fmt)]
    options += [option(n, v) for n, v in (("rounds", rounds), ("clock", clock), ("start", start))]
    options = [o for o in options if o["value"] is not None]
    before, logged = rows(world.db), len(errors(caplog))
    calls = world.run(
        world.h.slash(
            "tournament create", options, user=MOD, guild_id=guild, channel_id=guild + 1,
            expect_response=False,
        )
    )  # fmt: skip
    assert errors(caplog)[logged:] == [], options
    refused = refusals(calls)
    if refused:
        assert len(refused) == 1 and "\n" not in refused[0], refused
        assert rows(world.db) == before, refused[0]
        return
    details: list[str] = []
    rules = tournament_rules(reader(world.db), world.lobby.config, details)
    assert rules.get("bad_tournaments", 0) == 0, (options, details)
    assert not any(isinstance(v, float) and not math.isfinite(v) for v in (rounds, clock, start))
