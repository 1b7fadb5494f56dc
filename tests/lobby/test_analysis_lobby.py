"""Analyses of finished matches through the lobby, the console and Discord: computed once in
the pool and stored, one at a time, refusals in one line, a crashed worker stores nothing;
the Analyse button on finished boards, a note while it runs, the replay GIF attached."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from db.store import Store
from engine.analysis import VERSION
from lobby import coach
from lobby.core import Lobby, LobbyConfig, Person
from lobby.errors import BadRequest, LimitReached, MatchNotFound
from lobby.pool import EnginePool
from tests.boardbot import ALICE, BOB, buttons, callbacks, column_ids
from tests.console.test_console import run

ANN, BEN = Person("local", "ann", "ann"), Person("local", "ben", "ben")
USER = Person("user", 42, "Uma")


@pytest.fixture
def lobby_config() -> LobbyConfig:
    return LobbyConfig(seed=7, analysis_seconds=0.5)


async def finished(lobby: Lobby, who: Person = ANN, moves: str = "4455") -> int:
    """A person-vs-person Connect Four match played to `moves`, then resigned by `who`."""
    snap = await lobby.start_pvp(ANN, BEN, "connect4")
    for i, col in enumerate(moves):
        snap = await lobby.play(snap.id, (ANN, BEN)[i % 2], col)
    await lobby.resign(snap.id, who)
    return snap.id


async def test_an_analysis_is_computed_once_and_stored(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = await finished(lobby)
    runs = []
    real = lobby.pool.run

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append(fn.__name__)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(lobby.pool, "run", counted)
    first, again = await asyncio.gather(lobby.analyse(n, ANN), lobby.analyse(n, BEN))
    assert runs == ["analyse"]  # two requests at once: one computation
    assert not first.stored and first.analysis.to_json() == again.analysis.to_json()
    assert [r.move for r in first.analysis.moves] == list("4455")
    assert first.gif[:6] == b"GIF89a"
    stored = await lobby.store.analyses.get(n, VERSION)
    assert stored == first.analysis.to_json()
    later = await lobby.analyse(None, ANN)  # default: the person's last finished match
    assert later.stored and later.replay.match_id == n and runs == ["analyse"]
    assert later.analysis.to_json() == first.analysis.to_json()


async def test_refusals_change_nothing(lobby: Lobby) -> None:
    with pytest.raises(BadRequest, match="no finished match yet"):
        await lobby.analyse(None, USER)
    assert await lobby.store.players.find_user(42) is None  # asking created no player
    with pytest.raises(MatchNotFound):
        await lobby.analyse(99, ANN)
    live = await lobby.start_pvp(ANN, BEN, "connect4")
    with pytest.raises(BadRequest, match="still being played: analyse it when it ends"):
        await lobby.analyse(live.id, ANN)
    await lobby.resign(live.id, ANN)
    with pytest.raises(BadRequest, match="has no moves to analyse"):
        await lobby.analyse(live.id, ANN)
    assert await lobby.store.analyses.get(live.id, VERSION) is None


def die(*args: Any) -> None:
    """An analysis job whose worker is killed (a real process exit, not an exception)."""
    os._exit(9)


async def test_a_crashed_worker_stores_nothing_and_the_next_request_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await Store.open(tmp_path / "crash.db")
    pool = EnginePool(workers=2, warm=False)
    await pool.start()
    lobby = Lobby(store, pool, LobbyConfig(seed=7, analysis_seconds=0.5))
    try:
        n = await finished(lobby)
        monkeypatch.setattr(coach, "analyse", die)
        with pytest.raises(BadRequest, match="the analysis failed this time; try again"):
            await lobby.analyse(n, ANN)
        assert await store.analyses.get(n, VERSION) is None
        monkeypatch.undo()
        report = await lobby.analyse(n, ANN)  # a new worker took the dead one's place
        assert not report.stored and len(report.analysis.moves) == 4
        pool.workers = 1  # as if BOARDBOT_WORKERS=1: the only worker stays for games
        with pytest.raises(BadRequest, match="analyses need two engine workers"):
            await lobby.analyse(await finished(lobby), ANN)
        pool.workers = 2
    finally:
        await lobby.close()
        await pool.close()
        await store.close()


async def test_one_analysis_at_a_time_and_one_per_person(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, c = [await finished(lobby) for _ in range(3)]
    gate = asyncio.Event()
    real = lobby.pool.run

    async def slow(fn: Any, *args: Any, **kwargs: Any) -> Any:
        await gate.wait()
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(lobby.pool, "run", slow)
    uma = asyncio.create_task(lobby.analyse(a, USER))
    await asyncio.sleep(0.01)
    with pytest.raises(LimitReached, match=f"your analysis of match #{a} is still running"):
        await lobby.analyse(b, USER)
    lobby.config.max_analyses = 2
    ann = asyncio.create_task(lobby.analyse(b, ANN))
    await asyncio.sleep(0.01)
    with pytest.raises(LimitReached, match="the analyser is busy"):
        await lobby.analyse(c, BEN)
    gate.set()
    assert (await uma).replay.match_id == a and (await ann).replay.match_id == b
    assert (await lobby.analyse(c, BEN)).replay.match_id == c  # free again


async def test_a_damaged_stored_analysis_is_computed_again(lobby: Lobby) -> None:
    n = await finished(lobby)
    await lobby.store.analyses.put(n, VERSION, {"moves": "not a list"})
    report = await lobby.analyse(n, ANN)
    assert not report.stored and len(report.analysis.moves) == 4
    assert (await lobby.analyse(n, ANN)).stored


async def test_the_console_analyse(lobby: Lobby, tmp_path: Path) -> None:
    gif = tmp_path / "a.gif"
    text = await run(
        lobby,
        "/play game:connect4 opponent:easy first:me\n4\n/resign\n"
        f"/analyse\n/analyse match:1 gif:{gif}\n/analyse match:x\n/analyze match:7\n",
        "ann",
    )
    assert "Analysis of match #1 (Connect Four)" in text
    assert "#  player" in text and "ann: accuracy" in text and "Turning point:" in text
    assert f"Replay: {gif}" in text and gif.read_bytes()[:6] == b"GIF89a"
    assert "error: 'x' is not a match id (see /history)" in text
    assert "error: there is no match #7" in text
    assert "Traceback" not in text


# ---------------------------------------------------------------------------- Discord


async def test_discord_analyse_button_and_command(env: Any) -> None:
    bot, h = env
    bot.lobby.config.analysis_seconds = 0.5
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    assert not [b for b in buttons(board) if b["custom_id"].startswith("an:")]  # live: none
    await h.click(board, column_ids(board)[3], user=ALICE)
    await h.settle()
    await h.slash("resign", {}, user=ALICE)
    await h.settle()
    board = h.messages[int(board["id"])]
    [an] = [b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("an:")]
    calls = await h.click(board, an, user=BOB)  # anyone may analyse a finished match
    [deferred] = callbacks(calls)
    assert deferred.callback_type == 5 and not deferred.ephemeral
    final = [c for c in calls if c.method == "PATCH"][-1]
    embed = final.message["embeds"][0]
    assert embed["title"] == "Analysis of match #1 (Connect Four)"
    assert "Turning point:" in embed["description"] and "accuracy" in embed["description"]
    assert list(final.files) == ["replay-1.gif", "win-chance-1.png"]
    gif = final.files["replay-1.gif"]
    assert 0 < len(gif) < 1_000_000  # Discord takes 10 MB
    assert Image.open(io.BytesIO(gif)).format == "GIF"
    assert embed["image"]["url"] == "attachment://replay-1.gif"
    calls = await h.slash("analyse", {"match": 1}, user=ALICE)  # stored: at once
    final = [c for c in calls if c.method == "PATCH"][-1]
    assert "stored" in final.message["embeds"][0]["footer"]["text"]
    [cb] = callbacks(await h.slash("analyse", {"match": 999}, user=ALICE))
    assert cb.ephemeral and "there is no match #999" in cb.message["content"]


async def test_discord_a_slow_analysis_shows_a_note_then_the_answer(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogs import analysis

    bot, h = env
    bot.lobby.config.analysis_seconds = 0.3
    monkeypatch.setattr(analysis, "PROGRESS_AFTER", 0.05)
    real = bot.lobby.pool.run

    async def slow(fn: Any, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(bot.lobby.pool, "run", slow)
    await h.slash("play", {"game": "othello", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    [select] = [c for row in board["components"] for c in row["components"] if "options" in c]
    await h.click(board, select["custom_id"], user=ALICE, values=[select["options"][0]["value"]])
    await h.settle()
    await h.slash("resign", {}, user=ALICE)
    calls = await h.slash("analyse", {}, user=ALICE)
    edits = [c for c in calls if c.method == "PATCH"]
    assert "Analysing match #1 with the solvers" in edits[0].message["content"]
    assert edits[-1].message["embeds"][0]["title"].startswith("Analysis of match #1 (Othello)")
