"""Rating charts: the rating history the store keeps, drawn as a PNG for /stats (Discord
attaches it, the console writes it with chart:FILE)."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from lobby.charts import rating_chart
from lobby.core import Lobby, Person
from lobby.models import RatingPoint
from tests.boardbot import ALICE, callbacks
from tests.console.test_console import run
from tests.machine import scaled

ANN, BEN = Person("local", "ann", "ann"), Person("local", "ben", "ben")


def test_a_chart_is_a_small_png_drawn_fast() -> None:
    points = [RatingPoint("connect4", g, 25 + g / 3, 8 - g / 20, g, 0.0) for g in range(1, 101)]
    points += [RatingPoint("othello", 200 + g, 22.0, 7.0, g, 0.0) for g in range(1, 3)]
    t0 = time.perf_counter()
    png = rating_chart("Ann", points)
    assert time.perf_counter() - t0 < scaled(0.5) and len(png) < 100_000
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size == (560, 300)
    for few in ([], points[:1]):  # nothing yet, or a single game: still a picture
        assert Image.open(io.BytesIO(rating_chart("Ann", few))).format == "PNG"


async def play_rated(lobby: Lobby, games: int) -> None:
    for _ in range(games):
        snap = await lobby.start_pvp(ANN, BEN, "connect4")
        for col in "1212121":
            snap = await lobby.play(snap.id, ANN if snap.state.to_move() == 0 else BEN, col)
        assert snap.match.rated and not snap.live


async def test_the_lobby_charts_a_players_rated_games(lobby: Lobby) -> None:
    ann = await lobby.player_for(ANN)
    assert await lobby.rating_chart(ann) is None
    await play_rated(lobby, 3)
    points = await lobby.store.ratings.history(ann.id)
    assert [p.games for p in points] == [1, 2, 3]
    assert points[0].ordinal < points[-1].ordinal  # ann won them all
    chart = await lobby.rating_chart(ann)
    assert chart is not None and Image.open(io.BytesIO(chart)).format == "PNG"


async def test_the_console_writes_the_chart_when_asked(
    lobby: Lobby, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = await run(lobby, "/stats chart:before.png\n", "ann")
    assert "No chart: ann has no rated game yet." in text
    await play_rated(lobby, 2)
    text = await run(lobby, "/stats\n/stats chart:ann.png\n/stats chart:nowhere/x.png\n", "ann")
    assert "Rating chart: ann.png (" in text and text.count("Rating chart:") == 1
    assert Image.open(tmp_path / "ann.png").format == "PNG"
    assert "error: cannot write nowhere/x.png" in text
    assert not (tmp_path / "before.png").exists()


async def test_discord_stats_attaches_the_chart_after_a_rated_game(env: Any) -> None:
    _bot, h = env
    [cb] = callbacks(await h.slash("stats", {}, user=ALICE))
    assert not cb.files  # no rated game: the text only
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash("resign", {}, user=ALICE)
    [cb] = callbacks(await h.slash("stats", {}, user=ALICE))
    assert list(cb.files) == ["rating.png"]
    assert cb.message["embeds"][0]["image"]["url"] == "attachment://rating.png"
    assert Image.open(io.BytesIO(cb.files["rating.png"])).format == "PNG"
