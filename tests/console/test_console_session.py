"""The console over a whole session, driven in-process on a real Lobby and SQLite file: the
clocks while it is closed, what leaving says, /train stop, /watch, hints asked again, replays
that never overwrite, the words of endings and listings, and Tab completion."""

from __future__ import annotations

import asyncio
import io
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.commands import COMMANDS
from console.completion import completions
from console.handlers import HANDLERS
from console.run import run_console
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person
from lobby.pool import EnginePool
from tests.clock import Clock
from tests.console.test_console import RESULT, replies
from tests.counting import KIND

DEE = Person("user", 42, "Dee")  # a Discord user sharing the database
ALICE = Person("local", "alice", "alice")
BOB = Person("local", "bob", "bob")


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "s.db", clock=clock)
    config = LobbyConfig(seed=7, raw_specs=True, learn_any=True, max_hints=3, hint_seconds=0.2)
    lob = Lobby(store, pool, config, clock=clock)
    try:
        yield lob
    finally:
        await lob.close()
        await store.close()


async def run(lobby: Lobby, script: str, user: str = "you") -> str:
    out = io.StringIO()
    code = await asyncio.wait_for(run_console(lobby, io.StringIO(script), out, user=user), 60)
    assert code == 0
    text = out.getvalue()
    assert "Traceback" not in text
    return text


# ---------------------------------------------------------------------- clocks and leaving


async def test_a_person_to_move_has_a_full_turn_again_after_the_console_was_closed(
    lobby: Lobby, clock: Clock
) -> None:
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    turn = lobby.config.turn_seconds
    clock.now += turn - 10  # the console was closed with 10 s left on alice's clock
    text = await run(lobby, "/matches\n", user="alice")
    deadline = (await lobby.snapshot(snap.id)).match.turn_deadline
    assert deadline is not None and deadline - clock.now == pytest.approx(turn)
    assert f"Move 1: 🔴 alice to play, {int(turn)} s left" in text
    assert text.rstrip().endswith("1 match stays live and resumes next time (the clocks wait): #1")
    assert lobby.config.resume_grace == LobbyConfig().resume_grace  # given back as it was


async def test_quit_says_what_stays_live_and_a_stop_signal_keeps_bot_matches(
    lobby: Lobby,
) -> None:
    script = (
        "/challenge opponent:bob game:connect4\n"
        "/botmatch game:connect4 first:random second:random delay:5\n/quit\n"
    )
    text = await run(lobby, script)
    assert "Match ended (stopped), no result." in text  # /quit stops this session's bot match
    assert replies(text)["/quit"][-1] == (
        "1 match stays live and resumes next time (the clocks wait): #1"
    )
    # A signal (SIGTERM, Ctrl-C) leaves the bot matches live too.
    r, w = os.pipe()
    out = io.StringIO()
    stop = asyncio.Event()
    with open(r, encoding="utf-8") as stdin, open(w, "w", encoding="utf-8") as writer:
        task = asyncio.ensure_future(run_console(lobby, stdin, out, user="you", stop=stop))
        writer.write("/botmatch game:connect4 first:random second:random delay:5\n")
        writer.flush()
        deadline = time.monotonic() + 20
        while "#3 Connect Four" not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            await asyncio.sleep(0.02)
        stop.set()
        assert await asyncio.wait_for(task, 10) == 0
    last = out.getvalue().rstrip().splitlines()[-1]
    assert last == "2 matches stay live and resume next time (the clocks wait): #1, #3"


async def test_nothing_live_is_said_too(lobby: Lobby) -> None:
    text = await run(lobby, "/help\n")
    assert text.rstrip().endswith("No match stays live.")


# ---------------------------------------------------------------------- training


@pytest.mark.usefixtures("counting")
async def test_train_stop_keeps_what_was_learned_and_a_second_job_is_refused(
    lobby: Lobby,
) -> None:
    r, w = os.pipe()
    out = io.StringIO()
    with open(r, encoding="utf-8") as stdin, open(w, "w", encoding="utf-8") as writer:
        task = asyncio.ensure_future(run_console(lobby, stdin, out, user="you"))
        writer.write(
            f"/train game:connect4 agent:{KIND} games:1000000\n"
            f"/train game:connect4 agent:{KIND} games:10\n"
        )
        writer.flush()
        deadline = time.monotonic() + 20
        while not any(job.progress.done for job in lobby.learning.training.jobs.values()):
            assert time.monotonic() < deadline, out.getvalue()
            await asyncio.sleep(0.02)
        writer.write("/train stop\n/train stop\n/stop\n/quit\n")
        writer.flush()
        assert await asyncio.wait_for(task, 20) == 0
    text = out.getvalue()
    r_ = replies(text)
    [refused] = r_[f"/train game:connect4 agent:{KIND} games:10"]
    assert refused.startswith(f"error: a training job is already running ({KIND}, ")
    assert refused.endswith(" games): one at a time; /train stop stops it")
    [said] = [line for line in r_["/train stop"] if "what it learned is kept" in line]
    found = re.fullmatch(rf"Training {KIND} stopped after (\d+) of 1000000 games;.*", said)
    assert found is not None
    done = int(found[1])
    assert r_["/stop"] == ["error: no bot match of this session is running"]
    assert "error: no training is running" in text
    # Every progress report is one line.
    for line in text.splitlines():
        if "games (" in line:
            assert line.startswith(f"Training {KIND} (connect4, memory {KIND}/default"), line
    info = await lobby.store.memory.info(KIND, "default")
    assert done > 0 and info is not None and info.games_trained == done, text


