"""What an analysis says is true: the expected score of each move, estimates said to be "about"
and exact values "exact", no value on another scale, "unsure" only where the budget stopped the
solver (with the budget it had), and only the documented verdicts shown."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from engine.accuracy import game_accuracy, move_accuracy, weights
from engine.agents.othello.analysis import win_chance
from engine.analysis import (
    OUTCOME_CHANCE,
    VERDICTS,
    Analysis,
    analyse,
    summary,
    table,
    verdict_word,
)
from engine.games import new_game
from tests.machine import scaled

ROOT = Path(__file__).parents[2]


def random_othello(seed: int, plies: int = 200) -> list[str]:
    rng, state, moves = random.Random(seed), new_game("othello"), list[str]()
    while not state.is_over() and len(moves) < plies:
        move = rng.choice(state.legal_moves())
        moves.append(state.move_to_str(move))
        state = state.play(move)
    return moves


@pytest.fixture(scope="module")
def othello() -> Analysis:
    return analyse("othello", random_othello(4), budget=scaled(9))


def test_connect4_chances_are_the_exact_outcomes() -> None:
    a = analyse("connect4", list("4453"), budget=5)
    for r in a.moves:
        assert r.chance_before == OUTCOME_CHANCE.get(r.outcome_before or "", None)
        assert r.chance_after == OUTCOME_CHANCE.get(r.outcome_after or "", None)
    assert any(r.chance_before is not None for r in a.moves)


def test_othello_chances_follow_the_disc_values(othello: Analysis) -> None:
    valued = [r for r in othello.moves if r.value_best is not None]
    assert len(valued) >= len(othello.moves) - 2
    for r in valued:
        assert r.value_best is not None and r.value_played is not None
        assert r.chance_before == pytest.approx(win_chance(r.value_best), abs=1e-9)
        assert r.chance_after == pytest.approx(win_chance(r.value_played), abs=1e-9)
        assert r.loss == pytest.approx(max(0.0, r.value_best - r.value_played), abs=0.11)
        assert -64 <= r.value_played <= r.value_best + 0.05 <= 64.05  # discs, never points
    again = Analysis.from_json(json.loads(json.dumps(othello.to_json())))
    assert again.to_json() == othello.to_json()


def test_exact_values_say_exact_and_estimates_say_about(othello: Analysis) -> None:
    lines = table(othello, ("Ann", "Bob"))[1:]
    exact = estimate = 0
    for r, line in zip(othello.moves, lines, strict=True):
        if r.value_played is None:
            continue
        if r.exact:
            assert "exact" in line and "about" not in line, line
            exact += 1
        else:
            assert "about" in line and "exact" not in line, line
            estimate += 1
    assert exact and estimate
    words = " ".join(lines + summary(othello, ("Ann", "Bob")))
    assert "point" not in words.replace("Turning point", "")  # no value on a search's scale
    for number in re.findall(r"(-?\d+(?:\.\d+)?) discs", words):
        assert abs(float(number)) <= 64, words


def test_an_estimated_turning_point_says_about() -> None:
    """The random mover's game against the expert: its outcome changed before the solver's
    zone, so the turning point is an estimate, in discs."""
    from engine.analysis import split_moves

    a = analyse("othello", split_moves("othello", LOPSIDED[1][0]), budget=scaled(9))
    text = a.turning_text or ""
    assert " cost the most win chance: about " in text and " discs below square " in text
    assert 0 < float(text.split("about ")[1].split(" discs")[0]) <= 128
    assert a.turning_point is not None and not a.moves[a.turning_point].exact


def test_no_unsure_claim_when_the_budget_did_not_stop_the_solver() -> None:
    a = analyse("connect4", list("4453"), budget=1000)
    assert a.unsure == 0
    assert not any("unsure" in line for line in summary(a, ("Ann", "Bob")))
    b = analyse("othello", random_othello(4), budget=1000)
    assert b.unsure == 0 and b.seconds < 1000
    assert not any("unsure" in line or "ran out" in line for line in summary(b, ("A", "B")))


def test_unsure_words_say_why() -> None:
    """No solver for the board: said so, not blamed on time. A tiny budget: the time, with
    the budget the analysis had."""
    a = analyse("connect4", list("4455"), variant="7x6k3", budget=30)
    lines = summary(a, ("Ann", "Bob"))
    assert any("no solver plays this board" in line for line in lines)
    assert not any("ran out" in line or "s)" in line for line in lines), lines
    b = analyse("othello", random_othello(4), budget=0.05)
    timed = [r for r in b.moves if r.verdict == "unsure"]
    assert timed and all(r.why == "time" for r in timed)
    [line] = [line for line in summary(b, ("A", "B")) if "unsure" in line]
    assert line.startswith(f"{len(timed)} of {len(b.moves)} moves unsure") and "0.05 s" in line


def test_every_shown_verdict_is_documented(othello: Analysis) -> None:
    docs = (ROOT / "docs" / "games.md").read_text()
    section = docs[docs.index("## Analysis") :]
    for verdict in VERDICTS:
        assert f"| {verdict} |" in section, verdict
    analyses = [
        othello,
        analyse("connect4", list("4453"), budget=0.01),
        analyse("connect4", list("4455"), variant="7x6k3", budget=1),
        analyse("connect4", list("444333"), budget=2),
    ]
    for a in analyses:
        lines = table(a, ("Ann", "Bob"))
        column = lines[0].index("verdict")
        for r, line in zip(a.moves, lines[1:], strict=True):
            assert verdict_word(r) in VERDICTS
            assert line[column:].split()[0] in VERDICTS, line


def test_move_accuracy_follows_the_lost_chance() -> None:
    assert move_accuracy(0.6, 0.6) == 1.0 == move_accuracy(0.3, 0.9)
    assert move_accuracy(0.5, 0.4) == pytest.approx(0.646, abs=0.002)
    assert move_accuracy(1.0, 0.0) == 0.0
    drops = [move_accuracy(0.8, 0.8 - d / 100) for d in range(0, 80, 5)]
    assert drops == sorted(drops, reverse=True)


def test_a_game_accuracy_weighs_moves_where_the_chance_moved() -> None:
    # a decided stretch (the chance stays) weighs little against a volatile one
    w = weights([0.5, 0.9, 0.2, 0.8, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99])
    assert len(w) == 10 and max(w) == w[1] and w[-1] == 0.5
    assert game_accuracy([]) is None
    assert game_accuracy([(1.0, 3.0), (1.0, 0.5)]) == 1.0
    one_bad = game_accuracy([(1.0, 1.0)] * 9 + [(0.0, 1.0)])
    assert one_bad is not None and one_bad < 0.5  # the harmonic mean counts a 0% move a lot
    assert math.isclose(game_accuracy([(0.5, 1.0), (0.5, 2.0)]) or 0, 0.5)


def test_the_win_chance_curve() -> None:
    assert win_chance(0.0) == 0.5
    assert win_chance(5.0) == pytest.approx(0.73, abs=0.01)
    assert win_chance(-5.0) == pytest.approx(1 - win_chance(5.0))
    values = [win_chance(v) for v in range(-64, 65)]
    assert values == sorted(values) and 0 < values[0] < 0.001 and values[-1] > 0.999


def test_the_fit_finds_the_slope_that_made_the_results() -> None:
    from tools.winfit import MAX_SLOPE, by_ply, fit_slope

    rng = random.Random(5)
    data = []
    for _ in range(4000):
        v = rng.uniform(-30, 30)
        data.append((v, float(rng.random() < 1 / (1 + math.exp(-0.2 * v)))))
    assert fit_slope(data) == pytest.approx(0.2, abs=0.02)
    separable = [(v, float(v > 0)) for v, _ in data]  # the value foretells every result
    assert fit_slope(separable) == MAX_SLOPE
    bands = by_ply([(i % 61, v, y) for i, (v, y) in enumerate(data)])
    assert [row["plies"] for row in bands] == [[0, 12], [12, 24], [24, 36], [36, 48], [48, 61]]
    assert all(row["slope"] == pytest.approx(0.2, abs=0.05) for row in bands)


#: Games of the bot's players (two random opening plies, then 0.2 s a move at most), with the
#: final discs: the expert wiping out a random mover from either side, and a one-ply greedy
#: player wiping out a random mover in 13 moves.
LOPSIDED = [
    (
        "f5d6c3f4f3g3h3b2g4h4g5g6h5h2h1g2g1h6e2f2h7d1e1f1c1passf7g7e3e8f6passd3d2b4b3e6b5h8"
        "passc2passc4passa2b1a1passa3passa6b6c5passe7passa7b7c6d7a8b8a4passc7d8c8passa5passf8",
        (63, 0),
    ),
    (
        "f5f6d3f4g4e3d2c5d6c6g7e6b6f3g2f7g3h8g6h5h7h6e8g5h4h3g8f2h2h1f1f8passg1passe2e1e7pass"
        "d7d8c8passc7passb7b8a8passb4passc4b5b3b2c3passd1passb1",
        (0, 55),
    ),
    ("f5d6c3g5d7d3h5e6c2g4h3e3e2", (17, 0)),
]


@pytest.mark.parametrize(("moves", "discs"), LOPSIDED)
def test_the_loser_of_a_lopsided_game_has_low_accuracy(moves: str, discs: tuple[int, int]) -> None:
    """Keeping a lost game is no accuracy: the loser's moves lost win chance before the game
    was decided, and the moves after it are not judged."""
    from engine.analysis import split_moves

    a = analyse("othello", split_moves("othello", moves), budget=scaled(9))
    winner = 0 if discs[0] > discs[1] else 1
    won, lost = a.players[winner].accuracy, a.players[1 - winner].accuracy
    assert won is not None and lost is not None
    assert lost < 0.75 and lost < won, (won, lost)
    side = a.players[1 - winner]
    assert side.blunders + side.inaccuracies >= 1
    if len(a.moves) > 40:  # decided long before its end: the loser's last moves are not judged
        assert side.judged < sum(r.player != winner for r in a.moves)
