"""The local console front end, driven in-process on a real Lobby and SQLite file (thread pool),
plus one run of the real entry point `python bot.py` without a Discord token."""

from __future__ import annotations

import asyncio
import io
import os
import re
import time
from pathlib import Path

import pytest

from console.commands import parse_command
from console.run import run_console
from console.values import UsageError
from lobby.core import Lobby, Person
from tests.botrun import run_bot
from tests.machine import scaled
from tests.vt import Pty

RESULT = re.compile(r"^(?:\S+ .+ wins \(.+\)\.|Draw \(.+\)\.)$", re.M)


def c4_moves(rounds: int = 21) -> str:
    """Enough column attempts to finish any Connect Four game: every round of 7 tries lands at
    least one disc while the game is on (full columns just give error lines)."""
    return "\n".join("1234567" * rounds)


async def run(lobby: Lobby, script: str, user: str = "you") -> str:
    out = io.StringIO()
    code = await asyncio.wait_for(run_console(lobby, io.StringIO(script), out, user=user), 30)
    assert code == 0
    text = out.getvalue()
    assert "Traceback" not in text
    return text


def replies(text: str) -> dict[str, list[str]]:
    """Each echoed input line -> the lines printed until the next input line."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("> "):
            current = out.setdefault(line[2:], [])
        else:
            current.append(line)
    return out


async def test_a_whole_game_against_the_bot_then_history(lobby: Lobby) -> None:
    text = await run(lobby, f"/play game:connect4 level:random\n{c4_moves()}\n/history\n")
    assert text.startswith("> /play game:connect4 level:random\n#1 Connect Four: you 🔴 vs 🟡")
    assert "Move 1: 🔴 you to play" in text
    assert re.search(r"^#1 Bot \(random\) 🟡 plays \d$", text, re.M)  # the bot's replies are shown
    results = RESULT.findall(text)
    assert len(results) == 1, results
    assert "Match #1 · 7x6k4 · rated" in text
    # After the end, bare moves are errors, not moves.
    assert "error: no live match for you" in text
    history = replies(text)["/history"]
    assert history[0] == "Recent matches of you:"
    ending = r"\((four in a row|the board is full)\)"
    assert re.match(r"  #1 Connect Four vs Bot \(random\): (won|lost|drew) " + ending, history[1])
    match = await lobby.store.matches.get(1)
    assert match is not None and match.status == "finished"


async def test_hot_seat_challenge_to_a_win_and_the_boards_of_honour(lobby: Lobby) -> None:
    script = """
/challenge opponent:"Bob Smith" game:connect4
1
2
1
2
x
1
2
1
/board
/leaderboard game:connect4
/stats user:"Bob Smith"
/as "Bob Smith"
/history
"""
    text = await run(lobby, script, user="alice")
    r = replies(text)
    assert r['/challenge opponent:"Bob Smith" game:connect4'][0] == (
        "#1 Connect Four: alice 🔴 vs 🟡 Bob Smith"
    )
    assert "#1 Bob Smith 🟡 plays 2" in text  # the bare move was Bob's: hot-seat
    assert r["x"] == ["error: 'x' is not a column of a 7-column board"]
    assert "🔴 alice wins (four in a row)." in text
    assert r["/board"][-2:] == [
        "🔴 alice wins (four in a row).",
        "Match #1 · 7x6k4 · rated · ply 7",
    ]
    board = r["/leaderboard game:connect4"]
    assert board[0].startswith("Connect Four leaderboard (Rating = mu - 3 sigma")
    assert board[1].startswith("  1. alice ") and board[1].endswith("(1 game: 1W 0D 0L)")
    assert board[2].startswith("  2. Bob Smith ")
    assert r['/stats user:"Bob Smith"'][1].startswith("  Connect Four: 1 played, 0W 0D 1L, rating")
    assert r["/history"][1].startswith("  #1 Connect Four vs alice: lost (four in a row), 7 moves")


async def test_a_full_column_and_resigning_in_othello(lobby: Lobby) -> None:
    script = """
