"""Analysis of a finished game: verdicts proven by the solvers, checked against Pons' test
positions (their scores are the game-theoretic values), unsure where nothing was proven, the
JSON the engine's command line prints, and the words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.agents.connect4 import solver
from engine.agents.connect4.score import from_score
from engine.analysis import VERDICTS, Analysis, analyse, split_moves, summary, table
from engine.games.connect4 import Connect4State
from tests.machine import scaled

DATA = Path(__file__).parents[1] / "data"
ROOT = Path(__file__).parents[2]


def pons(name: str) -> list[tuple[str, int]]:
    out = []
    for line in (DATA / name).read_text().split("\n"):
        if line.strip():
            moves, score = line.split()
            out.append((moves, int(score)))
    return out


def outcome(score: int) -> str:
    return "win" if score > 0 else "loss" if score < 0 else "draw"


def throwaway(moves: str) -> str | None:
    """A column after which the opponent wins at once (a blunder by the rules alone), if any
    that does not win on the spot itself."""
    state = Connect4State.from_moves(moves)
    for col in state.legal_moves():
        if state.can_win_now(col):
            continue
        child = state.play(col)
        if child.winning_moves():
            return str(col + 1)
    return None


def test_values_match_pons_and_a_thrown_win_is_a_blunder() -> None:
    """Won test positions where a move lets the opponent win at once: the analysis says the
    position was won (as Pons' score does), the move a blunder, and names the best move."""
    built = 0
    for moves, score in pons("pons_end_easy.txt"):
        bad = throwaway(moves)
        if bad is None or score <= 0:
            continue
        state = Connect4State.from_moves(moves)
        a = analyse("connect4", [*moves, bad], budget=4)
        last = a.moves[-1]
        assert last.outcome_before == "win" == outcome(score)
        assert (last.verdict, last.outcome_after, last.exact) == ("blunder", "loss", True)
        assert last.best is not None and last.best != bad
        # The best move's distance is Pons' score read as own moves.
        assert last.best_in == from_score(score, state.ply, 42)[1]
        assert a.turning_point == len(moves)
        assert f"move {len(moves) + 1} (column {bad}) threw away the win" in (a.turning_text or "")
        side = a.players[last.player]
        assert side.blunders >= 1 and side.accuracy is not None and side.accuracy < 1
        built += 1
        if built == 3:  # enough: each takes its whole budget on the early positions
            break
    assert built >= 3


def test_every_position_value_agrees_with_pons() -> None:
    """Each test position's value, as the analysis of its own game reports it for the last
    move (the value after it is the test position's, for the other side)."""
    checked = 0
    for moves, score in pons("pons_end_easy.txt")[:12] + pons("pons_middle_easy.txt")[:12]:
        a = analyse("connect4", list(moves), budget=0.5)
        last = a.moves[-1]
        if last.outcome_after is None:
            continue  # unsure is allowed, a wrong value is not
        assert last.outcome_after == outcome(-score), moves
        checked += 1
    assert checked >= 20


def test_keeping_the_win_slower_is_good_and_the_fastest_is_best() -> None:
    """In won test positions: the solver's fastest win is `best`, a slower win `good`."""
    found = 0
    for moves, score in pons("pons_end_easy.txt") + pons("pons_middle_easy.txt"):
        state = Connect4State.from_moves(moves)
        if score <= 0 or state.winning_moves():
            continue
        slower = [
            col
            for col in state.legal_moves()
            if 0 < -solver.solve(state.play(col)) < score  # still a win, a slower one
        ]
        if not slower:
            continue
        _, fastest = solver.best_moves(state)
        best = analyse("connect4", [*moves, str(fastest[0] + 1)], budget=1).moves[-1]
        assert (best.verdict, best.outcome_before, best.outcome_after) == ("best", "win", "win")
        assert best.best_in == from_score(score, state.ply, 42)[1]
        good = analyse("connect4", [*moves, str(slower[0] + 1)], budget=1).moves[-1]
        assert (good.verdict, good.outcome_after) == ("good", "win")
        found += 1
        if found == 3:
            return
    pytest.fail(f"only {found} positions with a slower win")


def test_unsure_when_the_budget_is_too_small() -> None:
    a = analyse("connect4", list("4455"), budget=0.01)
    # The book knows the first positions' outcomes; later ones are not proven in 10 ms.
    assert all(r.verdict in VERDICTS for r in a.moves)
    assert all(not r.exact for r in a.moves if r.verdict == "unsure")
    assert a.seconds < scaled(1.0)


def test_connect4_variants_without_a_solver_are_unsure() -> None:
    a = analyse("connect4", list("4455"), variant="7x6k3", budget=1)
    assert [r.verdict for r in a.moves][:3] == ["unsure"] * 3


def test_json_round_trip_and_table() -> None:
    a = analyse("connect4", list("444333"), budget=2)
    data = json.loads(json.dumps(a.to_json()))
    again = Analysis.from_json(data)
    assert again.to_json() == a.to_json()
    lines = table(a, ("Ann", "Bot"))
    assert len(lines) == 1 + 6 and lines[1].split()[:3] == ["1", "Ann", "4"]
    assert any(line.startswith("Ann: accuracy") for line in summary(a, ("Ann", "Bot")))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.integers() | st.text() | st.none(), max_size=6))
