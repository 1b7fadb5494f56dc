"""Hostile members: every option bounded, every click authorised, limits on what one member can
start; each finding of the abuse issue, tried through discord.py's real dispatch or the lobby."""

from __future__ import annotations

import asyncio
import json
import math
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import bot as entry
from boot import settings
from cogs.client import BoardBot
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person, Where
from lobby.errors import BadRequest, NotInMatch
from lobby.pool import EnginePool
from lobby.turns import Turns
from tests.boardbot import buttons, column_ids
from tests.clock import Clock
from tests.harness import Call, Harness, user

ALICE = user(301, "alice")
BOB = user(302, "bob")
CAROL = user(303, "carol")
OWNER = user(304, "owner")


async def _no_sleep(_: float) -> None:
    await asyncio.sleep(0)


@pytest.fixture
async def env(tmp_path: Path, clock: Clock, pool: EnginePool) -> AsyncIterator[Any]:
    store = await Store.open(tmp_path / "abuse.db", clock=clock)
    lobby = Lobby(store, pool, LobbyConfig(seed=2), clock=clock, sleep=_no_sleep)
    bot = BoardBot(lobby, run_clock=False, owner_specs=True)

    async def owner_only(u: Any) -> bool:
        return bool(u.id == OWNER.id)

    bot.owner_check = owner_only
    bot.editor.play_interval = bot.editor.spectate_interval = 0.0
    bot.editor.channel_rate = bot.editor.global_rate = None
    h = await Harness.create(bot)
    yield bot, h
    await h.close()
    await lobby.close()
    await store.close()


def forged(msg: dict[str, Any], custom_id: str) -> dict[str, Any]:
    """A copy of a message whose first button carries `custom_id` (a client that forges one:
    Discord only relays ids that are on the message, so the forgery must be on it too)."""
    copy = json.loads(json.dumps(msg))
    for row in copy["components"]:
        for comp in row["components"]:
            if comp.get("type") == 2:
                comp["custom_id"] = custom_id
                return copy
    raise AssertionError("the message has no button")


def refusal(calls: list[Call]) -> str:
    """The ephemeral line a request was refused with, as Discord shows it (markdown escapes
    read as the characters they escape; the test fails if it was not refused)."""
    lines = [c.content or "" for c in calls if (c.is_callback or c.is_followup) and c.ephemeral]
    assert lines, f"not refused: {calls}"
    return re.sub(r"\\(.)", r"\1", lines[-1]).replace("\u200b", "")


