"""`/tournament` in the console: a tournament of the console's user and the bot's players
played to its end from a script (each round's pairings, the results, the standings after each
round, the winner), taken up again at the next start, Tab completion of its subcommands and
options in a terminal, and bad input: one `error:` line each, and nothing stored."""

from __future__ import annotations

import asyncio
import io
import re
import shlex
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.completion import completions
from console.run import run_console
from engine.agents import opponents
from lobby.core import Lobby
from lobby.records import Person, Where
from lobby.settings import CONSOLE_SERVER
from tests.botrun import Terminals, run_bot
from tests.machine import scaled
from tests.vt import Screen, pump, wait_eof

RESULT = re.compile(r"^Tournament #1, round (\d): (.+) - (.+): (1-0|0-1|½-½)$")
ANN = {"USER": "ann", "LOGNAME": "ann"}
WINNER = re.compile(r"^🏆 (.+) wins the Connect Four tournament #1!$")


def said(stdout: str) -> list[str]:
    return stdout.splitlines()


def test_a_tournament_of_the_user_and_two_bots_is_played_to_its_end(tmp_path: Path) -> None:
    script = (
        "/tournament create game:connect4 format:swiss rounds:2\n"
        "/tournament join\n/tournament join bot:random\n/tournament join easy\n"
        "/tournament start\n"
        "/resign\n"  # round 1: the user against random, easy has the bye
        "/wait\n"  # round 2: random against easy, the user's bye
        "/tournament standings\n"
    )
    proc = run_bot(tmp_path / "bot.db", script, tmp_path, timeout=90, extra=ANN)
    lines = said(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert "error:" not in proc.stdout, lines
    at = lines.index
    assert lines[at("> /tournament join") + 1] == "ann joined: 1 player so far."
    assert "Tournament #1 starts: 3 players, 2 rounds." in lines
    first = at("Tournament #1, round 1 of 2: ann - Bot (random) (match #1), Bot (easy): a bye")
    assert lines[first + 1] == "Tournament #1, round 1: your game, match #1."
    assert lines[first + 2] == "#1 Connect Four: ann 🔴 vs 🟡 Bot (random)"  # its board
    assert at("Tournament #1, round 1: ann - Bot (random): 0-1") > at("> /resign")
    after_1 = at("Tournament #1, standings after round 1 of 2:")
    assert lines[after_1 + 1 : after_1 + 4] == [
        "1. Bot (random) (bot): 1 (Buchholz 0)",
        "2. Bot (easy) (bot): 1 (Buchholz 0)",
        "3. ann: 0 (Buchholz 1)",
    ]
    second = at("Tournament #1, round 2 of 2: Bot (random) - Bot (easy) (match #2), ann: a bye")
    result = RESULT.match(lines[second + 1])
    assert result is not None and result.group(1) == "2", lines
    after_2 = at("Tournament #1, standings after round 2 of 2:")
    assert lines[after_2 + 1].startswith("1. ") and lines[after_2 + 3].startswith("3. ")
    winner = WINNER.match(lines[after_2 + 4])
    assert winner is not None and lines[after_2 + 1].startswith(f"1. {winner.group(1)}")
    assert after_1 < second < after_2 < at("> /tournament standings")  # /wait waited
    shown = at("> /tournament standings")
    assert lines[shown + 1 : shown + 3] == [
        "Tournament #1: Connect Four, Swiss",
        f"Finished. Winner: {winner.group(1)}",
    ]
    assert lines[-1] == "No match stays live."


def test_a_tournament_left_running_goes_on_at_the_next_start(tmp_path: Path) -> None:
    db, ann = tmp_path / "bot.db", ANN
    first = run_bot(
        db,
        "/tournament create c4 round-robin\n/tournament join\n/tournament join bot:random\n"
        "/tournament start\n",
        tmp_path,
        timeout=90,
        extra=ann,
    )
    assert first.returncode == 0, first.stderr
    assert said(first.stdout)[-1] == (
        "1 match stays live and resumes next time (the clocks wait): #1"
    )  # the end of the script does not wait for a move of the user
    second = run_bot(db, "/resign\n", tmp_path, timeout=90, extra=ann)
    lines = said(second.stdout)
    assert second.returncode == 0, second.stderr
    assert lines.index("Tournament #1 goes on: round 1 of 1 (/tournament standings).") < (
        lines.index("> /resign")
    )
    assert "Tournament #1, round 1: ann - Bot (random): 0-1" in lines
    assert "🏆 Bot (random) wins the Connect Four tournament #1!" in lines
    assert lines[-1] == "No match stays live."
    third = run_bot(db, "/tournament standings\n", tmp_path, timeout=90, extra=ann)
    assert "🏆" not in third.stdout  # announced once
    assert "error: there is no tournament in this channel" in third.stdout


def test_completions_of_the_subcommands_their_options_and_bot_names() -> None:
    assert completions("/tournament s") == ("s", ["start ", "standings "])
    assert completions("/tournament create c4 ")[1][-3:] == [
        "swiss ",
        "round-robin ",
        "knockout ",
    ]
    assert completions("/tournament create format:r") == ("format:r", ["format:round-robin "])
    assert completions("/tournament join bot:ea") == ("bot:ea", ["bot:easy "])
    assert completions("/tournament nosuch ") == ("", [])
    assert completions("/tournament leave ") == ("", [])


@pytest.mark.slow
def test_tab_completes_the_tournament_subcommands(terminals: Terminals) -> None:
    wait = scaled(60)
    term = terminals.spawn(timeout=wait)
    screen = Screen(50, 120)
    term.logfile_read = screen
    pump(term, screen, lambda: screen.cursor_line() == "tester>", wait)

    def typed() -> str:
        return screen.cursor_line().removeprefix("tester> ")

    for keys, line in (
        ("/tou\t", "/tournament"),
        ("cr\t", "/tournament create"),
        ("f\t", "/tournament create format:"),
        ("kn\t", "/tournament create format:knockout"),
        ("\x15/tournament j\t", "/tournament join"),  # (Ctrl-U: a new line)
        ("bot:ea\t", "/tournament join bot:easy"),
    ):
        term.send(keys)
        pump(term, screen, lambda line=line: typed() == line, wait)
    term.send("\r")
    pump(term, screen, lambda: "error: there is no tournament" in screen.text(), wait)
    term.send("/quit\r")
    wait_eof(term, wait)
    term.close()
    assert term.exitstatus == 0


# ---------------------------------------------------------------------- bad input, in this process


async def run(lobby: Lobby, script: str, user: str = "ann") -> list[str]:
    out = io.StringIO()
    code = await asyncio.wait_for(
        run_console(lobby, io.StringIO(script), out, user=user), scaled(30)
    )
    assert code == 0
    return out.getvalue().split("\n")


def dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


async def test_bad_requests_are_one_error_line_each_and_change_nothing(
    lobby: Lobby, tmp_path: Path
) -> None:
    lines = await run(lobby, "/tournament create c4 swiss\n/tournament join\n")
    before = dump(tmp_path / "lobby.db")
    bad = [
        "/tournament",
        "/tournament play",
        "/tournament create c4 chess",
        "/tournament create c4 swiss rounds:0",
        "/tournament create c4 swiss rounds:3.5",
        "/tournament create c4 knockout rounds:3",
        "/tournament create c4 swiss clock:10",
        "/tournament create c4 swiss clock:nan",
        "/tournament create c4 swiss start:0",
        "/tournament create chess swiss",
        "/tournament create c4 swiss",  # one at a time
        "/tournament join",  # twice
        "/tournament join bot:nosuch",
        "/tournament join bot:'../../etc/passwd'",
        "/tournament join bot:minimax:depth=99",
        "/tournament join bot:" + "x" * 200,
        "/tournament join bot:easy game:othello",
        "/tournament start",  # one player
        "/tournament leave now",
        "/as bob",
        "/tournament cancel",  # not bob's
        "/tournament start",
        "/tournament join bot:easy",
        "/tournament leave",  # bob is not in it
    ]
    lines = await run(lobby, "\n".join(bad) + "\n")
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == len(bad) - 1, lines  # all but /as
    for line in bad:
        if line != "/as bob":
            echo = lines.index(f"> {line}")
            assert lines[echo + 1].startswith("error: "), (line, lines[echo + 1])
    assert "error: /tournament: unknown subcommand 'play'; it takes create, join, leave," in (
        "\n".join(lines)
    )
    assert "error: rounds must be a whole number, not '3.5'" in lines
    assert "error: already in that tournament" in lines
    assert "error: a tournament needs at least 2 players to start" in lines
    assert "error: only the tournament's creator or a server manager can do that" in lines
    assert dump(tmp_path / "lobby.db") == before
    active = await lobby.store.tournaments.active(CONSOLE_SERVER)
    assert [t.status for t in active] == ["open"]


def _not_a_player(text: str) -> bool:
    try:
        opponents.opponent("connect4", text)
    except ValueError:
        return True
    return False


LINE_TEXT = st.text(st.characters(codec="utf-8", blacklist_characters="\n\r\x00"), max_size=40)
SUBCOMMANDS = ["create", "join", "leave", "start", "standings", "cancel", "", "Create", "JOIN"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    line=st.one_of(
        LINE_TEXT.filter(_not_a_player).map(lambda t: f"/tournament join bot:{shlex.quote(t)}"),
        LINE_TEXT.map(lambda t: f"/tournament {shlex.quote(t)} {shlex.quote(t)}"),
        st.tuples(
            st.sampled_from(["game", "format", "rounds", "clock", "start", "bot"]), LINE_TEXT
        ).map(lambda kv: f"/tournament create c4 swiss {kv[0]}:{shlex.quote(kv[1])}"),
        st.tuples(st.sampled_from(SUBCOMMANDS), LINE_TEXT).map(
            lambda sv: f"/tournament {sv[0]} {shlex.quote(sv[1])}:x"
        ),
    )
)
async def test_hostile_tournament_lines_change_nothing(
    lobby: Lobby, tmp_path: Path, line: str
) -> None:
    if not await lobby.store.tournaments.active(CONSOLE_SERVER):  # the first example
        await run(lobby, "/tournament create c4 swiss\n/tournament join\n")
        assert await lobby.store.tournaments.active(CONSOLE_SERVER)
    before = dump(tmp_path / "lobby.db")
    lines = await run(lobby, line + "\n")
    echo = next(i for i, said in enumerate(lines) if said.startswith("> "))
    answer = lines[echo + 1 : -2]  # before the last line and the end
    assert len(answer) == 1 and answer[0].startswith("error: "), (line, lines)
    assert "unknown command" not in answer[0]  # the command's own answer
    assert dump(tmp_path / "lobby.db") == before


async def test_its_creator_cancels_it_and_its_games_end(lobby: Lobby) -> None:
    lines = await run(
        lobby,
        "/tournament create c4 round-robin\n/tournament join\n/tournament join bot:easy\n"
        "/tournament start\n/matches\n/tournament cancel\n/matches\n/tournament standings\n",
    )
    assert "> #1 Connect Four: ann 🔴 vs 🟡 Bot (easy) · Move 1: 🔴 ann to play" in "\n".join(
        lines
    )  # the user's game is theirs, and where their moves go
    cancelled = lines.index(
        "The Connect Four tournament #1 is cancelled: nobody wins; its live games end unrated."
    )
    assert lines.index("> /tournament cancel") < cancelled
    assert "ann has no live match." in lines[cancelled:]
    shown = lines.index("> /tournament standings")
    assert lines[shown + 1 : shown + 3] == [
        "Tournament #1: Connect Four, round robin",
        "Cancelled.",
    ]
    t = await lobby.store.tournaments.get(1)
    assert t is not None and t.status == "cancelled" and t.winner_id is None


async def test_leaving_keeps_the_tournaments_bot_games_live(lobby: Lobby) -> None:
    ann = Person("local", "ann", "ann")
    here = Where(CONSOLE_SERVER)
    await lobby.tournaments.create(ann, here, "connect4", "round-robin")
    for bot in ("easy", "random"):
        await lobby.tournaments.enter(bot, here, ann, False)
    view = await lobby.tournaments.start(here, ann, False)  # a move a second (the lobby's pace)
    (game,) = view.current()
    assert game.match_id is not None
    lines = await run(lobby, "/quit\n")  # the console takes the tournament up, then leaves
    assert "Tournament #1 goes on: round 1 of 1 (/tournament standings)." in lines
    assert (await lobby.snapshot(game.match_id)).live  # not stopped as the console's own
    assert (
        lines[-2] == f"1 match stays live and resumes next time (the clocks wait): #{game.match_id}"
    )
