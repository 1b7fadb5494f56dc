"""`python -m tools arena`: the round-robin schedule, its tables, and the command end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.games import new_game
from tests.machine import scaled
from tools import arena
from tools.arena import ArenaConfig, GameResult, GameTask
from tools.cli import main

AGENTS = "random,onestep,minimax:depth=2"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", "arena", *args],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )


def config(specs: tuple[str, ...] = ("random", "onestep"), games: int = 4) -> ArenaConfig:
    return ArenaConfig("connect4", specs, specs, games, seed=5, opening_plies=2)


def result(a: int, b: int, index: int, a_result: float, times: float = 0.0) -> GameResult:
    task = GameTask(a, b, index, a_first=index % 2 == 0, opening=index // 2)
    return GameResult(task, a_result, 10, (times,) * 5, (times / 2,) * 5)


# --- pure functions -----------------------------------------------------------------------------


def test_schedule_plays_every_pairing_n_times_with_alternating_colours():
    tasks = arena.schedule(3, 6)
    assert len(tasks) == 3 * 6
    pairings = {(t.a, t.b) for t in tasks}
    assert pairings == {(0, 1), (0, 2), (1, 2)}
    for a, b in pairings:
        games = [t for t in tasks if (t.a, t.b) == (a, b)]
        assert [t.index for t in games] == list(range(6))
        assert [t.a_first for t in games] == [True, False] * 3
        # games 2j and 2j+1 share opening j, one with each colour assignment
        assert [t.opening for t in games] == [0, 0, 1, 1, 2, 2]


def test_openings_are_seeded_unfinished_and_vary():
    start = new_game("othello")
    first = arena.opening(start, 4, seed=1, j=0)
    assert first.ply == 4 and not first.is_over()
    assert arena.opening(start, 4, seed=1, j=0).key() == first.key()
    keys = {arena.opening(start, 4, seed=1, j=j).key() for j in range(10)}
    assert len(keys) > 5
    assert arena.opening(start, 0, seed=1, j=3).key() == start.key()


def test_cross_table_counts_wins_draws_losses_per_pairing():
    labels = ["x", "y", "z"]
    results = [result(0, 1, 0, 1.0), result(0, 1, 1, 0.5), result(0, 1, 2, 0.0)]
    results += [result(0, 2, i, 1.0) for i in range(3)]
    results += [result(1, 2, i, 0.5) for i in range(3)]
    pairs = arena.cross_table(labels, results)
    assert [(p.a, p.b, p.a_wins, p.draws, p.b_wins) for p in pairs] == [
        ("x", "y", 1, 1, 1),
        ("x", "z", 3, 0, 0),
        ("y", "z", 0, 3, 0),
    ]
    assert pairs[0].a_score == 0.5 and pairs[1].a_score == 1.0
    summary = arena.ArenaResult(config(("x", "y", "z")), pairs, {}, {})
    assert summary.pair("z", "x") == (0, 0, 3)
    assert summary.total_score("x") == pytest.approx(4.5 / 6)
    assert summary.total_score("z") == pytest.approx(1.5 / 6)


def test_ratings_rank_the_winner_first_and_treat_draws_evenly():
    labels = ["a", "b", "c"]
    results = [result(0, 1, i, 1.0) for i in range(4)] + [result(1, 2, i, 0.5) for i in range(4)]
    ratings = arena.ratings(labels, results)
    assert ratings["a"].mu > 25 > ratings["b"].mu
    assert ratings["a"].ordinal == pytest.approx(ratings["a"].mu - 3 * ratings["a"].sigma)
    assert ratings["c"].sigma < 25 / 3  # played, so less uncertain than a fresh rating
    # order of the input does not matter: games are rated in schedule order
    assert arena.ratings(labels, results[::-1]) == ratings


def test_move_times_mean_p95_max():
    results = [result(0, 1, i, 1.0, times=0.01 * (i + 1)) for i in range(20)]
    times = arena.move_times(["a", "b", "c"], results)
    assert times["a"].moves == 100
    assert times["a"].mean == pytest.approx(0.105)
    assert times["a"].p95 == pytest.approx(0.19)
    assert times["a"].max == pytest.approx(0.20)
    assert times["b"].max == pytest.approx(0.10)
    assert times["c"].moves == 0


def test_play_task_is_deterministic_and_reports_colour():
    cfg = config(("onestep", "minimax:depth=2"))
    arena.init_worker(cfg)
    for task in arena.schedule(2, 2):
        one, two = arena.play_task(cfg, task), arena.play_task(cfg, task)
        assert (one.a_result, one.plies) == (two.a_result, two.plies)
        # the agent moving first makes the extra move of an odd-length game
        first, second = (one.a_times, one.b_times) if task.a_first else (one.b_times, one.a_times)
        assert len(first) + len(second) == one.plies
        assert len(first) - len(second) == one.plies % 2


def test_text_report_labels_duplicates(capsys):
    args = ["--agents", "random,random,onestep", "--games", "2", "--seed", "3", "--workers", "1"]
    code = main(["arena", "--game", "connect4", *args])
    assert code == 0
    out = capsys.readouterr().out
    assert "random#2" in out
    assert "cross table" in out and "ratings" in out and "move time" in out


# --- the command --------------------------------------------------------------------------------


def test_arena_json_is_consistent_and_independent_of_worker_count(tmp_path: Path):
    png = tmp_path / "arena.png"
    common = ["--game", "connect4", "--agents", AGENTS, "--games", "6", "--seed", "11", "--json"]
    two = run(*common, "--workers", "2", "--plot", str(png))
    one = run(*common, "--workers", "1")
    assert two.returncode == 0, two.stderr
    assert one.returncode == 0, one.stderr
    data, data1 = json.loads(two.stdout), json.loads(one.stdout)

    assert data["game"] == "connect4" and data["games_per_pairing"] == 6 and data["seed"] == 11
    assert data["agents"] == AGENTS.split(",")
    assert len(data["pairs"]) == 3
    for pair in data["pairs"]:
        assert pair["a_wins"] + pair["draws"] + pair["b_wins"] == 6
        assert pair["a_score"] == pytest.approx((pair["a_wins"] + 0.5 * pair["draws"]) / 6, 1e-3)
    ratings = data["ratings"]
    assert set(ratings) == set(data["agents"])
    ordinals = [r["ordinal"] for r in ratings.values()]
    assert ordinals == sorted(ordinals, reverse=True)
    for r in ratings.values():
        assert r["ordinal"] == pytest.approx(r["mu"] - 3 * r["sigma"], abs=1e-3)
    for t in data["move_time"].values():
        assert 0 <= t["mean"] <= t["max"] and t["p95"] <= t["max"]
    # minimax beats random, which a depth-2 search always should
    assert data["pairs"][1]["b_wins"] >= 5

    # the same seed gives the same tournament on any number of workers (times aside)
    data.pop("move_time"), data1.pop("move_time")
    assert data == data1

    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
    # It says where the picture went (on stderr: with --json, stdout is the JSON alone).
    assert f"wrote the plot to {png}" in two.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "random,nosuchagent"], "unknown agent"),
        (["--agents", "random"], "two or more"),
        (["--agents", "random,,onestep"], "two or more"),
        (["--agents", "random,onestep", "--games", "0"], "--games"),
        (["--agents", "random,onestep", "--workers", "0"], "--workers"),
        (["--agents", "random,minimax:depht=2"], "no parameter"),
        (["--agents", "random,onestep", "--plot", "table.gif"], "give a name ending in .png"),
        (["--agents", "random,onestep", "--plot", "nowhere/t.png"], "does not exist"),
        (["--agents", "random,onestep", "--save-json", "nowhere/t.json"], "does not exist"),
    ],
)
def test_bad_input_is_an_error(args, message, capsys):
    code = main(["arena", "--game", "connect4", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error:") and message in err


def test_the_report_says_where_the_files_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png, saved = tmp_path / "table.png", tmp_path / "results.json"
    argv = ["arena", "--game", "connect4", "--agents", "random,onestep", "--games", "2"]
    argv += ["--seed", "1", "--workers", "1", "--plot", str(png), "--save-json", str(saved)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"wrote the plot to {png}" in out and png.exists()
    assert f"wrote the JSON results to {saved}" in out and json.loads(saved.read_text())
