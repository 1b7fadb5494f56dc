"""Learning from one's mistakes (/retry): the positions before a player's worst moves, a new
move judged by the solvers, the best move only on request; through the lobby, the console and
Discord (the harness: real dispatch), with foreign and forged presses refused in one line and
a retry that goes on after a restart."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from engine.analysis import VERSION, Review, analyse
from engine.games import new_game
from lobby.core import Lobby, LobbyConfig, Person, Where
from lobby.errors import BadMove, BadRequest, NotInMatch
from lobby.pool import EnginePool
from lobby.retry import attempt_line, best_line, holds, judge, mistakes, step_lines
from tests.boardbot import ALICE, BOB, CAROL, buttons, callbacks, make_bot
from tests.clock import Clock
from tests.console.test_console import replies, run
from tests.harness import Call

#: A Connect Four game both players spoil: at move 9 red (the first player) can win at once in
#: column 1 but plays 7; yellow then wins in column 2 (moves 9 and 10 are solved at once).
GAME = "4412121272"
LATE = 8  # the ply of red's last blunder
ANN, BEN = Person("local", "ann", "ann"), Person("local", "ben", "ben")
UMA = Person("local", "uma", "uma")


async def played(lobby: Lobby, first: Person, second: Person, moves: str = GAME) -> int:
    snap = await lobby.start_pvp(first, second, "connect4")
    for i, col in enumerate(moves):
        snap = await lobby.play(snap.id, (first, second)[i % 2], col)
    assert not snap.live
    return snap.id


def warm_solvers() -> None:
    """Every kernel an analysis and a retry use, compiled or loaded with all the time they
    need: a first compile or load on a busy machine would eat a one-second budget."""
    analyse("connect4", list(GAME), None, 60.0)
    state, rng, moves = new_game("othello"), random.Random(5), list[str]()
    while len(moves) < 50:
        move = rng.choice(state.legal_moves())
        moves.append(state.move_to_str(move))
        state = state.play(move)
    judge("othello", None, moves, state.move_to_str(state.legal_moves()[0]), 60.0)


@pytest.fixture(autouse=True, scope="module")
def _solvers_warm() -> None:
    warm_solvers()


@pytest.fixture
def lobby_config() -> LobbyConfig:
    return LobbyConfig(seed=7, analysis_seconds=1.0)


def review(ply: int, verdict: str, before: float | None, after: float | None) -> Review:
    return Review(ply, "1", ply % 2, verdict, True, None, None, chance_before=before,
                  chance_after=after)  # fmt: skip


def test_mistakes_are_the_players_own_blunders_first_then_worst_first() -> None:
    moves = [
        review(0, "inaccuracy", 0.6, 0.5),
        review(2, "miss", 1.0, 0.5),
        review(3, "blunder", 1.0, 0.0),  # the other player's
        review(4, "blunder", 0.7, 0.4),
        review(6, "best", 0.5, 0.5),
        review(8, "blunder", 0.9, 0.1),
        review(10, "unsure", None, None),
    ]
    assert [r.ply for r in mistakes(moves, 0)] == [8, 4, 2, 0]
    assert [r.ply for r in mistakes(moves, 1)] == [3]


async def test_retry_in_the_lobby(lobby: Lobby) -> None:
    n = await played(lobby, ANN, BEN)
    step = await lobby.retry(n, ANN)
    assert step.seat == 0 and step.mistake.verdict == "blunder" and step.index == 0
    steps = [step]
    while (found := await lobby.retry_next(n, steps[-1].ply, ANN)) is not None:
        steps.append(found)
    plies = [s.ply for s in steps]
    assert LATE in plies and all(p % 2 == 0 for p in plies)
    assert [s.index for s in steps] == list(range(len(steps)))
    late = steps[plies.index(LATE)]
    assert late.mistake.move == "7" and late.state.ply == LATE
    assert late.state.render_emoji() == late.state.render_emoji(last=late.last)
    assert step_lines(late)[1] == "You played column 7 here: a BLUNDER (win -> loss)."
    assert step_lines(late)[2] == "Find a move that keeps the win."

    _, tried = await lobby.retry_move(n, LATE, "7", ANN)  # the same move again
    assert holds(tried) is False
    assert attempt_line("connect4", tried).startswith("Column 7 does not hold: win -> loss")
    _, tried = await lobby.retry_move(n, LATE, 0, ANN)  # column 1 (0-based), the win
    assert holds(tried) is True and tried.move == "1"
    assert attempt_line("connect4", tried) == "Column 1 holds: still a win (proven)."
    _, best = await lobby.retry_best(n, LATE, ANN)
    assert best_line("connect4", best).startswith("The best move was column 1")

    with pytest.raises(NotInMatch, match="you did not play in match #1"):
        await lobby.retry(n, UMA)
    with pytest.raises(NotInMatch, match="move 10 of match #1 is not yours"):
        await lobby.retry_move(n, 9, "1", ANN)
    with pytest.raises(NotInMatch, match="is not yours"):
        await lobby.retry_best(n, LATE, BEN)  # red's mistake, asked by yellow
    with pytest.raises(BadMove):
        await lobby.retry_move(n, LATE, "9", ANN)
    with pytest.raises(BadRequest, match="move 201 of match #1 is not one of your mistakes"):
        await lobby.retry_at(n, 200, ANN)


async def only_the_late_blunder(lobby: Lobby, n: int) -> None:
    """The match's analysis as stored, with red's earlier mistakes (which vary with how much
    of the opening the solver finishes in time) called best: red's one mistake is move 9."""
    _, analysis, _ = await lobby.coach.analysis(n, ANN)
    assert analysis.moves[LATE].verdict == "blunder"
    for r in analysis.moves:
        if r.player == 0 and r.ply != LATE:
            r.verdict = "best"
    await lobby.store.analyses.put(n, VERSION, analysis.to_json())


