"""The repo's promises about style: ruff (lint and format) and mypy (strict on engine/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_lint_is_clean() -> None:
    proc = run("ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = run("ruff", "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = run(
        "mypy", "engine", "db", "lobby", "cogs", "bot.py", "console.py", "lineedit.py", "faults.py"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
