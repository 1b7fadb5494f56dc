"""`python -m tools`: the serve protocol, perft, match and agents subcommands."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.games.connect4 import Connect4State
from engine.games.othello import OthelloState
from tests.machine import scaled


def run(*args: str, stdin: str | bytes = "", timeout: float = 120) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "tools", *args],
        input=data,
        capture_output=True,
        timeout=timeout,
    )


def test_random_opening_moves_replay_to_the_random_opening() -> None:
    from engine.play import random_opening, random_opening_moves

    for seed in range(20):
        start = OthelloState.new() if seed % 2 else Connect4State.new()
        state, moves = random_opening_moves(start, seed % 7, random.Random(seed))
        assert state == random_opening(start, seed % 7, random.Random(seed))
        replayed = start
        for move in moves:
            replayed = replayed.play(move)
        assert replayed == state and len(moves) <= seed % 7


def random_c4_positions(n: int, rng: random.Random) -> list[Connect4State]:
    out = []
    while len(out) < n:
        state = Connect4State.new()
        for _ in range(rng.randrange(0, 40)):
            nxt = state.play(rng.choice(state.legal_moves()))
            if nxt.is_over():
                break
            state = nxt
        out.append(state)
    return out


def random_othello_positions(n: int, rng: random.Random) -> list[OthelloState]:
    out = []
    while len(out) < n:
        state = OthelloState.new()
        for _ in range(rng.randrange(0, 58)):
            nxt = state.play(rng.choice(state.legal_moves()))
            if nxt.is_over():
                break
            state = nxt
        out.append(state)
    return out


@pytest.mark.parametrize("game", ["connect4", "othello"])
def test_serve_answers_1000_random_positions_with_legal_moves(game):
    rng = random.Random(7)
    states = (random_c4_positions if game == "connect4" else random_othello_positions)(1000, rng)
    lines = "".join(s.to_notation() + "\n" for s in states)
    t0 = time.perf_counter()
    proc = run("serve", "--game", game, "--agent", "random", "--seed", "1", stdin=lines)
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    replies = proc.stdout.decode().splitlines()
    assert len(replies) == 1000
    for state, reply in zip(states, replies, strict=True):
        assert state.parse_move(reply) in state.legal_moves(), (state.to_notation(), reply)
    assert elapsed < scaled(10)  # "a few seconds", including interpreter start and numba cache load


MALFORMED = {
    "connect4": [
        "48",  # column 8 does not exist
        "4444444",  # column 4 overfull
        "abc",
        "4 4",
        "0",
        "1122334",  # game over (player 0 connected four)
        "x" * 5000,
        "\ufffd",
    ],
    "othello": [
        "",
        "X",
        "---------------------------OX------XO--------------------------- Z",
        "---------------------------OX------XO---------------------------",
        "---------------------------OX------XO----------------------------- X",
        "---------------------------OQ------XO--------------------------- X",
        "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX O",  # over
        "garbage line with spaces",
    ],
}


@pytest.mark.parametrize("game", ["connect4", "othello"])
def test_serve_replies_error_to_every_malformed_line_and_goes_on(game):
    good = "" if game == "connect4" else OthelloState.new().to_notation()
    lines = [*MALFORMED[game], good]
    payload = ("\n".join(lines) + "\n").encode() + b"\xff\xfe\n"
    proc = run("serve", "--game", game, "--agent", "random", stdin=payload)
    assert proc.returncode == 0, proc.stderr
    replies = proc.stdout.decode().splitlines()
    assert len(replies) == len(lines) + 1
    for line, reply in zip(lines[:-1], replies, strict=False):
        assert reply.startswith("error: "), (line, reply)
    assert not replies[len(lines) - 1].startswith("error")  # the good line after the bad ones
    assert replies[-1].startswith("error: ")  # undecodable bytes


def test_serve_rejects_a_bad_agent_at_start():
    proc = run("serve", "--game", "connect4", "--agent", "nope")
    assert proc.returncode == 2 and b"unknown agent" in proc.stderr


def test_perft_othello_depth_9_under_10_seconds():
    t0 = time.perf_counter()
    proc = run("perft", "--game", "othello", "--depth", "9")
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    expected = [4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288]
    assert proc.stdout.decode().split("\n")[:9] == [f"{d} {n}" for d, n in enumerate(expected, 1)]
    assert elapsed < scaled(10)


def test_perft_connect4_prints_a_line_per_depth():
    proc = run("perft", "--game", "connect4", "--depth", "4")
    assert proc.stdout.decode().split() == ["1", "7", "2", "49", "3", "343", "4", "2401"]


def test_match_json_counts_every_game_with_alternating_colours():
    proc = run(
        "match",
        "--game",
        "connect4",
        "--agents",
        "onestep,random",
        "--games",
        "20",
        "--seed",
        "3",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["game"] == "connect4" and data["games"] == 20
    a, b = data["results"]["onestep"], data["results"]["random"]
    assert sum(a.values()) == sum(b.values()) == 20
    assert a["wins"] == b["losses"] and a["draws"] == b["draws"]
    assert a["wins"] >= 15  # one-step lookahead beats random


def test_match_same_agent_twice_and_seeded_repeatability():
    args = (
        "match",
        "--game",
        "othello",
        "--agents",
        "random,random",
        "--games",
        "6",
        "--seed",
        "9",
        "--json",
    )
    first, second = run(*args), run(*args)
    assert first.stdout == second.stdout
    assert set(json.loads(first.stdout)["results"]) == {"random", "random#2"}


def test_match_single_game_shows_the_board_move_by_move():
    proc = run("match", "--game", "othello", "--agents", "greedy-first,greedy-edge", "--seed", "1")
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    assert "move 1: greedy-first plays" in out
    assert out.count("move ") >= 50 and "Final score" in out


def test_agents_lists_every_agent():
    out = run("agents").stdout.decode()
    for name in (
        "random",
        "onestep",
        "greedy-first",
        "greedy-center",
        "greedy-edge",
        "greedy-random",
    ):
        assert name in out


def test_match_chance_rule_forces_random_replies_only_when_asked():
    base = ("match", "--game", "connect4", "--agents", "expectiminimax,minimax", "--seed", "3")
    plain = run(*base).stdout.decode()
    ruled = run(*base, "--chance-rule").stdout.decode()
    assert "(forced random)" not in plain
    forced = [line for line in ruled.splitlines() if line.endswith("(forced random)")]
    assert forced and all(": minimax plays" in line for line in forced)


# --- bad arguments: one line on stderr, exit 2 -------------------------------------------------


def one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the command line in-process; it must refuse with exactly one `error:` line."""
    from tools.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("depth", ["0", "-3"])
