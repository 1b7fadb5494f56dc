"""The README: its console example runs exactly as written, its set-up commands are CI's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.machine import scaled

ROOT = Path(__file__).resolve().parents[2]


def console_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Trying it in the console") :]
    match = re.search(r"```\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


@pytest.mark.slow
def test_the_readme_console_example_runs_as_written(tmp_path: Path) -> None:
    script = console_example()
    assert script.strip().endswith("/quit")
    env = {
        **os.environ,
        "BOARDBOT_DB": str(tmp_path / "readme.db"),
        "BOARDBOT_WORKERS": "1",
        "DISCORD_TOKEN": "",
        "BOARDBOT_FAULT": "",
        "USER": "you",
        "LOGNAME": "you",
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bot.py")],
        input=script,
        capture_output=True,
        text=True,
        timeout=scaled(180),
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("error:")]
    assert errors == [] and "Traceback" not in proc.stdout + proc.stderr
    for command in [line for line in script.splitlines() if line.startswith("/")]:
        assert f"> {command}" in proc.stdout  # every line was read and answered
    assert "Your moves now go to match #1." in proc.stdout
    # /watch shows the bot match to its end, so the /quit after it stops nothing.
    watched = proc.stdout.split("> /watch\n", 1)[1].split("> /leaderboard", 1)[0]
    assert re.search(r"^(?:\S+ .+ wins \(.+\)\.|Draw \(.+\)\.)$", watched, re.M), watched
    assert "(stopped)" not in proc.stdout
    assert "Connect Four leaderboard" in proc.stdout or "No rated Connect Four" in proc.stdout


def test_the_set_up_commands_make_their_own_environment() -> None:
    """Two commands, each making a virtual environment (a system Python may refuse pip:
    PEP 668), and CI runs the second one verbatim."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Set-up") : text.index("## Trying it in the console")]
    run, test = re.findall(r"```\n(.*?)\n```", section, re.S)
    for command in (run, test):
        assert command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install")
    assert run.endswith(".venv/bin/python bot.py")
    assert test.endswith(".venv/bin/python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == test