async def test_retry_in_the_console(lobby: Lobby) -> None:
    await only_the_late_blunder(lobby, await played(lobby, ANN, BEN))
    text = await run(
        lobby,
        "/retry 4\n/retry\n/retry next\n/retry 7\n/retry move:1\n/retry best\n"
        "/retry match:9\n/retry x\n/as uma\n/retry match:1\n",
        "ann",
    )
    said = replies(text)
    assert said["/retry 4"] == ["error: no retry under way: /retry (or /retry match:N) starts one"]
    assert said["/retry"][0] == "Learn from your mistakes: match #1 (Connect Four)"
    assert said["/retry"][-4:] == [
        "Mistake 1 of 1 · move 9 · 🔴 ann to play",
        "You played column 7 here: a BLUNDER (win -> loss).",
        "Find a move that keeps the win.",
        "Try a move with /retry MOVE; /retry best shows the best move, /retry next the next "
        "mistake.",
    ]
    assert said["/retry next"] == ["That was your last mistake in this match. Well done."]
    assert said["/retry 7"][0].startswith("Column 7 does not hold: win -> loss")
    assert "Column 1 holds: still a win (proven)." in text
    assert "The best move was column 1" in text
    assert said["/retry match:9"] == ["error: there is no match #9"]
    assert len(said["/retry x"]) == 1 and said["/retry x"][0].startswith("error: ")
    assert said["/retry match:1"][0].startswith("error: you did not play in match #1")


# ---------------------------------------------------------------------------- Discord


def ids(message: dict[str, Any], prefix: str) -> list[str]:
    return [b["custom_id"] for b in buttons(message) if b["custom_id"].startswith(prefix)]


def text_of(message: dict[str, Any]) -> str:
    return str(message["embeds"][0]["description"])


def refusal(calls: list[Call]) -> str:
    lines = [c.content or "" for c in calls if (c.is_callback or c.is_followup) and c.ephemeral]
    assert lines, f"not refused: {calls}"
    return re.sub(r"\\(.)", r"\1", lines[-1]).replace("\u200b", "")


def forged(message: dict[str, Any], custom_id: str) -> dict[str, Any]:
    """The message with its first button's id replaced (what a forging client sends)."""
    out: dict[str, Any] = json.loads(json.dumps(message))
    button = next(c for row in out["components"] for c in row["components"] if c["type"] == 2)
    button["custom_id"] = custom_id
    return out


async def discord_game(lobby: Lobby) -> int:
    alice, bob = Person("user", ALICE.id, "alice"), Person("user", BOB.id, "bob")
    return await played(lobby, alice, bob)


async def to_late_blunder(h: Any, message: dict[str, Any]) -> dict[str, Any]:
    """Press Next until the retry shows red's last blunder."""
    mid = int(message["id"])
    for _ in range(6):
        if f"move {LATE + 1} ·" in message["embeds"][0]["footer"]["text"]:
            return message
        [next_id] = ids(message, "rn:")
        [cb] = callbacks(await h.click(message, next_id, user=ALICE))
        assert cb.callback_type in (6, 7) and not cb.ephemeral
        message = h.messages[mid]
    raise AssertionError("the late blunder was never shown")


