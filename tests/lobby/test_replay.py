"""Replays: a finished match as an animated GIF (a frame per move, the result on the last) and
a PNG of its end, from the lobby, the console's /replay and Discord's /replay."""

from __future__ import annotations

import io
import random
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from engine.games import new_game
from lobby.core import Lobby, Person
from lobby.errors import BadRequest, MatchNotFound
from tests.boardbot import ALICE, callbacks
from tests.console.test_console import run
from tests.machine import scaled
from tools.pictures import Replay, final_png, replay_gif

ANN, BEN = Person("local", "ann", "ann"), Person("local", "ben", "ben")


def random_game(game: str, seed: int) -> tuple[str, ...]:
    rng, state, moves = random.Random(seed), new_game(game), []
    while not state.is_over():
        move = rng.choice(state.legal_moves())
        moves.append(state.move_to_str(move))
        state = state.play(move)
    return tuple(moves)


@pytest.mark.parametrize("game", ["othello", "connect4"])
def test_a_whole_game_is_small_fast_and_has_a_frame_per_move(game: str) -> None:
    moves = random_game(game, 3)
    replay = Replay(1, game, None, ("Ann", "Bot (expert)"), moves, "Ann wins (no moves left)")
    t0 = time.perf_counter()
    gif = replay_gif(replay)
    seconds = time.perf_counter() - t0
    assert len(gif) < 1_000_000 and seconds < scaled(2.0), (len(gif), seconds)  # Discord: 10 MB
    image = Image.open(io.BytesIO(gif))
    assert image.format == "GIF" and image.n_frames == len(moves) + 1  # the start, then each
    png = Image.open(io.BytesIO(final_png(replay)))
    assert png.format == "PNG" and png.size == image.size


def test_a_60_move_othello_game_stays_under_a_megabyte() -> None:
    for seed in range(20):
        moves = random_game("othello", seed)
        if len(moves) >= 60:
            break
    gif = replay_gif(Replay(1, "othello", None, ("a" * 40, "b" * 40), moves, "Draw (x)"))
    assert len(moves) >= 60 and len(gif) < 1_000_000


async def finished(lobby: Lobby) -> int:
    snap = await lobby.start_pvp(ANN, BEN, "connect4")
    for col in "1212121":  # ann wins in column 1
        snap = await lobby.play(snap.id, ANN if snap.state.to_move() == 0 else BEN, col)
    assert not snap.live
    return snap.id


async def test_the_lobby_draws_a_finished_match_and_refuses_others(lobby: Lobby) -> None:
    match_id = await finished(lobby)
    files = await lobby.replay(None, ANN)  # the last finished match of ann
    assert files.replay.match_id == match_id and files.replay.moves == tuple("1212121")
    assert files.replay.result == "ann wins (four in a row)"
    assert Image.open(io.BytesIO(files.gif)).n_frames == 8
    live = await lobby.start_pvp(ANN, BEN, "othello")
    with pytest.raises(BadRequest, match="still being played"):
        await lobby.replay(live.id, ANN)
    with pytest.raises(MatchNotFound):
        await lobby.replay(10**12, ANN)
    with pytest.raises(BadRequest, match="no finished match"):
        await lobby.replay(None, Person("local", "new", "new"))
    assert await lobby.store.players.find_local("new") is None  # asking creates no player


async def test_the_console_writes_the_files(
    lobby: Lobby, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    match_id = await finished(lobby)
    text = await run(
        lobby, f"/replay\n/replay match:{match_id} dir:nowhere\n/replay match:x\n", "ann"
    )
    assert f"Match #{match_id}: wrote replay-{match_id}.gif (" in text
    assert Image.open(tmp_path / f"replay-{match_id}.gif").n_frames == 8
    assert Image.open(tmp_path / f"replay-{match_id}.png").format == "PNG"
    assert "error: 'nowhere' is not a folder" in text
    assert "error: 'x' is not a match id (see /history)" in text


async def test_discord_replay_attaches_the_gif_and_the_png(env: Any) -> None:
    _bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash("resign", {}, user=ALICE)
    [cb] = callbacks(await h.slash("replay", {}, user=ALICE))
    assert cb.callback_type == 4 and "wins (resignation)" in cb.message["content"]
    names = sorted(cb.files)
    assert [n.split("-")[0] for n in names] == ["final", "replay"]
    gif = next(data for name, data in cb.files.items() if name.endswith(".gif"))
    assert Image.open(io.BytesIO(gif)).format == "GIF"
    [cb] = callbacks(await h.slash("replay", {"match": 999}, user=ALICE))
    assert cb.ephemeral and "there is no match #999" in cb.message["content"]


def test_the_replay_command_refuses_a_wrong_suffix_and_an_existing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    argv = ["replay", "--game", "connect4", "--moves", "1212121"]
    for option, name, message in (
        ("--gif", "x.png", "--gif writes a GIF file: give a name ending in .gif, not"),
        ("--png", "x.gif", "--png writes a PNG file: give a name ending in .png, not"),
        ("--gif", "nowhere/x.gif", "does not exist"),
    ):
        assert main([*argv, option, str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []
    gif, png = tmp_path / "r.gif", tmp_path / "r.png"
    assert main([*argv, "--gif", str(gif), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert f"wrote the animated replay to {gif}" in out
    assert f"wrote the final position to {png}" in out
    # An existing file is kept unless --force.
    png.write_bytes(b"mine")
    assert main([*argv, "--png", str(png)]) == 2
    assert "exists: add --force" in capsys.readouterr().err and png.read_bytes() == b"mine"
    assert main([*argv, "--png", str(png), "--force"]) == 0
    assert Image.open(png).format == "PNG"
