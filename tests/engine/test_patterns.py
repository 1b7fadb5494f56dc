"""The Othello pattern evaluation: feature extraction and the fast evaluation kernel against slow
references, the same value for a position and its 8 mirror images, the weights file checked on
loading, and the fit."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from numba import njit

from engine.agents.othello import pattern_fit as pf
from engine.agents.othello import patterns as pt
from engine.games import new_game
from engine.games.othello import OthelloState
from engine.games.othkernels import legal_mask
from tests.reference.othello_patterns_reference import slow_values
from tools import patternfit


def random_positions(n: int, seed: int) -> list[OthelloState]:
    rng, out = random.Random(seed), []
    while len(out) < n:
        state = new_game("othello")
        for _ in range(rng.randrange(0, 58)):
            if state.is_over():
                break
            state = state.play(rng.choice(state.legal_moves()))
        if not state.is_over():
            assert isinstance(state, OthelloState)
            out.append(state)
    return out


def image(board: int, g: int) -> int:
    out = 0
    for sq in range(64):
        if board >> sq & 1:
            out |= 1 << pt._symmetries(sq)[g]
    return out


def slow_index(me: int, opp: int, squares: tuple[int, ...]) -> int:
    idx = 0
    for sq in squares:
        idx = idx * 3 + (1 if me >> sq & 1 else 2 if opp >> sq & 1 else 0)
    return idx


def test_features_match_a_slow_reference() -> None:
    out = np.zeros(len(pt.INSTANCES), dtype=np.int64)
    for state in random_positions(40, 1):
        mob = pt.features(
            np.uint64(state.me), np.uint64(state.opp), pt.INST_SQ, pt.INST_LEN, pt.INST_OFF, out
        )
        for i, (name, squares) in enumerate(pt.INSTANCES):
            offset = pt.OFFSETS[pt.NAMES.index(name)]
            assert out[i] == offset + slow_index(state.me, state.opp, squares)
        theirs = OthelloState(state.black, state.white, 1 - state.side, state.ply)
        assert mob == bin(state.legal_mask()).count("1") - bin(theirs.legal_mask()).count("1")


@njit(cache=False)  # numba's cache would not see a change in patterns.py
def fast_values(
    me: npt.NDArray[np.uint64], opp: npt.NDArray[np.uint64], w: npt.NDArray[np.float32]
) -> npt.NDArray[np.int64]:
    out = np.empty(me.shape[0], dtype=np.int64)
    for i in range(me.shape[0]):
        out[i] = pt.pattern_value(me[i], opp[i], w)
    return out


def boards_to_check() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Positions from random games at every stage, boards of independently random squares
    (any mix of discs, games or not), and near-empty and near-full boards; each in its 8
    mirror images."""
    pairs = [(s.me, s.opp) for s in random_positions(1500, 11)]
    rng = np.random.default_rng(12)
    for fill in (0.05, 0.3, 0.6, 0.9, 1.0):
        for _ in range(300):
            cells = rng.choice(3, size=64, p=[1 - fill, fill / 2, fill / 2])
            pairs.append(
                (
                    sum(1 << sq for sq in range(64) if cells[sq] == 1),
                    sum(1 << sq for sq in range(64) if cells[sq] == 2),
                )
            )
    images = [(image(me, g), image(opp, g)) for me, opp in pairs for g in range(8)]
    return (
        np.array([m for m, _ in images], dtype=np.uint64),
        np.array([o for _, o in images], dtype=np.uint64),
    )


