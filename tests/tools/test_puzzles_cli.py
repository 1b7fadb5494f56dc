"""`python -m tools puzzles`: it writes where it is told or into the user data folder, never
into the package unless told to, goes on where a run stopped, and reads stored matches."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from db import Finish, NewMove, Store
from engine.puzzles import pool
from engine.puzzles.verify import verify
from tests.stores import people
from tools import puzzles
from tools.cli import main


def _shipped_bytes() -> dict[str, bytes]:
    return {game: pool.path(game).read_bytes() for game in pool.GAMES}


def test_it_writes_into_the_user_data_folder_and_never_into_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(puzzles, "user_data_dir", lambda: tmp_path)
    before = _shipped_bytes()
    assert main(["puzzles", "--game", "othello", "--count", "2", "--workers", "1"]) == 0
    out = tmp_path / "puzzles-othello.txt"
    assert f"wrote 2 othello puzzles to {out}" in capsys.readouterr().out
    assert len(pool.read("othello", out)) == 2
    shipped = str(pool.path("othello"))
    args = ["puzzles", "--game", "othello", "--count", "2", "--out", shipped, "--workers", "1"]
    assert main(args) == 2
    assert "is the shipped pool" in capsys.readouterr().err
    assert _shipped_bytes() == before


def test_a_rerun_goes_on_from_the_file_and_its_log(tmp_path: Path) -> None:
    out = tmp_path / "c4.txt"
    args = ["puzzles", "--game", "connect4", "--out", str(out)]
    assert main([*args, "--count", "2", "--workers", "2"]) == 0  # a pool of two processes
    first = out.read_text().splitlines()
    assert main([*args, "--count", "4", "--workers", "1"]) == 0  # this process
    lines = out.read_text().splitlines()
    assert lines[: len(first)] == first  # kept as it was, the new ones appended
    found = pool.read("connect4", out)
    assert len(found) == 4 and len({p.id for p in found}) == 4
    assert all(verify(p) is None for p in found)
    records = puzzles.read_log(puzzles.log_path(out))
    seeds = [r["seed"] for r in records if "seed" in r]
    assert len(seeds) == len(set(seeds))  # no game played twice
    assert sum(1 for r in records if "run" in r) == 2
    assert main([*args, "--count", "3", "--workers", "1"]) == 0  # it holds more: nothing to do
    assert out.read_text().splitlines() == lines


def test_replace_shipped_copies_a_finished_pool_and_says_what_it_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "othello.txt").write_text(pool.path("othello").read_text())
    was = len(pool.read("othello", data / "othello.txt"))
    monkeypatch.setattr(pool, "DATA", data)
    out = tmp_path / "oth.txt"
    args = ["puzzles", "--game", "othello", "--count", "2", "--out", str(out), "--workers", "1"]
    assert main([*args, "--replace-shipped"]) == 0
    said = capsys.readouterr().out
    assert f"replaced the shipped othello puzzles {data / 'othello.txt'}: was {was}" in said
    assert (data / "othello.txt").read_text() == out.read_text()


async def _store_with_a_match(path: Path, moves: tuple[str, ...]) -> None:
    async with Store.open(path) as store:
        alice, bob, _ = await people(store)
        m = await store.matches.create("connect4", "pvp", alice.id, bob.id, variant="7x6k4")
        seats = (alice.id, bob.id)
        steps = [NewMove(text, seats[i % 2]) for i, text in enumerate(moves)]
        await store.matches.commit_step(m.id, 0, steps, finish=Finish("finished", "0", "connect"))


def test_from_db_reads_the_ended_matches_first(tmp_path: Path) -> None:
    p = pool.load_pool("connect4")[0]
    game = (*p.moves, *p.line)  # the puzzle's game, played to its end
    db = tmp_path / "bot.db"
    asyncio.run(_store_with_a_match(db, game))
    out = tmp_path / "c4.txt"
    args = ["puzzles", "--game", "connect4", "--out", str(out), "--from-db", str(db)]
    assert main([*args, "--count", "1", "--workers", "1"]) == 0
    first = next(r for r in puzzles.read_log(puzzles.log_path(out)) if "seed" in r)
    assert first["source"] == "db" and first["found"] >= 1
    (found,) = pool.read("connect4", out)
    assert game[: len(found.moves)] == found.moves


def test_a_puzzle_on_another_s_line_is_not_kept_twice() -> None:
    p = next(q for q in pool.load_pool("connect4") if q.plies >= 5)
    later = dataclasses.replace(  # the same puzzle after the answer and the best reply
        p, id="c4-later", moves=p.moves + p.line[:2], answer=p.line[2], plies=p.plies - 2,
        value=p.plies - 2, line=p.line[2:],
    )  # fmt: skip
    other = next(
        q
        for q in pool.load_pool("connect4")
        if q.plies not in (p.plies, later.plies) and not puzzles.on_line(q, p)
    )
    assert puzzles.on_line(p, later) and puzzles.on_line(later, p)
    assert puzzles.choose([p, later, other]) == [p, other]
    run = puzzles.Run("connect4", Path("unused.txt"), set(), 0, set())
    run.add(later)
    assert not run.fits(p) and not run.fits(later) and run.fits(other)