def test_a_damaged_stored_analysis_is_refused_in_one_line(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not an analysis"):
        Analysis.from_json(data)


def test_othello_exact_end_and_search_before() -> None:
    import random

    from engine.games import new_game

    rng, state, moves = random.Random(4), new_game("othello"), []
    while not state.is_over():
        move = rng.choice(state.legal_moves())
        moves.append(state.move_to_str(move))
        state = state.play(move)
    a = analyse("othello", moves, budget=4)
    assert len(a.moves) == len(moves)
    exact = [r for r in a.moves if r.exact and r.loss is not None]
    assert exact and exact[-1].ply == len(moves) - 1  # the end is proven
    assert all(r.outcome_before in ("win", "draw", "loss") for r in exact)
    for r in exact:  # a proven disc loss agrees with the verdict
        assert (r.loss == 0) == (r.verdict == "best") or r.verdict in ("miss", "blunder")
    assert any(not r.exact and r.verdict != "unsure" for r in a.moves[:20])  # search estimates


def test_split_moves() -> None:
    assert split_moves("connect4", "4453") == ["4", "4", "5", "3"]
    assert split_moves("othello", "f5d6passc3") == ["f5", "d6", "pass", "c3"]
    assert split_moves("othello", "f5, d6 c3") == ["f5", "d6", "c3"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=scaled(120),
    )


def test_engine_cli_json_and_errors(tmp_path: Path) -> None:
    moves, score = pons("pons_end_easy.txt")[1]
    done = run_cli("analyse", "--game", "connect4", "--moves", moves, "--budget", "3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [m["ply"] for m in data["moves"]] == list(range(len(moves)))
    last = data["moves"][-1]
    assert set(last) >= {"ply", "move", "verdict", "outcome_before", "outcome_after"}
    assert last["outcome_after"] in (None, outcome(-score))
    assert len(data["players"]) == 2 and {"accuracy", "blunders", "misses"} <= set(
        data["players"][0]
    )
    bad = run_cli("analyse", "--game", "connect4", "--moves", "44x")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "move 3" in bad.stderr
    gif, png = tmp_path / "r.gif", tmp_path / "r.png"
    done = run_cli(
        "replay", "--game", "othello", "--moves", "f5d6c3", "--gif", str(gif), "--png", str(png)
    )
    assert done.returncode == 0, done.stderr
    assert gif.read_bytes()[:6] == b"GIF89a" and png.read_bytes()[:4] == b"\x89PNG"


def test_no_turning_point_is_claimed_across_an_unproven_change() -> None:
    """A proven blunder, then moves the solver did not finish, then an end that disagrees with
    the blunder's outcome: the outcome changed again unseen, so that blunder did not decide."""
    from engine.analysis import Review, _turning_point

    def review(ply: int, verdict: str, before: str | None, after: str | None) -> Review:
        return Review(ply, "4", ply % 2, verdict, verdict != "unsure", before, after, best="3")

    thrown = review(1, "blunder", "win", "loss")  # the second player hands the first a win
    reviews = [review(0, "best", "loss", "loss"), thrown]
    reviews += [review(p, "unsure", None, None) for p in range(2, 5)]
    reviews.append(review(5, "best", "win", "win"))  # ... and the second player wins
    ply, text = _turning_point("connect4", reviews)
    assert ply is None and text is not None and "changed again somewhere in moves 3-5" in text
    reviews[-1] = review(5, "best", "loss", "loss")  # the end agrees: the blunder decided
    ply, text = _turning_point("connect4", reviews)
    assert ply == 1 and text == "move 2 (column 4) threw away the win; column 3 kept it"


def test_an_othello_search_that_only_reaches_depth_one_leaves_the_move_unjudged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy host the search before the solver's zone may finish only 1 ply deep: the move
    played then has no search of its own (never one 0 deep), and stays unsure."""
    import random

    import engine.agents.othello.analysis as analysis
    from engine.agents.base import Budget
    from engine.games import new_game

    real = analysis.minimax_search

    def shallow(search: object, board: object, budget: Budget, empties: int) -> object:
        if budget.depth is not None and budget.depth > 1:
            budget = Budget(time=budget.time, depth=1)
        return real(search, board, budget, empties)  # type: ignore[arg-type]

    monkeypatch.setattr(analysis, "minimax_search", shallow)
    rng, state, moves = random.Random(4), new_game("othello"), []
    for _ in range(20):
        move = rng.choice(state.legal_moves())
        moves.append(state.move_to_str(move))
        state = state.play(move)
    a = analyse("othello", moves, budget=2)
    assert len(a.moves) == 20