def test_perft_refuses_a_depth_below_one(capsys: pytest.CaptureFixture[str], depth: str) -> None:
    err = one_error(capsys, ["perft", "--game", "connect4", "--depth", depth])
    assert "--depth must be at least 1" in err


@pytest.mark.parametrize("budget", ["0", "-1", "3600.5", "nan", "inf"])
def test_analyse_budget_message_says_the_real_bounds(
    capsys: pytest.CaptureFixture[str], budget: str
) -> None:
    err = one_error(capsys, ["analyse", "--game", "connect4", "--moves", "44", "--budget", budget])
    assert "--budget must be more than 0 and at most 3600 seconds" in err


def test_serve_refuses_a_memory_without_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    err = one_error(
        capsys, ["serve", "--game", "connect4", "--agent", "trainer", "--memory", "nosuch"]
    )
    assert "--memory needs --db" in err


def test_serve_refuses_a_database_file_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nosuch.db"
    err = one_error(capsys, ["serve", "--game", "connect4", "--agent", "trainer", "--db", str(db)])
    assert "no such database file" in err and not db.exists()  # serve creates nothing


def test_serve_refuses_a_memory_the_database_does_not_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    db = str(tmp_path / "m.db")
    learn = ["match", "--game", "connect4", "--agents", "trainer,random", "--games", "2"]
    assert main([*learn, "--db", db, "--seed", "1", "--json"]) == 0
    assert f"wrote what was learned to {db}" in capsys.readouterr().err
    err = one_error(
        capsys,
        ["serve", "--game", "connect4", "--agent", "trainer", "--db", db, "--memory", "nosuch"],
    )
    assert "holds no memory 'nosuch' of" in err and "(it holds: default)" in err
    # The weight grid's default memory was never trained into this database either.
    err = one_error(capsys, ["serve", "--game", "othello", "--agent", "weightgrid", "--db", db])
    assert "holds no memory 'default' of" in err


def test_c4_book_check_says_it_needs_bitbully() -> None:
    root = Path(__file__).resolve().parents[2]
    # A None entry in sys.modules makes `import bitbully` fail, installed or not.
    code = (
        "import runpy, sys; sys.modules['bitbully'] = None; "
        "runpy.run_module('benchmarks.strength.c4_book', run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=scaled(120)
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "needs bitbully" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- words -------------------------------------------------------------------------------------


def test_a_shown_match_says_how_it_ended_in_the_bot_s_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tools.cli import main

    assert main(["match", "--game", "connect4", "--agents", "onestep,random", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "wins (four in a row)." in out and "(connect)" not in out
    argv = ["match", "--game", "connect4", "--variant", "5x4k3", "--agents", "onestep,random"]
    assert main([*argv, "--seed", "1"]) == 0
    assert "wins (3 in a row)." in capsys.readouterr().out


# --- where the tools write -----------------------------------------------------------------------


def test_train_says_where_it_wrote_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    db, csv = tmp_path / "t.db", tmp_path / "curve.csv"
    argv = ["train", "--game", "connect4", "--agent", "trainer", "--games", "20", "--db", str(db)]
    argv += ["--workers", "1", "--eval-every", "10", "--eval-games", "2", "--csv", str(csv)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"wrote the memory to {db}" in out
    rows = len(csv.read_text().splitlines()) - 1  # the header
    assert rows >= 1 and f"appended {rows} evaluation rows to {csv}" in out


@pytest.mark.parametrize(
    ("plot", "message"),
    [("curve.gif", "give a name ending in .png"), ("nowhere/curve.png", "does not exist")],
)
def test_train_refuses_a_plot_it_could_not_write_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plot: str, message: str
) -> None:
    db = tmp_path / "t.db"
    argv = ["train", "--game", "connect4", "--agent", "trainer", "--games", "20", "--db", str(db)]
    err = one_error(capsys, [*argv, "--plot", str(tmp_path / plot)])
    assert message in err and not db.exists()
