"""`/train` and `/agents` through discord.py's real dispatch (offline harness, real SQLite)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import pytest

from cogs.client import BoardBot
from cogs.training import agent_pages
from db.models import MemoryInfo, Rating
from db.store import Store
from engine.agents import registry
from lobby.core import Lobby, LobbyConfig, Person
from lobby.overview import AgentOverview
from lobby.pool import EnginePool
from tests.counting import KIND
from tests.harness import DEFAULT_GUILD_ID, Call, Harness, assert_within_limits, user
from tests.machine import scaled

ADMIN_ROLE = 777
ALICE = user(201, "alice")
OWNER = user(202, "owner")
ADMIN = user(203, "admin", roles=[ADMIN_ROLE])  # the bot's admin role in its home server
MANAGER = user(
    204, "manager", permissions=discord.Permissions(manage_guild=True, view_channel=True)
)

EPHEMERAL = 64
CHANNEL_MESSAGE = 4


pytestmark = pytest.mark.usefixtures("counting")


async def _no_sleep(_: float) -> None:
    await asyncio.sleep(0)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[BoardBot, Harness]]:
    pool = EnginePool(workers=0)
    await pool.start()
    store = await Store.open(tmp_path / "train.db")
    # The fake learning agent is named by spec and learns: the bot itself allows neither.
    config = LobbyConfig(seed=3, raw_specs=True, learn_any=True)
    lobby = Lobby(store, pool, config, sleep=_no_sleep)
    lobby.learning.training.batch_seconds = 0.01  # several batches, several progress edits
    bot = BoardBot(lobby, run_clock=False, home_guild=DEFAULT_GUILD_ID, admin_role=ADMIN_ROLE)
    bot.editor.play_interval = 0.0
    bot.editor.spectate_interval = 0.0
    h = await Harness.create(bot, timeout=scaled(30.0))
    try:
        # the extension is loaded as its own module object: no isinstance check here
        cog: Any = bot.get_cog("Training")
        assert cog is not None
        cog.progress_interval = 0.01

        async def is_owner(u: discord.abc.User) -> bool:
            return u.id == OWNER.id

        bot.owner_check = is_owner
        yield bot, h
    finally:
        await h.close()
        await lobby.close()
        await store.close()
        await pool.close()


def callbacks(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.is_callback]


def progress_edits(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.seam == "webhook" and c.method == "PATCH"]


async def test_train_is_refused_to_members_without_rights(env: Any) -> None:
    bot, h = env
    for who in (ALICE, MANAGER):  # Manage Server in some server is not enough: memory is global
        calls = await h.slash("train", {"game": "connect4", "agent": KIND, "games": 5}, user=who)
        [cb] = callbacks(calls)
        assert cb.ephemeral and "owner" in (cb.content or "")
        assert progress_edits(calls) == []
    assert await bot.lobby.store.memory.infos() == []


async def test_a_manager_trains_with_progress_edits_and_rows_stored(env: Any) -> None:
    bot, h = env
    calls = await h.slash("train", {"game": "connect4", "agent": KIND, "games": 60}, user=ADMIN)
    for call in calls:
        if call.json:
            assert_within_limits(call)
    [cb] = callbacks(calls)
    assert calls[0] is cb  # acknowledged first, before any training result
    assert cb.callback_type == CHANNEL_MESSAGE and not cb.ephemeral
    assert "0/60 games" in cb.embeds[0]["description"]
    edits = progress_edits(calls)
    assert len(edits) >= 2
    final = edits[-1].embeds[0]
    assert "done" in final["title"] and "60/60 games" in final["description"]
    assert "games/s" in final["description"] and "score over the last" in final["description"]
    info = await bot.lobby.store.memory.info(KIND, "default")
    assert info is not None and info.games_trained == 60 and info.rows > 1
    # the shown message is the edited one
    shown = h.last_message(ephemeral=False)
    assert "60/60 games" in shown["embeds"][0]["description"]


async def test_the_owner_may_train_and_bad_requests_are_ephemeral(env: Any) -> None:
    bot, h = env
    calls = await h.slash(
        "train",
        {"game": "connect4", "agent": f"{KIND}:memory=owner", "games": 3},
        user=OWNER,
        guild_id=None,
    )
    assert not callbacks(calls)[0].ephemeral
    info = await bot.lobby.store.memory.info(KIND, "owner")
    assert info is not None and info.games_trained == 3
    [cb] = callbacks(
        await h.slash("train", {"game": "connect4", "agent": "random", "games": 3}, user=OWNER)
    )
    assert cb.ephemeral and "does not learn" in (cb.content or "")
    [cb] = callbacks(
        await h.slash("train", {"game": "connect4", "agent": "nope", "games": 3}, user=OWNER)
    )
    assert cb.ephemeral and "unknown agent" in (cb.content or "")


async def test_train_autocomplete_offers_learning_agents(env: Any) -> None:
    _bot, h = env
    choices = await h.autocomplete(
        "train", {"game": "connect4", "agent": ""}, focused="agent", user=ADMIN
    )
    names = [c["value"] for c in choices]
    assert names == ["trainer"]  # the bot's own learning players only


async def test_agents_lists_every_agent_within_limits(env: Any) -> None:
    _bot, h = env
    await h.slash("train", {"game": "connect4", "agent": KIND, "games": 4}, user=ADMIN)
    calls = await h.slash("agents", {"game": "connect4"}, user=ALICE)
    messages = [c for c in calls if c.is_callback or c.is_followup]
    assert messages and not messages[0].ephemeral
    text = ""
    for call in messages:
        assert_within_limits(call)
        for embed in call.embeds:
            text += embed["title"] + "\n"
            for f in embed.get("fields", []):
                text += f["name"] + "\n" + f["value"] + "\n"
    for info in registry.agents_for("connect4"):
        assert info.name in text and info.description[:40] in text
    assert "minimax (levels medium, hard)" in text
    assert "**Memory** default: " in text and "4 games learned" in text
    assert (
        "trainer\nlearns from its own games" in text
        and "nothing yet (train it with /train agent:trainer)" in text
    )
    calls = await h.slash("agents", {}, user=ALICE)  # both games
    for call in calls:
        if call.is_callback or call.is_followup:
            assert_within_limits(call)
    titles = [e["title"] for c in calls for e in c.embeds]
    assert "Connect Four agents" in titles and "Othello agents" in titles


async def test_agents_shows_ratings_of_levels(env: Any) -> None:
    bot, h = env
    lobby: Lobby = bot.lobby
    someone = Person("local", "a", "A")
    snap = await lobby.start_pve(someone, "othello", "easy")
    await lobby.resign(snap.id, someone)
    [cb] = callbacks(await h.slash("agents", {"game": "othello"}, user=ALICE))
    fields = {f["name"]: f["value"] for f in cb.embeds[0]["fields"]}
    value = fields["weightgrid (level easy)"]
    assert "**Rating** level easy: " in value and "(1 game: 1W 0D 0L)" in value


def test_agent_pages_split_long_lists_within_discord_limits() -> None:
    rating = Rating(player_id=1, game="connect4", mu=30.0, sigma=2.0, games=9, wins=5)
    grid = "\n".join("🟥🟧🟨🟩🟦🟩🟨🟧" for _ in range(8))
    many = [
        AgentOverview(
            "connect4" if i % 3 else "othello",
            f"agent{i}",
            "x" * (300 + 40 * i),
            ["easy"] if i % 5 == 0 else [],
            [("default", rating)],
            True,
            [MemoryInfo(kind="k", name=f"m{j}", rows=j, games_trained=j) for j in range(3)],
            {"m0": [grid, "legend"], "m1": [grid, "legend"]},
        )
        for i in range(70)
    ]
    pages = agent_pages(many, ["connect4", "othello"])
    assert len(pages) > 1
    shown = 0
    for page in pages:
        payload = {"embeds": [e.to_dict() for e in page]}
        assert_within_limits(payload)
        shown += sum(len(e.fields) for e in page)
    assert shown == 70
    values = [f.value for page in pages for e in page for f in e.fields]
    assert all(v is not None and len(v) <= 1024 for v in values)
    assert any(v is not None and grid in v for v in values)  # a heat map that fits is kept


async def test_the_weight_grid_trains_and_shows_its_heat_map(env: Any) -> None:
    bot, h = env
    # "weightgrid" is the bot's own learning player: it learns into the memory "default"
    calls = await h.slash(
        "train", {"game": "othello", "agent": "weightgrid", "games": 6}, user=ADMIN
    )
    assert "6/6 games" in progress_edits(calls)[-1].embeds[0]["description"]
    info = await bot.lobby.store.memory.info("weightgrid", "default")
    assert info is not None and info.games_trained == 6 and info.rows == 1
    [cb] = callbacks(await h.slash("agents", {"game": "othello"}, user=ALICE))
    assert_within_limits(cb)
    fields = {f["name"]: f["value"] for f in cb.embeds[0]["fields"]}
    value = fields["weightgrid (level easy)"]
    assert "**Memory** default: 1 row, 6 games learned" in value
    heat = [line for line in value.splitlines() if len(line) == 8 and line[0] in "🟦🟩🟨🟧🟥"]
    assert len(heat) == 8  # the learned grid as an 8x8 emoji heat map
