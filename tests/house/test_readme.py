"""The README: its console example runs exactly as written, its set-up commands are CI's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.botrun import ROOT, run_bot


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
    proc = run_bot(tmp_path / "readme.db", script, tmp_path, timeout=180)
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