async def test_discord_retry_command_tries_best_and_refusals(env: Any) -> None:
    bot, h = env
    bot.lobby.config.analysis_seconds = 1.0
    n = await discord_game(bot.lobby)
    calls = await h.slash("retry", {"match": n}, user=ALICE)
    assert not [c for c in calls if c.ephemeral]
    retry = h.last_message(ephemeral=False)
    assert retry["embeds"][0]["title"] == f"Learn from your mistakes: match #{n} (Connect Four)"
    assert "Mistake 1 of " in text_of(retry)
    assert ids(retry, "rb:") and all(i.startswith(f"rt:{n}:") for i in ids(retry, "rt:"))
    retry = await to_late_blunder(h, retry)
    mid = int(retry["id"])
    assert "You played column 7 here: a BLUNDER (win -> loss)." in text_of(retry)
    assert "The best move" not in text_of(retry)

    # Someone else's press, and forged ones: one ephemeral line each, the message unchanged.
    shown = copy.deepcopy(h.messages[mid])
    assert "not yours" in refusal(await h.click(retry, f"rt:{n}:{LATE}:0", user=BOB))
    assert "you did not play" in refusal(await h.click(retry, f"rb:{n}:{LATE}", user=CAROL))
    for cid, words in (
        (f"rt:{n}:{LATE + 1}:0", "is not yours"),  # yellow's move, by red
        (f"rt:{n}:4200:0", "not one of your mistakes"),
        ("rt:999:8:0", "there is no match #999"),
        (f"rn:{n}:3", "is not yours"),
    ):
        calls = await h.click(forged(retry, cid), cid, user=ALICE, force=True)
        assert words in refusal(calls), cid
    assert h.messages[mid] == shown

    await h.click(retry, f"rt:{n}:{LATE}:6", user=ALICE)  # the blunder again
    assert "**Your try**: Column 7 does not hold: win -> loss" in text_of(h.messages[mid])
    await h.click(h.messages[mid], f"rt:{n}:{LATE}:0", user=ALICE)
    retry = h.messages[mid]
    assert "**Your try**: Column 1 holds: still a win (proven)." in text_of(retry)
    assert "The best move" not in text_of(retry)
    await h.click(retry, f"rb:{n}:{LATE}", user=ALICE)
    retry = h.messages[mid]
    assert "The best move was column 1" in text_of(retry) and not ids(retry, "rb:")
    assert ids(retry, "rt:")  # the board's inputs stay: try again at will
    await h.click(retry, f"rt:{n}:{LATE}:6", user=ALICE)
    retry = h.messages[mid]  # once shown, the best move stays with the next tries
    assert "Column 7 does not hold" in text_of(retry) and "The best move was column 1" in text_of(
        retry
    )
    assert not ids(retry, "rb:")


async def test_discord_retry_button_under_the_analysis_in_a_dm(env: Any) -> None:
    bot, h = env
    bot.lobby.config.analysis_seconds = 1.0
    n = await discord_game(bot.lobby)
    await h.slash("analyse", {"match": n}, user=ALICE, guild_id=None)
    analysis = h.last_message(ephemeral=False)
    assert ids(analysis, "ra:") == [f"ra:{n}"]
    refused = await h.click(analysis, f"ra:{n}", user=CAROL)
    assert "you did not play in match #1" in refusal(refused)
    calls = await h.click(analysis, f"ra:{n}", user=BOB)
    [cb] = callbacks(calls)
    assert not cb.ephemeral
    retry = h.last_message(ephemeral=False)
    assert retry["id"] != analysis["id"] and "for bob" in retry["embeds"][0]["footer"]["text"]
    assert all(i.startswith(f"rt:{n}:") and int(i.split(":")[2]) % 2 == 1 for i in ids(retry, "rt"))