/challenge opponent:bob game:connect4
1
1
1
1
1
1
1
/resign
/play game:othello level:greedy-first
D3
a1
/resign
"""
    text = await run(lobby, script)
    r = replies(text)
    assert "error: column 1 is full" in r["1"]
    # Resigning in hot-seat: the player to move (you, after six discs) resigns.
    assert "🟡 bob wins (resignation)." in text
    assert "#2 you ⚫ plays d3" in text
    assert r["a1"][0].startswith("error: a1 is not legal")
    assert "⚪ Bot (greedy-first) wins (resignation)." in r["/resign"]
    assert any(re.fullmatch(r"⚫ \d+ - \d+ ⚪", line) for line in r["/resign"])


async def test_a_botmatch_plays_to_its_end(lobby: Lobby) -> None:
    text = await run(lobby, "/botmatch game:othello first:greedy-first second:random delay:0\n")
    assert text.splitlines()[1] == "#1 Othello: Bot (greedy-first) ⚫ vs ⚪ Bot (random)"
    plays = re.findall(r"^#1 Bot \S+ [⚫⚪] (?:plays [a-h][1-8]|has no legal move)", text, re.M)
    match = await lobby.store.matches.get(1)
    assert match is not None and match.status == "finished" and match.kind == "eve"
    assert len(plays) == match.ply
    assert len(RESULT.findall(text)) == 1
    assert text.rstrip().endswith(
        f"Match #1 · 8x8 · unrated · ply {match.ply}\nNo match stays live."
    )


async def test_quit_stops_a_running_botmatch(lobby: Lobby) -> None:
    t0 = time.perf_counter()
    text = await run(lobby, "/botmatch game:connect4 first:random second:random delay:5\n/quit\n")
    assert time.perf_counter() - t0 < scaled(5)
    assert "Match ended (stopped), no result." in text
    match = await lobby.store.matches.get(1)
    assert match is not None and match.status == "abandoned"


BAD_INPUTS = [
    "/frobnicate",
    "frobnicate now",
    "/play",
    "/play game:connect4",
    "/play game:chess level:easy",
    "/play game:connect4 level:nosuch",
    "/play game:connect4 level:minimax:nosuch=1",
    "/play game:connect4 level:easy first:never",
    "/play connect4 easy me extra",
    "/play game:connect4 game:othello level:easy",
    "/challenge game:connect4",
    "/challenge opponent:you game:connect4",
    "/botmatch game:connect4 first:random",
    "/botmatch game:connect4 first:random second:random delay:abc",
    "/botmatch game:connect4 first:random second:random delay:99",
    "/leaderboard",
    "/leaderboard game:chess",
    "/as",
    '/as "/x"',
    '/play game:"connect4',
    "4",
    "d3",
    "/board",
    "/resign",
    "/stop",
]


async def test_every_bad_input_gets_one_error_line_and_changes_nothing(lobby: Lobby) -> None:
    text = await run(lobby, "\n".join(BAD_INPUTS) + "\n# a comment\n\n/quit\n")
    r = replies(text)
    for line in BAD_INPUTS:
        assert len(r[line]) == 1 and r[line][0].startswith("error: "), (line, r[line])
    assert await lobby.store.matches.live() == []
    assert (
        await lobby.store.matches.history(
            (await lobby.player_for(Person("local", "you", "you"))).id
        )
        == []
    )


async def test_errors_inside_a_match(lobby: Lobby) -> None:
    text = await run(
        lobby, "/play game:connect4 level:random\nz\n0\n10\npass\n/play game:othello\n/quit\n"
    )
    r = replies(text)
    for line in ("z", "0", "10", "pass", "/play game:othello"):
        assert len(r[line]) == 1 and r[line][0].startswith("error: "), (line, r[line])
    match = await lobby.store.matches.get(1)
    assert match is not None and match.ply == 0 and match.status == "live"


async def test_not_your_turn_in_a_match_from_an_earlier_session(lobby: Lobby) -> None:
    dee = Person("user", 42, "Dee")  # a Discord user, sharing the database
    snap = await lobby.start_pvp(dee, Person("local", "you", "you"), "connect4")
    text = await run(lobby, "4\n/resign\n")
    assert "A live match from an earlier session: #1" in text
    assert f"#{snap.id} Connect Four: Dee 🔴 vs 🟡 you" in text
    assert replies(text)["4"] == ["error: it is Dee's turn"]
    assert "🔴 Dee wins (resignation)." in text


async def test_the_console_reads_without_blocking_the_event_loop(lobby: Lobby) -> None:
    """A botmatch plays to its end while the console waits for a line that has not come yet."""
    r, w = os.pipe()
    out = io.StringIO()
    with open(r, encoding="utf-8") as stdin, open(w, "w", encoding="utf-8") as writer:
        task = asyncio.ensure_future(run_console(lobby, stdin, out, user="you"))
        writer.write("/botmatch game:connect4 first:onestep second:random delay:0\n")
        writer.flush()
        deadline = time.monotonic() + scaled(20)
        while not RESULT.search(out.getvalue()):
            assert time.monotonic() < deadline, out.getvalue()
            await asyncio.sleep(0.02)
        writer.write("/quit\n")
        writer.flush()
        assert await asyncio.wait_for(task, 10) == 0


def test_parse_command() -> None:
    assert parse_command("4") is None
    assert parse_command("/play othello hard first:bot") == (
        "play",
        {"game": "othello", "opponent": "hard", "first": "bot"},
    )
    assert parse_command('challenge opponent:"Ann Lee" game:c4') == (
        "challenge",
        {"opponent": "Ann Lee", "game": "c4"},
    )
    assert parse_command("/play game:connect4 level:minimax:depth=4") == (
        "play",
        {"game": "connect4", "opponent": "minimax:depth=4"},
    )
    assert parse_command("/AS bob") == ("as", {"name": "bob"})
    assert parse_command("exit") == ("quit", {})
    for bad in ("/nope", "/as", "/as a b", '/as "x', "/stats user:a user:b", "two words"):
        with pytest.raises(UsageError):
            parse_command(bad)


def test_python_bot_py_without_a_token_runs_the_console(tmp_path: Path) -> None:
    script = f"/play game:connect4 level:random\n{c4_moves()}\n/history\n/quit\n"
    proc = run_bot(tmp_path / "bot.db", script, tmp_path, timeout=90)  # as the user "you"
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert len(RESULT.findall(proc.stdout)) == 1
    assert re.search(r"^  #1 Connect Four vs Bot \(random\): (won|lost|drew) \(", proc.stdout, re.M)
    assert proc.stdout.rstrip().endswith("> /quit\nNo match stays live.")


async def test_a_game_started_while_the_engine_warms_is_not_taken_for_an_earlier_one(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a terminal the prompt works before the rule kernels are warm (a first run compiles
    them, which can take a minute); what a restart takes up is only what was live before the
    start."""
    import console.run

    def slow_warm() -> None:
        time.sleep(1.0)  # the first run's compile, shortened

    monkeypatch.setattr(console.run, "warm_rules", slow_warm)
    term = Pty()
    term.start()
    try:
        task = asyncio.ensure_future(run_console(lobby, term.stdin, term.stdout, user="you"))
        await term.until(lambda: term.screen.cursor_line() == "you>")
        term.send("/play game:connect4 opponent:easy\r")
        await term.until(lambda: "Move 1:" in term.screen.text(), 10)
        await asyncio.sleep(1.5)  # the warm-up and the restart's take-up are over
        term.send("/quit\r")
        assert await asyncio.wait_for(task, 10) == 0
    finally:
        term.close()
    text = term.screen.text()
    assert "earlier session" not in text
    assert text.count("#1 Connect Four") == 1  # its board was shown once, not again
