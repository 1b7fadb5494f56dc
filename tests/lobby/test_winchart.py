"""The win chance over an analysed match: its values from each move's expected score, the key
moments (where it swung most, with the better move), the graph as a PNG and its alt text, in
the lobby's report and the console's /analyse."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from engine.analysis import Analysis, Review
from lobby.charts import CHART_HEIGHT, WIDTH, win_chart
from lobby.core import Lobby, LobbyConfig, Person
from lobby.moments import MAX_ALT_TEXT, alt_text, key_moments, moment_lines, win_chances
from tests.console.test_console import replies, run
from tests.lobby.test_retry import GAME, played, warm_solvers

ANN, BEN = Person("local", "ann", "ann"), Person("local", "ben", "ben")


def move(ply: int, before: float | None, after: float | None, best: str | None = None) -> Review:
    return Review(
        ply, "3", ply % 2, "good", ply % 3 == 0, None, None, best=best,
        chance_before=before, chance_after=after,
    )  # fmt: skip


#: The first player's chance: 0.6 at the start, then after each move 0.7, 0.2 (the second
#: player's 0.8), unknown, 0.5 (from the next move's chance before), 0.9.
GAME_MOVES = [
    move(0, 0.6, 0.7),
    move(1, 0.3, 0.8, best="4"),  # the second player's chance goes from 0.3 to 0.8
    move(2, 0.2, None),
    move(3, 0.5, 0.5),
    move(4, 0.5, 0.9),
]


def test_the_first_players_chance_after_each_move_and_the_key_moments() -> None:
    a = Analysis("connect4", None, GAME_MOVES)
    assert win_chances(a) == pytest.approx([0.6, 0.7, 0.2, 0.5, 0.5, 0.9])
    assert win_chances(Analysis("connect4", None, [])) == []
    swings = [
        move(0, 1.0, 0.6),
        move(1, 1.0, 0.0, best="4"),
        move(2, 0.5, 0.45),  # 5%: not a key moment
        move(3, 0.9, 0.6),
        move(4, 1.0, 0.0),
        move(5, 1.0, 0.6),  # as costly as the first move, and later
    ]
    a = Analysis("connect4", None, swings)
    assert [r.ply for r in key_moments(a)] == [1, 4, 5]  # in the order played
    assert [r.ply for r in key_moments(a, limit=4)] == [0, 1, 4, 5]
    assert moment_lines(a, ("ann", "ben"))[0] == (
        "Move 2: ben played column 3, win chance 100% -> 0%; column 4 was better (a search's "
        "estimate)."
    )
    assert moment_lines(Analysis("connect4", None, [move(0, 0.5, 0.5)]), ("a", "b")) == [
        "No move swung the win chance by 10% or more."
    ]


def test_the_graph_is_a_small_png_and_its_alt_text_fits_discord() -> None:
    png = win_chart(("ann", "ben"), [0.6, 0.7, 0.2, None, 0.5, 0.9], [2])
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size == (WIDTH, CHART_HEIGHT) and len(png) < 50_000
    a = Analysis("othello", None, [move(i, 1.0, 0.0) for i in range(60)])
    text = alt_text(a, ("x" * 500, "y" * 500), 123456789, "Othello")
    assert len(text) == MAX_ALT_TEXT and text.endswith("…")
    short = alt_text(Analysis("connect4", None, GAME_MOVES), ("ann", "ben"), 7, "Connect Four")
    assert short == (
        "Graph of the win chance over the 5 moves of match #7 (Connect Four): ann's chance, 100% "
        "at the top, ben's at the bottom. It starts at 60% and ends at 90% for ann."
    )
    swung = alt_text(Analysis("connect4", None, [move(0, 0.9, 0.2)]), ("a", "b"), 7, "C")
    assert swung.endswith("for a. Biggest swings: move 1 by a, 90% to 20% for them.")


@pytest.fixture(autouse=True, scope="module")
def _solvers_warm() -> None:
    warm_solvers()


@pytest.fixture
def lobby_config() -> LobbyConfig:
    return LobbyConfig(seed=7, analysis_seconds=1.0)


async def test_the_report_and_the_console_give_the_graph(lobby: Lobby, tmp_path: Path) -> None:
    n = await played(lobby, ANN, BEN, GAME)
    report = await lobby.analyse(n, ANN)
    assert Image.open(io.BytesIO(report.chart)).format == "PNG"
    words = alt_text(report.analysis, report.replay.names, n, "Connect Four")
    assert words.startswith(
        "Graph of the win chance over the 10 moves of match #1 (Connect Four): ann's chance"
    )
    assert "ends at 0% for ann" in words  # ben won
    chart = tmp_path / "graph.png"
    text = await run(lobby, f"/analyse match:1 chart:{chart}\n/analyse chart:/no/such/x.png\n")
    said = replies(text)[f"/analyse match:1 chart:{chart}"]
    moments = said[said.index("Key moments:") + 1 :]
    assert moments[0].startswith("Move ") and "win chance 100% -> 0%" in moments[0]
    assert "Try your mistakes again: /retry match:1" in said
    assert said[-1].startswith(f"Win chance: {chart} (")
    assert chart.read_bytes() == report.chart
    assert replies(text)["/analyse chart:/no/such/x.png"][0] == "error: '/no/such' is not a folder"
