"""The Discord face, driven through discord.py's real dispatch with raw payloads (offline).

Each test builds the real bot on a real SQLite file and asserts what Discord would receive:
callback types, ephemeral flags, component ids, embed text, and Discord's limits.
"""

from __future__ import annotations

import asyncio
import copy
import re
from pathlib import Path
from typing import Any

import discord

from cogs.render import board_view
from engine.games.othello import OthelloState
from lobby.core import Snapshot
from lobby.pool import EnginePool
from lobby.turns import Turns
from tests.boardbot import (
    ALICE,
    BOB,
    CAROL,
    MOD,
    buttons,
    callbacks,
    column_ids,
    description,
    make_bot,
)
from tests.clock import Clock
from tests.harness import Call, assert_within_limits

EPHEMERAL = 64
UPDATE_MESSAGE = 7
CHANNEL_MESSAGE = 4
DEFERRED = 5  # a new board: the message is made first, the match stored with it, then filled


def check_limits(calls: list[Call]) -> None:
    for call in calls:
        if call.json:
            assert_within_limits(call)


async def test_whole_game_against_the_bot(env: Any) -> None:
    bot, h = env
    calls = await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    check_limits(calls)
    [cb] = callbacks(calls)
    assert cb.callback_type == DEFERRED and not cb.ephemeral
    board = h.last_message(ephemeral=False)
    assert "1️⃣2️⃣3️⃣4️⃣5️⃣6️⃣7️⃣" in description(board)
    assert "alice" in board["embeds"][0]["title"] and "Bot (easy)" in board["embeds"][0]["title"]
    ids = column_ids(board)
    assert len(ids) == 7 and all(
        i.startswith("c4:") and i.endswith(f":0:{n}") for n, i in enumerate(ids)
    )
    rows = board["components"]
    assert len(rows) == 3 and len(rows[0]["components"]) == 4  # 4 + 3 columns, then Resign
    assert rows[2]["components"][0]["custom_id"].startswith("rs:")
    moves = 0
    while column_ids(h.last_message(ephemeral=False)):
        board = h.last_message(ephemeral=False)
        # prefer the centre so the game is not over too fast; any enabled column is legal
        ids = column_ids(board)
        calls = await h.click(board, ids[len(ids) // 2], user=ALICE)
        check_limits(calls)
        [cb] = callbacks(calls)
        assert cb.callback_type == UPDATE_MESSAGE and not cb.ephemeral
        moves += 1
        assert moves < 30
    final = h.last_message(ephemeral=False)
    text = description(final)
    assert "wins" in text or "Draw" in text
    assert [b["custom_id"].split(":")[0] for b in buttons(final)] == ["rm", "an"]
    match = (await bot.lobby.store.matches.live()) == []
    assert match
    history = await bot.lobby.store.matches.history(
        (await bot.lobby.store.players.find_user(ALICE.id)).id
    )
    assert len(history) == 1 and history[0].match.ply >= 7


async def test_bot_moves_first_and_its_move_edits_the_board(env: Any) -> None:
    _bot, h = env
    calls = await h.slash(
        "play", {"game": "connect4", "opponent": "medium", "first": "bot"}, user=ALICE
    )
    edits = [c for c in calls if c.seam == "http" and c.method == "PATCH"]
    assert edits, "the bot's first move must edit the board message"
    board = h.last_message(ephemeral=False)
    assert "Move 2" in description(board) and column_ids(board)
    assert all(i.split(":")[2] == "1" for i in column_ids(board))  # ply 1 in every id


async def test_strangers_and_out_of_turn_clicks_are_refused_ephemerally(env: Any) -> None:
    bot, h = env
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    [cb] = callbacks(await h.click(invite, accept, user=CAROL))
    assert cb.ephemeral and "not for you" in cb.content
    [cb] = callbacks(await h.click(invite, accept, user=ALICE))
    assert cb.ephemeral and "only the challenged" in cb.content
    [cb] = callbacks(await h.click(invite, accept, user=BOB))
    assert cb.callback_type == UPDATE_MESSAGE
    board = h.last_message(ephemeral=False)
    before = description(board)
    col = column_ids(board)[3]
    [cb] = callbacks(await h.click(board, col, user=BOB))  # alice (challenger) moves first
    assert cb.ephemeral and "alice's turn" in cb.content
    [cb] = callbacks(await h.click(board, col, user=CAROL))
    assert cb.ephemeral and "not yours" in cb.content
    assert description(h.last_message(ephemeral=False)) == before
    match = (await bot.lobby.store.matches.live())[0]
    assert match.ply == 0


async def test_challenge_accepted_and_played_to_the_end(env: Any) -> None:
    _bot, h = env
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    assert invite["content"] == f"<@{BOB.id}>"
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    # alice stacks column 1, bob column 2: alice connects four vertically
    for turn in range(7):
        board = h.last_message(ephemeral=False)
        who, col = (ALICE, 0) if turn % 2 == 0 else (BOB, 1)
        cid = next(i for i in column_ids(board) if i.endswith(f":{col}"))
        [cb] = callbacks(await h.click(board, cid, user=who))
        assert cb.callback_type == UPDATE_MESSAGE, cb.content
    final = h.last_message(ephemeral=False)
    assert "**alice** wins (four in a row)" in description(final)
    assert "🟥" in description(final)  # the winning four is highlighted
    calls = await h.slash("leaderboard", {"game": "connect4", "scope": "server"}, user=CAROL)
    [cb] = callbacks(calls)
    lines = cb.embeds[0]["description"].splitlines()
    assert lines[0].startswith("**1.** alice") and lines[1].startswith("**2.** bob")


async def test_declined_and_expired_challenges(env: Any, clock: Clock) -> None:
    bot, h = env
    await h.slash("challenge", {"opponent": BOB, "game": "othello"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    decline = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:d"))
    [cb] = callbacks(await h.click(invite, decline, user=BOB))
    assert cb.callback_type == UPDATE_MESSAGE and "declined" in cb.embeds[0]["description"]
    assert h.last_message(ephemeral=False)["components"] == []

    await h.slash("challenge", {"opponent": BOB, "game": "othello"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    clock.now += 301
    [cb] = callbacks(await h.click(invite, accept, user=BOB))
    assert "expired" in cb.embeds[0]["description"]
    assert await bot.lobby.store.matches.live() == []

    [cb] = callbacks(await h.slash("challenge", {"opponent": ALICE, "game": "othello"}, user=ALICE))
    assert cb.ephemeral and "yourself" in cb.content


async def test_bot_match_to_the_end_with_stop_rights(env: Any, monkeypatch: Any) -> None:
    _bot, h = env
    calls = await h.slash(
        "botmatch",
        {"game": "connect4", "first": "onestep", "second": "random", "delay": 1.0},
        user=ALICE,
    )
    check_limits(calls)
    final = h.last_message(ephemeral=False)
    assert "wins" in description(final) or "Draw" in description(final)
    # A finished bot match has no controls, only its analysis.
    assert [b["custom_id"].split(":")[0] for b in buttons(final)] == ["an"]
    edits = [c for c in calls if c.seam == "http" and c.method == "PATCH"]
    assert len(edits) >= 4  # the board was edited move by move

    # a second match, stopped: a stranger cannot, a moderator can
    monkeypatch.setattr(Turns, "_turn", _never_runs)  # keep it live while we click
    await h.slash("botmatch", {"game": "othello", "first": "easy", "second": "medium"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    stop = next(b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("st:"))
    [cb] = callbacks(await h.click(board, stop, user=BOB))
    assert cb.ephemeral and "moderator" in cb.content
    [cb] = callbacks(await h.click(board, stop, user=MOD))
    assert cb.callback_type == UPDATE_MESSAGE and "stopped" in cb.embeds[0]["description"]


async def _never_runs(self: Turns, match_id: int, asked: float) -> Any:
    return await self._matches.snapshot(match_id)


async def test_full_column_is_disabled_and_a_forced_click_changes_nothing(env: Any) -> None:
    _bot, h = env
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    # fill column 4 without anyone winning: a, b, a, b, a, b alternate colours
    for turn in range(6):
        board = h.last_message(ephemeral=False)
        who = ALICE if turn % 2 == 0 else BOB
        cid = next(i for i in column_ids(board) if i.endswith(":3"))
        await h.click(board, cid, user=who)
    board = h.last_message(ephemeral=False)
    full = next(
        b
        for b in buttons(board)
        if b.get("custom_id", "").endswith(":3") and b["custom_id"].startswith("c4:")
    )
    assert full["disabled"]
    before = description(board)
    [cb] = callbacks(await h.click(board, full["custom_id"], user=ALICE, force=True))
    assert cb.ephemeral and "full" in cb.content
    assert description(h.last_message(ephemeral=False)) == before


async def test_resign_button_and_slash_resign(env: Any) -> None:
    _bot, h = env
    await h.slash("play", {"game": "othello", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    resign = next(b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("rs:"))
    [cb] = callbacks(await h.click(board, resign, user=BOB))
    assert cb.ephemeral
    [cb] = callbacks(await h.click(board, resign, user=ALICE))
    assert cb.callback_type == UPDATE_MESSAGE
    assert "Bot (easy)** wins (resignation)" in cb.embeds[0]["description"]

    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    [cb] = callbacks(await h.slash("resign", {}, user=ALICE))
    assert cb.ephemeral and "You resigned" in cb.content
    assert "resignation" in description(h.last_message(ephemeral=False))  # the board was edited too
    [cb] = callbacks(await h.slash("resign", {}, user=ALICE))
    assert cb.ephemeral and "no match in progress" in cb.content


async def test_othello_select_plays_a_move(env: Any) -> None:
    _bot, h = env
    await h.slash("play", {"game": "othello", "opponent": "easy"}, user=ALICE)
    board = copy.deepcopy(h.last_message(ephemeral=False))  # as a client that never refreshed
    [select] = [c for c in buttons(board) if c["type"] == 3]
    labels = sorted(o["label"] for o in select["options"])
    assert labels == ["c4", "d3", "e6", "f5"]
    d3 = next(o["value"] for o in select["options"] if o["label"] == "d3")
    [cb] = callbacks(await h.click(board, select["custom_id"], user=ALICE, values=[d3]))
    assert cb.callback_type == UPDATE_MESSAGE
    text = description(h.last_message(ephemeral=False))
    assert "Move 3" in text  # the bot replied and the board was edited again
    calls = await h.click(board, select["custom_id"], user=ALICE, values=[d3])
    [cb] = callbacks(calls)  # the old board's select is stale: it gets the current board
    assert cb.callback_type == UPDATE_MESSAGE and "Move 3" in cb.embeds[0]["description"]
    [note] = [c for c in calls if c.is_followup]
    assert note.ephemeral and "out of date" in note.content


def test_more_than_25_legal_moves_are_split_over_selects() -> None:
    # A legal-looking position (found by hill climbing) where X has 34 moves.
    best = OthelloState.from_notation(
        "-OX--X--XO--OXO-----XXX---O------OOXOOO--XXO-XXX-OXO--OX--X----- X"
    )
    assert len(best.legal_moves()) == 34
    snap = _fake_snapshot(best)
    view = board_view(snap)
    payload = {"components": view.to_components()}
    assert_within_limits(payload)
    selects = [c for row in payload["components"] for c in row["components"] if c["type"] == 3]
    offered = [int(o["value"]) for sel in selects for o in sel["options"]]
    assert len(selects) == 2 and all(len(sel["options"]) <= 25 for sel in selects)
    assert sorted(offered) == best.legal_moves()


def _fake_snapshot(state: OthelloState) -> Snapshot:
    from db.models import Match, Player
    from lobby.core import Seat

    match = Match(
        id=1,
        game="othello",
        variant="8x8",
        kind="pvp",
        player0_id=1,
        player1_id=2,
        status="live",
        result=None,
        termination=None,
        rated=True,
        guild_id=None,
        channel_id=None,
        message_id=None,
        created_at=0.0,
        updated_at=0.0,
        finished_at=None,
        turn_deadline=None,
        turn_seconds=600.0,
        options={},
        ply=state.ply,
    )

    def local(pid: int, name: str) -> Player:
        return Player(
            id=pid,
            kind="local",
            display_name=name,
            discord_id=None,
            agent_key=None,
            local_name=name,
            created_at=0.0,
            updated_at=0.0,
        )

    return Snapshot(match, state, (Seat(local(1, "a")), Seat(local(2, "b"))))


async def test_restart_keeps_the_match_and_old_buttons_work(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    db = tmp_path / "restart.db"
    bot, h = await make_bot(db, clock, pool)
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    board = h.last_message(ephemeral=False)
    await h.click(board, column_ids(board)[3], user=ALICE)
    stale = copy.deepcopy(board)  # the board from before alice's move: its ids say ply 0
    board = h.last_message(ephemeral=False)
    before = description(board)
    await h.close()
    await bot.lobby.store.close()

    # a new process, as far as the bot can tell (Discord keeps its messages)
    bot2, h2 = await make_bot(db, clock, pool, h.messages)
    try:
        [cb] = callbacks(await h2.click(board, column_ids(board)[3], user=BOB))
        assert cb.callback_type == UPDATE_MESSAGE
        after = h2.last_message(ephemeral=False)
        assert description(after) != before and "Move 3" in description(after)
        calls = await h2.click(stale, column_ids(stale)[0], user=ALICE)
        [cb] = callbacks(calls)
        assert cb.callback_type == UPDATE_MESSAGE and "Move 3" in cb.embeds[0]["description"]
        assert any(c.is_followup and "out of date" in (c.content or "") for c in calls)
        match = (await bot2.lobby.store.matches.live())[0]
        assert match.ply == 2 and match.message_id == int(board["id"])
    finally:
        await h2.close()
        await bot2.lobby.store.close()


async def test_restart_resumes_an_agent_turn(
    tmp_path: Path, clock: Clock, pool: EnginePool, monkeypatch: Any
) -> None:
    db = tmp_path / "resume.db"
    bot, h = await make_bot(db, clock, pool)
    with monkeypatch.context() as patch:
        patch.setattr(Turns, "_turn", _never_runs)  # the "crash" comes while the bot is to move
        await h.slash("play", {"game": "connect4", "opponent": "easy", "first": "bot"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    await h.close()
    await bot.lobby.store.close()
    bot2, h2 = await make_bot(db, clock, pool, h.messages)  # setup_hook resumes the agent
    try:
        await h2.settle()
        await asyncio.sleep(0.5)
        await h2.settle()
        match = (await bot2.lobby.store.matches.live())[0]
        assert match.ply == 1 and match.message_id == int(board["id"])
        edits = [c for c in h2.calls if c.seam == "http" and c.method == "PATCH"]
        assert edits and "Move 2" in edits[-1].embeds[0]["description"]
    finally:
        await h2.close()
        await bot2.lobby.close()
        await bot2.lobby.store.close()


async def test_turn_clock_ends_a_match_on_time(env: Any, clock: Clock) -> None:
    bot, h = env
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    board = h.last_message(ephemeral=False)
    await h.click(board, column_ids(board)[0], user=ALICE)
    await h.click(
        h.last_message(ephemeral=False), column_ids(h.last_message(ephemeral=False))[0], user=BOB
    )
    clock.now += 601
    ended = await bot.lobby.expire_turns()
    await h.settle()
    assert len(ended) == 1
    assert "**bob** wins (time ran out)" in description(h.last_message(ephemeral=False))


async def test_stats_and_history_commands(env: Any) -> None:
    _bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash("resign", {}, user=ALICE)
    [cb] = callbacks(await h.slash("history", {}, user=ALICE))
    # The same words as the console's (lobby.present): result, how, moves, rated.
    line = r"^#\d+ Connect Four vs Bot \(easy\): lost \(resignation\), \d+ moves?, rated$"
    assert re.search(line, cb.embeds[0]["description"], re.M)
    [cb] = callbacks(await h.slash("stats", {"user": ALICE}, user=BOB))
    assert "**Connect Four**: 1 played, 0W 0D 1L, rating " in cb.embeds[0]["description"]
    [cb] = callbacks(
        await h.slash("leaderboard", {"game": "connect4", "scope": "global"}, user=BOB)
    )
    assert re.search(
        r"^\*\*1\.\*\* .+ · -?[0-9.]+ \(1 game: 1W 0D 0L\)$", cb.embeds[0]["description"], re.M
    )


async def test_botmatch_autocomplete_and_bad_agent(env: Any) -> None:
    bot, h = env
    choices = await h.autocomplete(
        "botmatch", {"game": "othello", "first": "gre"}, focused="first", user=ALICE
    )
    names = [c["value"] for c in choices]
    assert "greedy-random" in names and all("gre" in n for n in names)
    [cb] = callbacks(
        await h.slash(
            "botmatch", {"game": "othello", "first": "nope", "second": "easy"}, user=ALICE
        )
    )
    assert cb.ephemeral and "unknown opponent" in cb.content
    assert await bot.lobby.store.matches.live() == []


async def test_an_unanswered_challenge_is_greyed_out_when_it_expires(
    env: Any, clock: Clock
) -> None:
    bot, h = env
    await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE)
    invite_id = int(h.last_message(ephemeral=False)["id"])
    clock.now += 301
    await bot.lobby.tick()  # the clock's pass expires it and the bot greys it out
    await h.settle()
    invite = h.messages[invite_id]
    assert invite["components"] == []
    assert "expired" in invite["embeds"][0]["description"]


async def test_rematch_against_the_bot_and_against_a_person(env: Any) -> None:
    _, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash("resign", {}, user=ALICE)
    board = h.last_message(ephemeral=False)
    [rematch] = [b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("rm:")]
    [cb] = callbacks(await h.click(board, rematch, user=BOB))
    assert cb.ephemeral and "only the players" in cb.content
    calls = await h.click(board, rematch, user=ALICE)
    [cb] = callbacks(calls)
    assert cb.callback_type == DEFERRED
    new = h.last_message(ephemeral=False)
    assert new["id"] != board["id"]
    assert new["embeds"][0]["title"].startswith("Connect Four: Bot (easy)")  # colours swapped

    await h.slash("challenge", {"opponent": BOB, "game": "othello"}, user=ALICE)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    await h.click(invite, accept, user=BOB)
    await h.slash("resign", {}, user=BOB)
    board = h.last_message(ephemeral=False)
    [rematch] = [b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("rm:")]
    [cb] = callbacks(await h.click(board, rematch, user=BOB))
    assert cb.callback_type == CHANNEL_MESSAGE and cb.content == f"<@{ALICE.id}>"
    invite = h.last_message(ephemeral=False)
    assert "**bob** challenges **alice** to Othello" in invite["embeds"][0]["description"]
    assert any(b["custom_id"].startswith("ch:a:") for b in buttons(invite))


async def test_a_channel_where_the_bot_cannot_keep_a_board_is_refused_in_one_line(
    env: Any,
) -> None:
    """Slash commands work in a channel the bot cannot edit its messages in (its moves would
    never show): /play, /challenge and /botmatch say which permission is missing there."""
    bot, h = env
    h.app_permissions = (
        discord.Permissions.all().value & ~discord.Permissions(embed_links=True).value
    )
    for name, options in [
        ("play", {"game": "connect4", "opponent": "easy"}),
        ("challenge", {"opponent": BOB, "game": "connect4"}),
        ("botmatch", {"game": "othello", "first": "easy", "second": "easy"}),
    ]:
        [cb] = callbacks(await h.slash(name, options, user=ALICE))
        assert cb.ephemeral and "Embed Links permission" in cb.content, (name, cb.content)
        assert len(cb.content.splitlines()) == 1
    h.app_permissions = discord.Permissions(send_messages=True).value
    [cb] = callbacks(await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE))
    assert "View Channel and Embed Links permissions" in cb.content
    assert await bot.lobby.store.matches.live() == []
    assert await bot.lobby.store.challenges.pending() == []


async def test_a_challenge_in_a_dm_is_refused(env: Any) -> None:
    bot, h = env
    calls = await h.slash(
        "challenge", {"opponent": BOB, "game": "connect4"}, user=ALICE, guild_id=None
    )
    [cb] = callbacks(calls)
    assert cb.ephemeral and "server channel" in cb.content
    assert await bot.lobby.store.challenges.pending() == []


async def test_resign_never_guesses_which_match(env: Any) -> None:
    """With two games in the channel /resign asks which (listing them) and resigns nothing; a
    named match is resigned and named; asking again does not end the other game."""
    bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash("play", {"game": "othello", "opponent": "medium"}, user=ALICE)
    [cb] = callbacks(await h.slash("resign", {}, user=ALICE))
    assert cb.ephemeral and len(cb.content.splitlines()) == 1
    assert "match #1 (Connect Four against Bot (easy))" in cb.content
    assert "match #2 (Othello against Bot (medium))" in cb.content
    assert "match:" in cb.content
    assert len(await bot.lobby.store.matches.live()) == 2
    [cb] = callbacks(await h.slash("resign", {"match": 2}, user=ALICE))
    assert cb.ephemeral and cb.content.startswith("You resigned match #2 (Othello")
    [cb] = callbacks(await h.slash("resign", {"match": 2}, user=ALICE))  # sent twice
    assert cb.ephemeral and "#2 is already over" in cb.content
    [live] = await bot.lobby.store.matches.live()
    assert live.id == 1
    [cb] = callbacks(await h.slash("resign", {"match": 1}, user=BOB))
    assert cb.ephemeral and "not yours" in cb.content
    [cb] = callbacks(await h.slash("resign", {}, user=ALICE))  # one left: it is named
    assert cb.content.startswith("You resigned match #1 (Connect Four")
