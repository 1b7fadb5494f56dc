"""matplotlib is an optional extra: without it, `--plot` fails at once with one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools.cli import main


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed


def test_arena_plot_without_matplotlib_says_what_to_install(
    no_matplotlib: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "arena.png"
    argv = ["arena", "--game", "connect4", "--agents", "random,random", "--games", "2"]
    assert main([*argv, "--workers", "1", "--plot", str(png)]) == 2
    err = capsys.readouterr().err
    assert err == "error: --plot needs matplotlib, an optional extra: pip install -e '.[plots]'\n"
    assert not png.exists()


def test_train_plot_without_matplotlib_says_what_to_install(
    no_matplotlib: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, png = tmp_path / "train.db", tmp_path / "curve.png"
    argv = ["train", "--game", "connect4", "--agent", "trainer", "--games", "10"]
    assert main([*argv, "--db", str(db), "--plot", str(png)]) == 2
    err = capsys.readouterr().err
    assert err == "error: --plot needs matplotlib, an optional extra: pip install -e '.[plots]'\n"
    assert not db.exists()
