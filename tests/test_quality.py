"""The repo's promises about style and shape: ruff (lint and format), mypy (strict everywhere) and
the layers (import-linter's contracts in pyproject.toml)."""

from __future__ import annotations

import ast
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
    packages = ("engine", "tools", "db", "lobby", "cogs")
    proc = run("mypy", *packages, "bot.py", "console.py", "faults.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_hold() -> None:
    """Front ends over the lobby over the engine and the store, and no import cycle."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_the_console_goes_through_the_lobby() -> None:
    """import-linter checks packages only: the console module's imports are checked here."""
    tree = ast.parse((ROOT / "console.py").read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {m for m in names if m.split(".")[0] in ("db", "aiosqlite", "discord", "cogs")}