async def rows(bot: BoardBot, table: str) -> int:
    con = sqlite3.connect(f"file:{bot.lobby.store.path}?mode=ro", uri=True)
    try:
        return int(con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


# ---------------------------------------------------------------------- 1. hanging the workers


@pytest.mark.parametrize(
    "spec", ["mcts:time=nan", "solver", "hard:time=3600", "minimax:depth=1000000", "perfect"]
)
async def test_members_choose_opponents_by_name_only(env: Any, spec: str) -> None:
    bot, h = env
    calls = await h.slash(
        "botmatch", {"game": "connect4", "first": spec, "second": "easy"}, user=ALICE
    )
    assert "unknown opponent" in refusal(calls) and "choose one of" in refusal(calls)
    assert await rows(bot, "matches") == 0 and await rows(bot, "players") == 0


async def idle(self: Turns, match_id: int, asked: float) -> Any:
    """An agent turn that does nothing: the match stays where it is (for checks of setup)."""
    return await self._matches.snapshot(match_id)


async def test_the_owners_raw_specs_are_checked_and_bounded(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    monkeypatch.setattr(Turns, "_turn", idle)  # the solver would think for its 5 s
    for spec, words in (
        ("mcts:time=nan", "time"),
        ("hard:time=3600", "from 0.001 to 5"),
        ("minimax:depth=1000000", "depth"),
        ("expectiminimax:chance_plies=200", "chance_plies"),
    ):
        calls = await h.slash(
            "botmatch", {"game": "connect4", "first": spec, "second": "easy"}, user=OWNER
        )
        assert words in refusal(calls), spec
    calls = await h.slash(
        "botmatch", {"game": "connect4", "first": "solver", "second": "easy"}, user=OWNER
    )
    [match] = await bot.lobby.store.matches.live()
    seat = match.options["seats"][0]
    assert seat["agent"] == "solver" and 0 < seat["budget"]["time"] <= 5  # never unlimited


async def test_a_level_budget_is_merged_not_replaced(env: Any) -> None:
    bot, h = env
    await h.slash(
        "play", {"game": "connect4", "opponent": "hard:time=0.5", "first": "me"}, user=OWNER
    )
    [match] = await bot.lobby.store.matches.live()
    budget = match.options["seats"][1]["budget"]
    assert budget["time"] == 0.5 and budget["depth"] == 8  # hard's depth cap is kept


# ---------------------------------------------------------------------- 2. learned memory


async def test_only_the_bots_own_learning_players_write_memory(env: Any) -> None:
    bot, h = env
    calls = await h.slash(
        "botmatch", {"game": "connect4", "first": "trainer:lr=nan", "second": "random"}, user=BOB
    )
    assert "unknown opponent" in refusal(calls)
    # the owner may name other settings, but they do not learn (the memory is the bot's)
    await h.slash(
        "botmatch",
        {"game": "connect4", "first": "trainer:memory=mine", "second": "random", "delay": 1},
        user=OWNER,
    )
    await h.slash(
        "botmatch", {"game": "connect4", "first": "trainer", "second": "random", "delay": 1},
        user=ALICE,
    )  # fmt: skip
    for match in await bot.lobby.store.matches.live():
        await bot.lobby.run_botmatch(match.id)
    await bot.lobby.learning.outbox.drain()
    memories = {(m.kind, m.name): m.games_trained for m in await bot.lobby.store.memory.infos()}
    assert memories == {("trainer", "default"): 1}


# ---------------------------------------------------------------------- 3. challenges


async def invite(h: Harness) -> dict[str, Any]:
    calls = await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    assert not any(c.ephemeral for c in calls)
    return h.last_message(ephemeral=False)


async def test_twenty_accept_clicks_make_one_match(env: Any) -> None:
    bot, h = env
    msg = await invite(h)
    accept = next(b["custom_id"] for b in buttons(msg) if b["custom_id"].startswith("ch:a"))
    results = await asyncio.gather(*(h.click(msg, accept, user=BOB) for _ in range(20)))
    # Concurrent clicks see each other's requests: sort the answers by interaction.
    answers = {id(c): c for calls in results for c in calls if c.is_callback or c.is_followup}
    by_click: dict[int | None, list[Call]] = {}
    for call in answers.values():
        by_click.setdefault(call.interaction_id, []).append(call)
    boards = [i for i, calls in by_click.items() if any(not c.ephemeral for c in calls)]
    refused = [
        i
        for i, calls in by_click.items()
        if all(c.ephemeral and "already accepted" in (c.content or "") for c in calls)
    ]
    assert await rows(bot, "matches") == 1
    assert len(by_click) == 20 and len(boards) == 1 and len(refused) == 19


async def test_a_challenge_expires_even_across_a_restart(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    db = tmp_path / "expiry.db"
    store = await Store.open(db, clock=clock)
    lobby = Lobby(store, pool, LobbyConfig(seed=1), clock=clock)
    bot = BoardBot(lobby, run_clock=False)
    h = await Harness.create(bot)
    msg = await invite(h)
    await h.close()
    await lobby.close()
    await store.close()
    clock.now += 301  # the bot was down when the challenge expired
    store = await Store.open(db, clock=clock)
    lobby = Lobby(store, pool, LobbyConfig(seed=1), clock=clock)
    bot = BoardBot(lobby, run_clock=False)
    h2 = await Harness.create(bot, messages=h.messages)  # setup greys it at once
    try:
        greyed = h2.messages[int(msg["id"])]
        assert greyed["components"] == [] and "expired" in greyed["embeds"][0]["description"]
        accept = next(b["custom_id"] for b in buttons(msg) if b["custom_id"].startswith("ch:a"))
        calls = await h2.click(msg, accept, user=BOB)  # an old copy of the message
        assert "expired" in refusal(calls) and await rows(bot, "matches") == 0
    finally:
        await h2.close()
        await lobby.close()
        await store.close()


@pytest.mark.parametrize(
    "custom_id",
    [
        "ch:a:999999999999",  # a challenge that does not exist
        "ch:a:123456789012345678",  # 18 digits: still within SQLite's integers
        "ch:a:301:302:c:999999999999",  # the old format with a far expiry
        "ch:a:99999999999999999999:302:c:1",  # 20 digits in the old format
    ],
)
async def test_forged_challenge_ids_are_answered_plainly(env: Any, custom_id: str) -> None:
    bot, h = env
    msg = await invite(h)
    calls = await h.click(forged(msg, custom_id), custom_id, user=BOB, force=True)
    assert [c for c in calls if c.is_callback], "every forged id of a known shape is answered"
    assert await rows(bot, "matches") == 0


async def test_too_many_digits_never_reach_a_handler(env: Any) -> None:
    _, h = env
    msg = await invite(h)
    for cid in ("ch:a:1234567890123456789", "c4:12345678901234567890:0:3", "rs:²", "c4:²:0:1"):
        calls = await h.click(forged(msg, cid), cid, user=BOB, force=True, expect_response=False)
        assert not [c for c in calls if c.is_callback]  # no template matches: nothing runs


# ---------------------------------------------------------------------- 5. custom ids


async def test_a_button_of_one_match_relayed_on_another_message_is_refused(env: Any) -> None:
    bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    first = h.last_message(ephemeral=False)
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    second = h.last_message(ephemeral=False)
    forged = dict(second)
    forged["components"] = first["components"]  # match 1's buttons on match 2's message
    calls = await h.click(forged, column_ids(first)[3], user=ALICE)
    assert "not the board" in refusal(calls)
    assert (await bot.lobby.store.matches.get(1)).ply == 0  # type: ignore[union-attr]


async def test_a_unicode_digit_in_a_select_is_refused_and_a_forged_match_leaves_nothing(
    env: Any,
) -> None:
    bot, h = env
    await h.slash("play", {"game": "othello", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    [select] = [c for c in buttons(board) if c["type"] == 3]
    calls = await h.click(board, select["custom_id"], user=ALICE, values=["²"], force=True)
    assert "⚠️" in refusal(calls)
    cid = "c4:424242:0:3"
    calls = await h.click(forged(board, cid), cid, user=ALICE, force=True)
    assert "no match #424242" in refusal(calls)
    assert bot.lobby.matches._locks == {}  # no lock entry was made for it


# ---------------------------------------------------------------------- 6. limits


async def test_limits_on_games_against_the_bot_and_bot_matches(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    monkeypatch.setattr(Turns, "_turn", idle)  # bot matches stay live meanwhile
    for _ in range(3):
        assert not any(c.ephemeral for c in await h.slash("play", {"game": "connect4"}, user=ALICE))
    text = refusal(await h.slash("play", {"game": "connect4"}, user=ALICE))
    assert "3 games against the bot" in text and "limit" in text
    opts = {"game": "othello", "first": "random", "second": "random", "delay": 30}
    for _ in range(2):
        assert not any(c.ephemeral for c in await h.slash("botmatch", opts, user=BOB))
    assert "2 bot matches running" in refusal(await h.slash("botmatch", opts, user=BOB))
    for who in (CAROL, user(305, "dave"), user(306, "erin")):  # five in this server at most
        await h.slash("botmatch", opts, user=who)
    assert "this server already has 5" in refusal(
        await h.slash("botmatch", opts, user=user(307, "frank"))
    )
    assert await bot.lobby.store.matches.count_live("eve") == 5


async def test_limits_on_challenges(env: Any) -> None:
    bot, h = env
    bot.lobby.config.challenge_cooldown = 30
    await invite(h)
    text = refusal(await h.slash("challenge", {"opponent": BOB, "game": "othello"}, user=ALICE))
    assert "again in 30 s" in text
    others = [user(400 + i, f"friend{i}") for i in range(5)]
    for friend in others[:4]:  # five pending in all (the first one counts)
        await h.slash("challenge", {"opponent": friend, "game": "connect4"}, user=ALICE)
    text = refusal(
        await h.slash("challenge", {"opponent": others[4], "game": "connect4"}, user=ALICE)
    )
    assert "5 challenges waiting" in text
    assert len(await bot.lobby.store.challenges.pending()) == 5


async def test_train_is_for_the_owner_and_one_job_at_a_time(env: Any) -> None:
    bot, h = env
    manager = user(308, "manager", permissions=0x20 | 0x400 | 0x800)  # Manage Server
    text = refusal(
        await h.slash("train", {"game": "connect4", "agent": "trainer", "games": 5}, user=manager)
    )
    assert "owner" in text
    job_gate = asyncio.Event()
    run = bot.lobby.pool.run

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await job_gate.wait()
        return await run(*args, **kwargs)

    bot.lobby.pool.run = slow  # type: ignore[method-assign]
    job = bot.lobby.train("connect4", "trainer", 50)
    text = refusal(
        await h.slash("train", {"game": "othello", "agent": "weightgrid", "games": 5}, user=OWNER)
    )
    assert "already running" in text
    job_gate.set()
    await job.wait()


# ---------------------------------------------------------------------- 7. bounded memory


async def test_caches_forget_ended_matches(env: Any) -> None:
    bot, h = env
    for _ in range(3):
        await h.slash("play", {"game": "connect4"}, user=ALICE)
        await h.slash("resign", {}, user=ALICE)
    await h.settle()
    assert bot.lobby.matches._states == {} and bot.lobby.matches._locks == {}
    assert bot.editor.tracked() == 0


def test_the_worker_agent_cache_is_bounded() -> None:
    from engine.agents.base import AgentSpec
    from lobby import jobs

    jobs._agents.clear()
    for i in range(100):  # every distinct spec people may name would be a new agent
        jobs.worker_agent(AgentSpec("trainer", {"exploration": i / 10}), "connect4")
    assert len(jobs._agents) == jobs.MAX_AGENTS


# ---------------------------------------------------------------------- 8. configuration


def test_the_token_is_never_printed() -> None:
    config = settings.Config.from_env({"DISCORD_TOKEN": "very-secret-token"}, Path("/nonexistent"))
    assert config.token == "very-secret-token"
    assert "very-secret-token" not in repr(config) and "very-secret-token" not in str(config)


def test_dotenv_is_read_next_to_bot_py(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Path(entry.__file__).resolve().parent / ".env" == settings.DOTENV
    (tmp_path / ".env").write_text("BOARDBOT_WORKERS=7\n")
    monkeypatch.chdir(tmp_path)  # a .env in the working directory is not the README's
    assert settings.Config.from_env({}).workers == settings.Config.workers
    monkeypatch.setattr(settings, "DOTENV", tmp_path / ".env")
    assert settings.Config.from_env({}).workers == 7


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "1e400", "soon", "²"])
def test_bad_settings_stop_the_start_with_one_line(value: str) -> None:
    with pytest.raises(SystemExit, match="config error: BOARDBOT_TURN_SECONDS"):
        settings.Config.from_env({"BOARDBOT_TURN_SECONDS": value}, Path("/nonexistent"))
    assert not math.isnan(settings.Config().turn_seconds)


async def test_a_lobby_refusal_by_someone_new_leaves_no_player_row(
    tmp_path: Path, pool: EnginePool
) -> None:
    store = await Store.open(tmp_path / "new.db")
    lobby = Lobby(store, pool)
    try:
        with pytest.raises(BadRequest):
            await lobby.start_pve(Person("user", 9, "new"), "connect4", "godlike")
        with pytest.raises(BadRequest):
            await lobby.start_eve("connect4", "easy", "mcts:time=nan", starter=None)
        snap = await lobby.start_pvp(Person("user", 1, "a"), Person("user", 2, "b"), "connect4")
        with pytest.raises(NotInMatch):
            await lobby.play(snap.id, Person("user", 3, "stranger"), 3, via=Where())
        # /resign by someone with no match: asked, refused, nothing stored (found by the fuzz run)
        assert await lobby.live_matches_of(Person("user", 4, "newcomer")) == []
        players = await store.players.get_many(range(1, 10))
        assert sorted(p.display_name for p in players.values()) == ["a", "b"]
    finally:
        await lobby.close()
        await store.close()