@pytest.mark.usefixtures("counting")
async def test_quit_stops_the_training_and_says_what_is_kept(lobby: Lobby) -> None:
    text = await run(lobby, f"/train game:connect4 agent:{KIND} games:1000000\n/quit\n")
    quit_lines = replies(text)["/quit"]
    assert any(
        re.fullmatch(rf"Training {KIND} stopped after \d+ of 1000000 games; what it learned is"
                     r" kept\.", line)
        for line in quit_lines
    ), quit_lines  # fmt: skip
    assert quit_lines[-1] == "No match stays live."


# ---------------------------------------------------------------------- watching


async def test_watch_shows_a_bot_match_to_its_end(lobby: Lobby) -> None:
    script = (
        "/watch\n/botmatch game:connect4 first:onestep second:random delay:0.05\n/watch\n/quit\n"
    )
    text = await run(lobby, script)
    r = replies(text)
    assert r["/watch"][0].startswith("error: no bot match of this session is running")
    assert "Match ended (stopped)" not in text
    watched = "\n".join(r["/watch"])
    assert "Watching match #1 until it ends." in watched
    assert len(RESULT.findall(watched)) == 1  # the end came before the next line was read
    match = await lobby.store.matches.get(1)
    assert match is not None and match.status == "finished"
    assert len(re.findall(r"^#1 Bot \S+ \S+ plays \d$", watched, re.M)) > 1


async def test_watch_is_for_bot_matches(lobby: Lobby) -> None:
    text = await run(lobby, "/challenge opponent:bob game:connect4\n/watch match:1\n/quit\n")
    assert replies(text)["/watch match:1"] == [
        "error: match #1 is not a bot match: its moves show as they are played"
    ]


# ---------------------------------------------------------------------- words


async def test_an_end_in_the_background_shows_the_title(lobby: Lobby) -> None:
    snap = await lobby.start_pvp(DEE, Person("local", "you", "you"), "connect4")
    r, w = os.pipe()
    out = io.StringIO()
    with open(r, encoding="utf-8") as stdin, open(w, "w", encoding="utf-8") as writer:
        task = asyncio.ensure_future(run_console(lobby, stdin, out, user="you"))
        writer.write("/board\n")
        writer.flush()
        deadline = time.monotonic() + 20
        while "Match #1" not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            await asyncio.sleep(0.02)
        await lobby.resign(snap.id, DEE)  # on Discord, say: nothing typed here
        while "wins (resignation)" not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            await asyncio.sleep(0.02)
        writer.write("/quit\n")
        writer.flush()
        assert await asyncio.wait_for(task, 10) == 0
    after = out.getvalue().split("> /board", 1)[1]
    lines = after.splitlines()
    title = lines.index("#1 Connect Four: Dee 🔴 vs 🟡 you", 6)  # after /board's own
    assert "🟡 you wins (resignation)." in lines[title:]


async def test_a_hint_asked_again_at_the_same_position_is_free(lobby: Lobby) -> None:
    script = "/play game:connect4 opponent:easy\n/hint\n/hint\n/hint\n/hint\n"
    text = await run(lobby, script)
    answers = [line for line in text.splitlines() if line.startswith("Hint for match #1")]
    assert len(answers) == 4 and all(a.endswith("hints used: 1 of 3.") for a in answers)
    assert text.count("this one was free") == 3
    assert "error" not in text


async def test_the_lobby_counts_a_hint_once_per_position(lobby: Lobby) -> None:
    snap = await lobby.start_pve(ALICE, "connect4", "easy", "me")
    first, after = await lobby.hint(snap.id, ALICE)
    again, after = await lobby.hint(snap.id, ALICE)
    assert again == first and after.match.options["hints"] == 1
    snap = await lobby.play(snap.id, ALICE, first.move)
    snap = await lobby.advance(snap.id)
    _, after = await lobby.hint(snap.id, ALICE)
    assert after.match.options["hints"] == 2