def test_the_fast_evaluation_matches_the_straightforward_one() -> None:
    """Equal values, with the shipped weights and with random ones (every table entry its own
    value, so a square read into the wrong digit or a wrong phase changes the value; `wide`
    spans nine decades, as a sum that rounds differently would need)."""
    me, opp = boards_to_check()
    rng = np.random.default_rng(4)
    raw = rng.normal(0, 3, size=(pt.PHASES, pt.WEIGHTS)).astype(np.float32)
    wide = (raw * 10.0 ** rng.integers(-6, 3, size=raw.shape)).astype(np.float32)
    for w in (pt.load(), raw, wide):
        fast, slow = fast_values(me, opp, w), slow_values(me, opp, w)
        assert np.array_equal(fast, slow), np.flatnonzero(fast != slow)[:5]
    assert len(set(fast_values(me, opp, raw).tolist())) > len(me) // 10  # no constant
    state = random_positions(1, 13)[0]  # and the Python entry point
    one = np.array([state.me], np.uint64), np.array([state.opp], np.uint64)
    assert pt.evaluate(state.me, state.opp) == slow_values(*one, pt.load())[0]


def test_mobility_counts_the_legal_moves() -> None:
    me, opp = boards_to_check()
    for m, o in zip(me[::7], opp[::7], strict=True):
        assert pt.mobility(m, o) == bin(int(legal_mask(m, o))).count("1")


def test_instances_cover_the_patterns_in_every_position() -> None:
    counts = {name: sum(1 for n, _ in pt.INSTANCES if n == name) for name in pt.NAMES}
    assert counts["corner3x3"] == 4 and counts["corner2x5"] == 8 and counts["edge2x"] == 4
    assert counts["diag8"] == 2 and counts["row2"] == 4
    assert len(pt.INSTANCES) == 46 and pt.TABLE == 167_265


def test_a_position_and_its_mirror_images_evaluate_alike() -> None:
    rng = np.random.default_rng(3)
    w = rng.normal(0, 5, size=(pt.PHASES, pt.WEIGHTS)).astype(np.float32)
    w[:, : pt.TABLE] = w[:, pt.CANONICAL]  # weights as a fit leaves them
    for state in random_positions(30, 2):
        values = {pt.evaluate(image(state.me, g), image(state.opp, g), w) for g in range(8)}
        assert len(values) == 1, values
    # Without the shared weights of self-symmetric patterns, mirror images would differ.
    raw = rng.normal(0, 5, size=(pt.PHASES, pt.WEIGHTS)).astype(np.float32)
    state = random_positions(1, 5)[0]
    assert len({pt.evaluate(image(state.me, g), image(state.opp, g), raw) for g in range(8)}) > 1


