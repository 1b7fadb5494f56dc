"""Generated hostile input (hypothesis): Discord options and custom ids, console lines and
engine protocol lines. Every bad input gets one clear answer and changes nothing.

The full run is `python -m benchmarks.robustness.fuzz` (10,000 interactions against the real pool).
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogs.client import BoardBot
from console.dispatch import Console
from db.store import Store
from engine.agents import registry
from engine.agents.base import Budget
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from lobby.turns import Turns
from tests.harness import Harness, user
from tests.machine import scaled
from tools.serve import answer

GAMES = ("connect4", "othello")
HOSTILE = st.sampled_from(
    ["nan", "inf", "-inf", "-1", "0", "1e308", str(10**21), "x" * 6000, "²", "١٢", "１", "", " "]
)
NAMES = st.sampled_from(sorted({*registry.AGENTS, "easy", "medium", "hard", "expert"}))
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=120,
)


def spec_text() -> st.SearchStrategy[str]:
    """Agent names, raw specs with hostile values, and noise."""
    raw = st.builds(lambda n, k, v: f"{n}:{k}={v}", NAMES, st.sampled_from(
        ["time", "nodes", "depth", "lr", "c", "memory", "chance_plies", "eval", "x"]
    ), HOSTILE)  # fmt: skip
    return st.one_of(NAMES, raw, HOSTILE, TEXT)


def fingerprint(db: Path) -> tuple[Any, ...]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(
            con.execute(sql).fetchone()
            for sql in (
                "SELECT COUNT(*) FROM players",
                "SELECT COUNT(*) FROM matches",
                "SELECT COUNT(*) FROM challenges",
                "SELECT COUNT(*) FROM moves",
                "SELECT COUNT(*) FROM agent_memory_meta",
            )
        )
    finally:
        con.close()


class World:
    """One bot for a whole hypothesis run (building one per example would be too slow)."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.db = tmp / "fuzz.db"
        self.loop.run_until_complete(self._start())

    async def _start(self) -> None:
        self.pool = EnginePool(workers=0, warm=False)
        await self.pool.start()
        self.store = await Store.open(self.db)
        self.lobby = Lobby(self.store, self.pool, LobbyConfig(seed=1))
        self.bot = BoardBot(self.lobby, run_clock=False)

        async def nobody(_: Any) -> bool:
            return False

        self.bot.owner_check = nobody
        self.h = await Harness.create(self.bot, raise_errors=True, timeout=scaled(5.0))
        self.console = Console(self.lobby, io.StringIO(), "you", False)

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        async def stop() -> None:
            await self.h.close()
            await self.lobby.close()
            await self.store.close()
            await self.pool.close()

        self.loop.run_until_complete(stop())
        self.loop.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("fuzz"))

    async def idle(
        self: Turns, match_id: int, asked: float
    ) -> Any:  # no agent moves: only the requests
        return await self._matches.snapshot(match_id)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Turns, "_turn", idle)
        yield w
    w.close()


def refused(calls: list[Any]) -> bool:
    answers = [c for c in calls if c.is_callback or c.is_followup]
    return bool(answers) and all(c.ephemeral for c in answers)


SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(
    command=st.sampled_from(["play", "botmatch", "train"]),
    game=st.sampled_from([*GAMES, "chess", "²"]),
    first=spec_text(),
    second=spec_text(),
    number=st.one_of(st.integers(-(10**21), 10**21), st.floats(allow_nan=True)),
    who=st.integers(1, 5),
)
def test_slash_options_from_and_around_the_valid_ones(
    world: World, command: str, game: str, first: str, second: str, number: Any, who: int
) -> None:
    """Every option value reaches our code as Discord could send it (raw option dicts): each
    request is answered, nothing is logged as an error, and a refusal changes no row."""
    value = (first or "x")[:6000]
    options: list[dict[str, Any]] = [{"name": "game", "type": 3, "value": game}]
    if command == "play":
        options.append({"name": "opponent", "type": 3, "value": value})
    elif command == "botmatch":
        options += [
            {"name": "first", "type": 3, "value": value},
            {"name": "second", "type": 3, "value": (second or "x")[:6000]},
            {"name": "delay", "type": 10, "value": number},
        ]
    else:
        options += [
            {"name": "agent", "type": 3, "value": value},
            {"name": "games", "type": 4, "value": number},
        ]
    before = fingerprint(world.db)
    calls = world.run(
        world.h.slash(command, options, user=user(500 + who, f"p{who}"), expect_response=False)
    )
    assert [c for c in calls if c.is_callback], "every request is answered"
    if refused(calls):
        assert fingerprint(world.db) == before


@SETTINGS
@given(
    prefix=st.sampled_from(
        ["c4", "ot", "rs", "rm", "st", "ch:a", "ch:d", "zz", "pz:c4-0a", "pz:m1.0", "pq", "pn"]
    ),
    parts=st.lists(
        st.one_of(st.integers(-5, 10**21).map(str), HOSTILE, st.text(max_size=4)), max_size=5
    ),
    who=st.integers(1, 5),
)
def test_forged_custom_ids_are_refused_or_ignored(
    world: World, prefix: str, parts: list[str], who: int
) -> None:
    if not world.h.messages or not any(
        m.get("components") for m in world.h.messages.values()
    ):  # a board to forge on
        world.run(world.h.slash("play", {"game": "connect4"}, user=user(599, "maker")))
    custom_id = ":".join([prefix, *parts])[:100] or "x"
    msg = next(m for m in reversed(list(world.h.messages.values())) if m.get("components"))
    copy = json.loads(json.dumps(msg))
    button = next(c for row in copy["components"] for c in row["components"] if c["type"] == 2)
    button["custom_id"] = custom_id
    button.pop("disabled", None)
    before = fingerprint(world.db)
    calls = world.run(
        world.h.click(
            copy, custom_id, user=user(500 + who, f"p{who}"), force=True, expect_response=False
        )
    )
    if refused(calls) or not calls:
        assert fingerprint(world.db) == before


@SETTINGS
@given(
    line=st.one_of(
        TEXT,
        st.builds(
            lambda c, k, v: f"/{c} {k}:{v}",
            st.sampled_from(["play", "botmatch", "challenge", "train", "as", "stats", "nope"]),
            st.sampled_from(["game", "opponent", "first", "second", "delay", "games", "foo"]),
            st.one_of(HOSTILE, TEXT.map(lambda t: t.replace(" ", "")), spec_text()),
        ),
    )
)
def test_console_lines_get_at_most_one_error_line_and_change_nothing(
    world: World, line: str
) -> None:
    console = world.console
    out = io.StringIO()
    console.out = out
    before = fingerprint(world.db)
    world.run(console.handle(line))
    errors = [x for x in out.getvalue().splitlines() if x.startswith("error:")]
    assert len(errors) <= 1
    assert "Traceback" not in out.getvalue()
    if errors:
        assert fingerprint(world.db) == before, (line, errors)


@settings(max_examples=200, deadline=None)
@given(game=st.sampled_from(GAMES), line=st.one_of(TEXT, st.text(max_size=5000)))
def test_engine_protocol_lines_get_exactly_one_reply(game: str, line: str) -> None:
    agent = registry.build(registry.resolve("random", game)[0], game)
    reply = answer(line.replace("\n", " "), game, agent, Budget(), random.Random(0))
    assert "\n" not in reply and reply.strip()
    if reply.startswith("error:"):
        assert len(reply) < 400  # one clear line, not a dump