async def test_replay_never_overwrites_and_says_where(lobby: Lobby, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "replay-1.gif").write_bytes(b"mine")
    script = (
        "/challenge opponent:bob game:connect4\n1\n2\n1\n2\n1\n2\n1\n"
        f"/replay dir:{folder}\n/replay dir:{folder}\n"
    )
    text = await run(lobby, script)
    said = [line for line in text.splitlines() if line.startswith("Match #1: wrote")]
    assert re.fullmatch(
        rf"Match #1: wrote replay-1-2\.gif \(\d+ KB\) and replay-1-2\.png \(\d+ KB\) in {folder}\.",
        said[0],
    ), said
    assert "replay-1-3.gif" in said[1]
    assert (folder / "replay-1.gif").read_bytes() == b"mine"
    assert sorted(p.name for p in folder.iterdir()) == [
        "replay-1-2.gif", "replay-1-2.png", "replay-1-3.gif", "replay-1-3.png", "replay-1.gif",
    ]  # fmt: skip


async def test_help_says_what_the_console_leaves_out(lobby: Lobby) -> None:
    text = await run(lobby, "/help\n")
    assert "limits per member (live games, bot matches, challenges) do not apply here" in text
    assert "hints do (3 per game against the bot)" in text
    assert "a bare move is made for whoever is to move, whoever /as names" in text
    assert "Nobody's clock runs while the console is closed" in text


async def test_hot_seat_moves_go_to_whoever_is_to_move(lobby: Lobby) -> None:
    text = await run(lobby, "/challenge opponent:bob game:connect4\n/as bob\n1\n1\n", "alice")
    assert "#1 alice 🔴 plays 1" in text and "#1 bob 🟡 plays 1" in text


async def test_one_word_for_a_player_without_finished_matches(lobby: Lobby) -> None:
    text = await run(lobby, "/history\n/stats\n/quit\n")
    r = replies(text)
    assert r["/history"] == ["you has no finished matches yet."]
    assert r["/stats"] == ["you has no finished matches yet."]


async def test_an_agent_named_by_spec_reads_like_a_level(lobby: Lobby) -> None:
    text = await run(lobby, "/play game:othello opponent:mcts:c=1.5\n")
    assert "#1 Othello: you ⚫ vs ⚪ Bot (mcts[c=1.5,pick=ratio])" in text


# ---------------------------------------------------------------------- completion


def test_tab_completes_commands_options_and_agents() -> None:
    assert completions("/pl") == ("/pl", ["/play "])
    assert completions("/st") == ("/st", ["/stop ", "/stats "])
    assert completions("4") == ("4", [])
    word, found = completions("/play game:c")
    assert word == "game:c" and "game:connect4 " in found and "game:othello " not in found
    assert completions("/play game:othello opponent:greedy-f") == (
        "opponent:greedy-f",
        ["opponent:greedy-first "],
    )
    assert completions("/play game:connect4 opponent:greedy") == ("opponent:greedy", [])
    assert completions("/play othello opp") == ("opp", ["opponent:"])
    assert completions("/play game:connect4 opponent:easy f")[1] == ["first:"]
    assert completions("/play game:connect4 opponent:easy first:")[1] == [
        "first:me ", "first:bot ", "first:random ",
    ]  # fmt: skip
    assert completions("/train game:othello agent:")[1] == ["agent:weightgrid "]
    assert completions("/train s")[1] == ["stop "]
    assert completions("/botmatch game:connect4 first:easy second:tr")[1] == ["second:trainer "]
    assert completions("/challenge opponent:b", ["bob", "ann"])[1] == ["opponent:bob "]
    assert completions("/nosuch x") == ("x", [])
    assert "easy " in completions("/play game:connect4 ")[1]  # the next positional value


def test_every_command_has_a_handler() -> None:
    for name in COMMANDS:
        assert callable(HANDLERS.get(name)), name
    assert set(HANDLERS) == set(COMMANDS)


async def test_stats_and_history_of_one_of_the_bots_players(lobby: Lobby) -> None:
    for game in ("connect4", "othello"):
        snap = await lobby.start_pve(ALICE, game, "easy")
        await lobby.resign(snap.id, ALICE)
    text = await run(lobby, '/stats user:easy\n/history user:"Bot (easy)"\n')
    assert "looks like one of the bot's players" not in text
    assert "Stats of Bot (easy)" in text and "1 played, 1W 0D 0L" in text
    assert "Recent matches of Bot (easy)" in text and text.count(": won (resignation)") == 2