def test_weights_file_is_checked(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    np.savez_compressed(bad, weights=np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        pt.load(bad)
    with pytest.raises(ValueError, match="cannot read"):
        pt.load(tmp_path / "missing.npz")
    shipped = pt.load()
    assert shipped.shape == (pt.PHASES, pt.WEIGHTS) and np.isfinite(shipped).all()
    assert pt.DATA.stat().st_size < 8_000_000


def test_the_fit_recovers_a_linear_rule() -> None:
    """Labels made by known weights on random positions: the fit predicts them closely."""
    states = random_positions(1500, 7)
    rng = np.random.default_rng(1)
    truth = np.zeros(pt.WEIGHTS)
    truth[: pt.TABLE] = rng.normal(0, 1, size=pt.TABLE)[pt.CANONICAL]
    truth[pt.MOBILITY], truth[pt.BIAS] = 1.5, 2.0
    me = np.array([s.me for s in states], dtype=np.uint64)
    opp = np.array([s.opp for s in states], dtype=np.uint64)
    idx, mob = pf._all_features(me, opp, pt.INST_SQ, pt.INST_LEN, pt.INST_OFF)
    y = truth[idx].sum(axis=1) + mob * truth[pt.MOBILITY] + truth[pt.BIAS]
    w = pf.fit_phase(pt.CANONICAL[idx].astype(np.int32), mob, y, ridge=1e-3, iterations=400)
    pred = pf._predict(w, pt.CANONICAL[idx].astype(np.int32), mob)
    assert np.sqrt(np.mean((pred - y) ** 2)) < 0.05 * np.std(y)


def test_a_labelled_game_is_exact_at_the_end() -> None:
    me, opp, label = pf.play_game(11)
    assert len(me) == len(opp) == len(label) >= 50
    # The last position's label is its exact final disc difference for the side to move.
    from engine.agents.othello.search import OthelloSearch

    search = OthelloSearch(tt_bits=16)
    search.reset(None, None)
    score, _ = search.solve(int(me[-1]), int(opp[-1]))
    assert label[-1] == score
    assert np.array_equal(pf.play_game(11)[2], label)  # the same seed, the same game


def test_a_phase_with_nothing_held_out_has_no_error_rather_than_a_perfect_one() -> None:
    me, opp, label = pf.play_game(11)
    lines: list[str] = []
    _, errors = pf.fit(me, opp, label, np.zeros(len(me), dtype=bool), lines.append)
    assert len(errors) == pt.PHASES and all(np.isnan(e) for e in errors)
    assert lines and all("no held-out position to measure it on" in line for line in lines)
    assert not any("0.0 discs" in line for line in lines)


# -- the othello-eval command (a fake build: these tests check the paths, not the fit) ------------


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[Path]]:
    """(user data folder, a stand-in for the shipped weights fitted on 5 games, the `out` of
    every build run); the fake build writes weights fitted on as many games as asked."""
    from tools import builds

    data, shipped = tmp_path / "user-data", tmp_path / "package" / "othello_patterns.npz"
    shipped.parent.mkdir()
    np.savez_compressed(shipped, weights=np.zeros(3, dtype=np.float32), games=np.int64(5))
    monkeypatch.setattr(builds, "user_data_dir", lambda: data)
    monkeypatch.setattr(pt, "DATA", shipped)
    outs: list[Path] = []

    def fake_build(out: Path, games: int, workers: int = 1) -> list[float]:
        outs.append(out)
        if out.resolve().is_relative_to(Path(pt.__file__).resolve().parent.parent):
            return [1.0]  # never write into the package, even when the command is wrong
        out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(out, weights=np.ones(30, dtype=np.float32), games=np.int64(games))
        return [2.5, float("nan")]

    monkeypatch.setattr(patternfit, "build", fake_build)
    return data, shipped, outs


def test_othello_eval_writes_into_the_user_data_folder_and_replaces_only_when_told(
    places: tuple[Path, Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    data, shipped, outs = places
    before = shipped.read_bytes()
    assert main(["othello-eval", "--games", "12"]) == 0
    built = data / "othello_patterns.npz"
    assert outs == [built] and shipped.read_bytes() == before
    out = capsys.readouterr().out
    assert f"wrote the weights to {built}" in out and "(discs) 2.5 n/a" in out
    assert main(["othello-eval", "--games", "12", "--out", str(shipped)]) == 2
    assert "is the shipped Othello weights" in capsys.readouterr().err
    assert len(outs) == 1 and shipped.read_bytes() == before
    old_size = len(before)
    assert main(["othello-eval", "--games", "20", "--replace-shipped"]) == 0
    assert shipped.read_bytes() == built.read_bytes()
    assert (
        f"replaced the shipped Othello weights {shipped}: was fitted on 5 games, {old_size} "
        f"bytes, now fitted on 20 games, {built.stat().st_size} bytes"
    ) in capsys.readouterr().out


def test_othello_eval_refuses_too_few_games_for_a_held_out_split(
    places: tuple[Path, Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    _, _, outs = places
    for games in ("4", "9"):
        assert main(["othello-eval", "--games", games, "--out", str(tmp_path / "w.npz")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--games must be at least {patternfit.MIN_GAMES}" in err
    assert outs == []
    games = str(patternfit.MIN_GAMES)
    enough = ["othello-eval", "--games", games, "--out", str(tmp_path / "w.npz")]
    assert main(enough) == 0
    assert outs == [tmp_path / "w.npz"]
