"""The Discord face under faults: failed or slow responses, lost boards, restarts.

Each test makes a stubbed Discord request fail the way Discord does (10062 after 3 s, a 500,
a 404 or 403 on a board) and checks that the match goes on and its board converges to what is
stored, through discord.py's real dispatch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cogs.errors import describe
from lobby.core import Lobby, Person
from lobby.pool import EnginePool
from lobby.turns import Turns
from tests.boardbot import (
    ALICE,
    BOB,
    MOD,
    buttons,
    callbacks,
    column_ids,
    description,
    make_bot,
)
from tests.clock import Clock
from tests.harness import Call, Harness, http_error

CALLBACK = ("POST", "/interactions/{webhook_id}/{webhook_token}/callback")
ORIGINAL = ("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original")
EDIT = ("PATCH", "/channels/{channel_id}/messages/{message_id}")


def fail(h: Harness, key: tuple[str, str], status: int, code: int, times: int = 1) -> list[Call]:
    """Make the next `times` requests of `key` fail as Discord would; the calls that failed."""
    failed: list[Call] = []

    def responder(call: Call) -> Any:
        failed.append(call)
        if len(failed) >= times:
            del h.responders[key]
        raise http_error(status, code, "injected")

    h.responders[key] = responder
    return failed


async def accepted_challenge(h: Harness) -> dict[str, Any]:
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    return h.last_message(ephemeral=False)


@pytest.mark.parametrize(("status", "code"), [(404, 10062), (500, 0)])
async def test_a_failed_click_response_still_starts_the_agent_and_shows_its_move(
    env: Any, status: int, code: int
) -> None:
    bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "medium"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    failed = fail(h, CALLBACK, status, code)
    calls = await h.click(board, column_ids(board)[3], user=ALICE, expect_response=False)
    assert len(failed) == 1
    [match] = await bot.lobby.store.matches.live()
    assert match.ply == 2  # alice's move, and the agent's reply: the match did not freeze
    board = h.messages[int(board["id"])]
    assert "Move 3" in description(board) and len(column_ids(board)) == 7  # inputs enabled
    assert all(cid.split(":")[2] == "2" for cid in column_ids(board))
    edits = [c for c in calls if (c.method, c.route) == EDIT]
    assert edits, "the board was edited with the bot token"
    assert not any("Nothing was changed" in (c.content or "") for c in calls)


async def test_person_vs_person_board_converges_after_a_failed_response(env: Any) -> None:
    bot, h = env
    board = await accepted_challenge(h)
    fail(h, CALLBACK, 500, 0)
    await h.click(board, column_ids(board)[3], user=ALICE, expect_response=False)
    board = h.messages[int(board["id"])]
    assert "Move 2" in description(board) and "bob" in description(board)
    # bob's click on the board he sees is not stale: the move was shown
    [cb] = callbacks(await h.click(board, column_ids(board)[3], user=BOB))
    assert cb.callback_type == 7 and "Move 3" in cb.embeds[0]["description"]
    [match] = await bot.lobby.store.matches.live()
    assert match.ply == 2


async def test_a_failed_deferral_leaves_no_match(env: Any) -> None:
    bot, h = env
    fail(h, CALLBACK, 404, 10062)
    await h.slash(
        "play", {"game": "connect4", "opponent": "easy"}, user=ALICE, expect_response=False
    )
    assert await bot.lobby.store.matches.live() == []


async def test_a_failed_first_board_is_filled_by_the_editor(env: Any) -> None:
    bot, h = env
    fail(h, ORIGINAL, 500, 0)
    await h.slash("play", {"game": "connect4", "opponent": "easy", "first": "bot"}, user=ALICE)
    [match] = await bot.lobby.store.matches.live()
    assert match.message_id is not None
    board = h.messages[match.message_id]
    assert "Move 2" in description(board) and column_ids(board)  # the agent's move, playable


async def test_a_bad_request_is_refused_before_anything_is_shown(env: Any) -> None:
    bot, h = env
    calls = await h.slash(
        "botmatch", {"game": "othello", "first": "nope", "second": "easy"}, user=ALICE
    )
    [cb] = callbacks(calls)
    assert cb.ephemeral and "unknown opponent" in (cb.content or "")
    assert await bot.lobby.store.matches.live() == []


async def test_a_bot_match_whose_board_is_gone_stops_after_the_first_failure(env: Any) -> None:
    bot, h = env
    failed = fail(h, EDIT, 404, 10008, times=1000)  # the board's message gets deleted
    await h.slash("botmatch", {"game": "othello", "first": "easy", "second": "easy"}, user=ALICE)
    stored = await bot.lobby.store.matches.get(1)  # the only match of this database
    assert stored is not None and stored.status == "abandoned"
    assert stored.termination == "unreachable"
    assert stored.ply < 60  # stopped early, not played to its end
    assert len(failed) == 1  # no edit after the first 404
    assert bot.editor.tracked() == 0
    await asyncio.sleep(0.05)  # the note that its end needs no showing is written
    assert await bot.lobby.store.matches.unshown_finals() == []  # a restart does not try it again


async def test_after_a_restart_every_live_board_shows_the_stored_position(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    db = tmp_path / "restart.db"
    bot, h = await make_bot(db, clock, pool)
    board = await accepted_challenge(h)
    # alice's move is stored, but the process dies before any response or edit shows it
    bot.lobby.listeners.clear()
    [match] = await bot.lobby.store.matches.live()
    await bot.lobby.play(match.id, Person("user", ALICE.id, ALICE.name), 3)
    await h.close()
    await bot.lobby.store.close()
    assert "Move 1" in description(h.messages[int(board["id"])])  # Discord shows the old ply

    bot2, h2 = await make_bot(db, clock, pool, h.messages)
    try:
        shown = h2.messages[int(board["id"])]
        assert "Move 2" in description(shown) and len(column_ids(shown)) == 7
        [cb] = callbacks(await h2.click(shown, column_ids(shown)[2], user=BOB))
        assert cb.callback_type == 7 and "Move 3" in cb.embeds[0]["description"]
    finally:
        await h2.close()
        await bot2.lobby.close()
        await bot2.lobby.store.close()


async def test_a_stranger_clicking_while_the_bot_moves_hides_nothing(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    agent_may_move, stranger_may_finish = asyncio.Event(), asyncio.Event()
    choose: Callable[..., Any] = bot.lobby.pool.choose
    resign: Callable[..., Any] = Lobby.resign

    async def held_choose(*args: Any, **kwargs: Any) -> Any:
        await agent_may_move.wait()
        return await choose(*args, **kwargs)

    async def slow_resign(self: Lobby, *args: Any, **kwargs: Any) -> Any:
        agent_may_move.set()  # the bot's move lands while the stranger's click is handled
        await stranger_may_finish.wait()
        return await resign(self, *args, **kwargs)

    bot.lobby.pool.choose = held_choose  # type: ignore[method-assign]
    monkeypatch.setattr(Lobby, "resign", slow_resign)
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    click = asyncio.ensure_future(h.click(board, column_ids(board)[3], user=ALICE))
    await asyncio.sleep(0.05)
    thinking = h.messages[int(board["id"])]
    rs = next(b["custom_id"] for b in buttons(thinking) if b["custom_id"].startswith("rs:"))
    stranger = asyncio.ensure_future(h.click(thinking, rs, user=BOB))
    for _ in range(100):  # until the bot's move is stored
        await asyncio.sleep(0.02)
        stored = await bot.lobby.store.matches.get(1)
        if stored is not None and stored.ply == 2:
            break
    stranger_may_finish.set()
    [cb] = callbacks(await stranger)
    assert cb.ephemeral and "not yours" in (cb.content or "")
    await click
    await h.settle()
    board = h.messages[int(board["id"])]
    assert "Move 3" in description(board) and len(column_ids(board)) == 7


async def test_stop_by_a_moderator_during_a_failed_response_still_shows_the_end(
    env: Any, monkeypatch: Any
) -> None:
    _bot, h = env

    async def idle(self: Turns, match_id: int, asked: float) -> Any:
        return await self._matches.snapshot(match_id)

    monkeypatch.setattr(Turns, "_turn", idle)
    await h.slash("botmatch", {"game": "othello", "first": "easy", "second": "medium"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    stop = next(b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("st:"))
    fail(h, CALLBACK, 500, 0)
    await h.click(board, stop, user=MOD, expect_response=False)
    assert "stopped" in description(h.messages[int(board["id"])])


def test_the_generic_error_never_claims_nothing_changed() -> None:
    text = describe(RuntimeError("boom"))
    assert "Nothing was changed" not in text and "logged" in text


async def test_a_busy_database_while_the_bot_starts_does_not_stop_it(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    import faults

    db = tmp_path / "start.db"
    bot, h = await make_bot(db, clock, pool)
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    await h.close()
    await bot.lobby.store.close()
    clock.now += 301  # the challenge expired while the bot was down
    faults.reset("fail:write:expire_challenges:1:locked")
    try:
        bot2, h2 = await make_bot(db, clock, pool, h.messages)  # starts all the same
    finally:
        faults.reset()
    try:
        await bot2.lobby.tick()  # the clock's next pass greys it out
        await h2.settle()
        invite = h2.last_message(ephemeral=False)
        assert invite["components"] == [] and "expired" in description(invite)
    finally:
        await h2.close()
        await bot2.lobby.close()
        await bot2.lobby.store.close()


async def test_edit_pacing_serves_waiters_in_order_urgent_first() -> None:
    """A restart re-shows old ends and live boards at once: the paced edits of live boards
    (people waiting) go first, and among equals the first come is served first."""
    from cogs.editor import Bucket

    bucket = Bucket(rate=50.0, burst=1)
    await bucket.take()  # the burst is used up: everyone below waits for a token
    served: list[str] = []

    async def wait(name: str, urgent: bool) -> None:
        await bucket.take(urgent)
        served.append(name)

    tasks = []
    for name, urgent in [("old end 1", False), ("old end 2", False), ("live 1", True)]:
        tasks.append(asyncio.create_task(wait(name, urgent)))
        await asyncio.sleep(0)  # arrive in this order
    tasks.append(asyncio.create_task(wait("live 2", True)))
    gone = asyncio.create_task(wait("cancelled", True))
    await asyncio.sleep(0)
    gone.cancel()  # a waiter that gives up does not block the line
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert served == ["live 1", "live 2", "old end 1", "old end 2"]


# ---------------------------------------------------------------------- boards out of reach


async def all_matches(bot: Any) -> list[Any]:
    """Every match stored, in order."""
    out = []
    for n in range(1, 20):
        m = await bot.lobby.store.matches.get(n)
        if m is None:
            break
        out.append(m)
    return out


@pytest.mark.parametrize(
    ("status", "code"),
    [(403, 50001), (404, 10003), (404, 10008)],  # Missing Access, Unknown Channel, Message
)
async def test_a_board_out_of_reach_ends_the_game_unrated_never_on_time(
    env: Any, clock: Clock, status: int, code: int
) -> None:
    """The bot can answer in the channel but not edit its board there (a private channel,
    a deleted channel or board): the person's rated game is abandoned unrated at once,
    instead of being lost on time to a move they never saw."""
    bot, h = env
    failed = fail(h, EDIT, status, code, times=1000)
    await h.slash("play", {"game": "connect4", "opponent": "medium", "first": "bot"}, user=ALICE)
    [match] = [m for m in await all_matches(bot)]
    assert match.status == "abandoned" and match.termination == "unreachable"
    assert match.result is None and match.ply == 1  # the bot's move, which nobody saw
    assert len(failed) == 1  # no edit after the first refusal
    alice = await bot.lobby.store.players.find_user(ALICE.id)
    assert await bot.lobby.store.ratings.player_stats(alice.id) == []  # no rating, no loss
    clock.now += 700
    await bot.lobby.tick()
    stored = await bot.lobby.store.matches.get(match.id)
    assert stored is not None and stored.termination == "unreachable"


async def test_a_channel_that_refuses_an_edit_ends_every_match_there_unrated(
    env: Any, clock: Clock
) -> None:
    """A 403 on one board's edit: the bot lost access to the channel, so every live match
    shown there ends unrated at once, even one whose board needed no edit yet (its person
    would lose on time, or win rated, where the bot can show nothing more)."""
    bot, h = env
    await accepted_challenge(h)  # people's turns: nothing to edit until the clock ends
    failed = fail(h, EDIT, 403, 50001, times=1000)
    await h.slash("play", {"game": "connect4", "opponent": "medium", "first": "bot"}, user=MOD)
    matches = await all_matches(bot)
    assert len(matches) == 2 and len(failed) == 1
    assert all(m.status == "abandoned" and m.termination == "unreachable" for m in matches)
    clock.now += 700
    await bot.lobby.tick()
    assert [m.termination for m in await all_matches(bot)] == ["unreachable"] * 2


async def test_clocks_wait_while_discord_cannot_reach_the_bot(env: Any, clock: Clock) -> None:
    """A gateway outage: nobody can move, so nobody loses on time; when the connection is
    back, the person to move has the resume grace, as after a restart."""
    bot, h = env
    board = await accepted_challenge(h)
    for who in (ALICE, BOB, ALICE):  # bob to move (he has moved: a loss on time counts)
        board = h.messages[int(board["id"])]
        await h.click(board, column_ids(board)[3], user=who)
    [match] = await bot.lobby.store.matches.live()
    bot.dispatch("disconnect")  # as discord.py does when the gateway connection drops
    await h.settle()
    clock.now += 700  # past bob's 600 s
    await bot.lobby.tick()
    [match] = await bot.lobby.store.matches.live()  # not lost on time
    await h.gateway("RESUMED", {})
    [match] = await bot.lobby.store.matches.live()
    assert match.turn_deadline == clock.now + bot.lobby.config.resume_grace
    clock.now += bot.lobby.config.resume_grace + 1  # the grace is over: the clock is real
    await bot.lobby.tick()
    await h.settle()
    stored = await bot.lobby.store.matches.get(match.id)
    assert stored is not None and stored.termination == "time"


async def test_clocks_wait_while_a_server_is_unavailable(env: Any, clock: Clock) -> None:
    bot, h = env
    await h.gateway("GUILD_CREATE", h.guild_payload())
    await accepted_challenge(h)
    await h.gateway("GUILD_DELETE", {"id": str(h.guild_id), "unavailable": True})  # an outage
    clock.now += 700
    await bot.lobby.tick()
    [match] = await bot.lobby.store.matches.live()  # neither lost on time nor abandoned
    await h.gateway("GUILD_CREATE", h.guild_payload())  # available again
    [match] = await bot.lobby.store.matches.live()
    assert match.turn_deadline == clock.now + bot.lobby.config.resume_grace


# ---------------------------------------------------------------------- a slow database


async def _acknowledged(h: Harness, start: int) -> bool:
    """Whether the interaction being handled was answered (a callback since `start`)."""
    return any(c.is_callback for c in h.calls[start:])


def _slow(
    h: Harness, monkeypatch: pytest.MonkeyPatch, target: Any, name: str, seen: list[bool]
) -> None:
    """Make `target.name` a slow write: it lasts until Discord was answered (at most 3.5 s,
    as a busy database might), then notes whether the interaction was answered by then."""
    original = getattr(target, name)
    start = len(h.calls)

    async def slow(*args: Any, **kwargs: Any) -> Any:
        for _ in range(350):
            if await _acknowledged(h, start):
                break
            await asyncio.sleep(0.01)
        seen.append(await _acknowledged(h, start))
        return await original(*args, **kwargs)

    monkeypatch.setattr(target, name, slow)
    monkeypatch.setattr("cogs.actions.DEFER_AFTER", 0.05)  # what 1 s is to 3 s, faster


async def test_a_slow_database_still_shows_a_challenge(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    seen: list[bool] = []
    _slow(h, monkeypatch, bot.lobby.store.challenges, "add", seen)
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    assert seen == [True]  # acknowledged before the write finished
    invite = h.last_message(ephemeral=False)
    assert invite["content"] == f"<@{BOB.id}>" and buttons(invite)  # a new message: it pings
    assert not [m for m in h.messages.values() if int(m.get("flags") or 0) & 128]  # no "thinking"
    [pending] = await bot.lobby.store.challenges.pending()
    assert pending.message_id == int(invite["id"])
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    assert column_ids(h.messages[int(invite["id"])])  # the match is played on it


async def test_a_slow_database_still_answers_a_resignation(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    seen: list[bool] = []
    _slow(h, monkeypatch, bot.lobby.store.matches, "commit_step", seen)
    await h.slash("resign", user=ALICE)
    assert seen == [True]
    answer = h.last_message(ephemeral=True)
    assert answer["content"].startswith("You resigned match #1")
    stored = await bot.lobby.store.matches.get(1)
    assert stored is not None and stored.termination == "resign"


async def test_a_slow_database_still_starts_a_game(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    seen: list[bool] = []
    _slow(h, monkeypatch, bot.lobby.store.players, "get_or_create_user", seen)  # a first game
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    assert seen == [True]
    [match] = await bot.lobby.store.matches.live()
    assert match.message_id is not None and column_ids(h.messages[match.message_id])


async def test_a_challenge_that_could_not_be_shown_is_withdrawn(env: Any) -> None:
    bot, h = env
    fail(h, CALLBACK, 404, 10062)  # the answer came too late for Discord
    await h.slash(
        "challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE, expect_response=False
    )
    assert await bot.lobby.store.challenges.pending() == []  # it does not count against alice