async def test_a_retry_goes_on_after_a_restart(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    db = tmp_path / "restart.db"
    bot, h = await make_bot(db, clock, pool)
    bot.lobby.config.analysis_seconds = 1.0
    n = await discord_game(bot.lobby)
    await h.slash("retry", {"match": n}, user=ALICE)
    retry = await to_late_blunder(h, h.last_message(ephemeral=False))
    await h.close()
    await bot.lobby.close()
    await bot.lobby.store.close()

    bot2, h2 = await make_bot(db, clock, pool, h.messages)  # Discord kept the message
    try:
        await h2.click(retry, f"rt:{n}:{LATE}:0", user=ALICE)
        shown = h2.messages[int(retry["id"])]
        assert "**Your try**: Column 1 holds" in text_of(shown)
    finally:
        await h2.close()
        await bot2.lobby.close()
        await bot2.lobby.store.close()


async def othello_with_one_late_mistake(lobby: Lobby) -> tuple[int, int]:
    """A random Othello game between alice and bob played to its end, its analysis stored with
    one mistake of alice's, late (the solver finishes such positions at once): (match, ply)."""
    alice, bob = Person("user", ALICE.id, "alice"), Person("user", BOB.id, "bob")
    snap = await lobby.start_pvp(alice, bob, "othello")
    rng = random.Random(5)
    while snap.live:
        moves = [m for m in snap.state.legal_moves() if snap.state.move_to_str(m) != "pass"]
        who = (alice, bob)[snap.state.to_move()]
        snap = await lobby.play(snap.id, who, rng.choice(moves))
    _, analysis, _ = await lobby.coach.analysis(snap.id, alice)
    late = [
        r.ply
        for r in analysis.moves
        if r.player == 0 and r.ply >= 48 and r.move != "pass" and r.best not in (None, r.move)
    ]
    for r in analysis.moves:
        r.verdict = "blunder" if r.ply == late[0] else "best"
    await lobby.store.analyses.put(snap.id, VERSION, analysis.to_json())
    return snap.id, late[0]


async def test_discord_othello_retry_with_the_select(env: Any) -> None:
    bot, h = env
    bot.lobby.config.analysis_seconds = 1.0
    n, ply = await othello_with_one_late_mistake(bot.lobby)
    await h.slash("retry", {}, user=ALICE)  # alice's last finished match
    retry = h.last_message(ephemeral=False)
    assert f"Mistake 1 of 1 · move {ply + 1} · ⚫ **alice** to play" in text_of(retry)
    [select] = [c for row in retry["components"] for c in row["components"] if c["type"] == 3]
    assert select["custom_id"] == f"ry:{n}:{ply}:0" and select["options"]
    value = select["options"][0]["value"]
    await h.click(retry, select["custom_id"], user=ALICE, values=[value])
    shown = text_of(h.messages[int(retry["id"])])
    tried = re.search(r"\*\*Your try\*\*: Square (\w+) (holds|does not hold): (.*)", shown)
    assert tried is not None and tried[1] == select["options"][0]["label"], shown
    assert re.search(r"\d+ discs (ahead|behind) with best play|level with best play", tried[3])
    assert "about" not in tried[3] and re.search(r"\(proven\)\.( Try again\.)?$", tried[3])
    calls = await h.click(h.messages[int(retry["id"])], f"rb:{n}:{ply}", user=BOB)
    assert "not yours" in refusal(calls)
    await h.click(h.messages[int(retry["id"])], f"rb:{n}:{ply}", user=ALICE)
    assert "The best move was square " in text_of(h.messages[int(retry["id"])])


async def test_no_retry_under_the_analysis_of_a_bot_match(env: Any) -> None:
    bot, h = env
    bot.lobby.config.analysis_seconds = 0.5
    alice = Person("user", ALICE.id, "alice")
    snap = await bot.lobby.start_eve("connect4", "random", "random", delay=1.0, starter=alice)
    snap = await bot.lobby.run_botmatch(snap.id)
    await h.slash("analyse", {"match": snap.id}, user=ALICE)
    analysis = h.last_message(ephemeral=False)
    assert analysis["embeds"][0]["title"].startswith(f"Analysis of match #{snap.id}")
    assert not analysis.get("components")  # nobody played it: nothing to retry
    calls = await h.slash("retry", {"match": snap.id}, user=ALICE)
    assert f"you did not play in match #{snap.id}" in refusal(calls)


async def test_a_retry_follows_the_servers_word_on_analyses_of_rated_games(lobby: Lobby) -> None:
    here = Where(5, 50)
    snap = await lobby.start_pvp(ANN, BEN, "connect4", here)
    for i, col in enumerate(GAME):
        snap = await lobby.play(snap.id, (ANN, BEN)[i % 2], col)
    assert snap.match.rated and not snap.live
    step = await lobby.retry(snap.id, ANN)
    await lobby.change_settings(5, BEN, {"rated_analysis": False})
    for refused in (
        lobby.retry(snap.id, ANN),
        lobby.retry(None, ANN),
        lobby.retry_move(snap.id, step.ply, "4", ANN),
        lobby.retry_best(snap.id, step.ply, ANN),
        lobby.retry_next(snap.id, step.ply, ANN),
    ):
        with pytest.raises(BadRequest, match="this server allows no analyses of rated games"):
            await refused
