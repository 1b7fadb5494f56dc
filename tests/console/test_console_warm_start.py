"""The console's prompt comes before the engine's modules are imported (numba and the agents
take a second of CPU, more on a busy machine): `python bot.py` in a pseudo-terminal whose
import of numba waits until the test lets it go. What is typed meanwhile is handled once the
console is up."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect

from tests.vt import Screen, pump, quit_cleanly

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60  # seconds: a limit for a console that never answers, not a speed to meet

#: Holds every import of numba (the bot's and its workers') until the file $NUMBA_GATE exists.
GATE = """
import os, sys, time
from importlib.abc import MetaPathFinder

class Gate(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numba":
            while not os.path.exists(os.environ["NUMBA_GATE"]):
                time.sleep(0.02)
        return None

sys.meta_path.insert(0, Gate())
"""


def test_the_prompt_reads_before_the_engine_is_imported(tmp_path: Path) -> None:
    hook, gate = tmp_path / "hook", tmp_path / "gate"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(GATE)
    env = {
        **os.environ,
        "BOARDBOT_DB": str(tmp_path / "early.db"),
        "BOARDBOT_WORKERS": "1",
        "DISCORD_TOKEN": "",
        "BOARDBOT_FAULT": "",
        "USER": "tester",
        "NUMBA_GATE": str(gate),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
    }
    term = pexpect.spawn(
        sys.executable, [str(ROOT / "bot.py")], cwd=str(tmp_path), env=env, encoding="utf-8",
        timeout=WAIT, dimensions=(50, 120),
    )  # fmt: skip
    try:
        screen = Screen(50, 120)
        term.logfile_read = screen
        pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
        assert "You are tester" not in screen.text()  # the console itself is not up yet
        term.send("/help\r")  # typed at once
        gate.touch()
        pump(term, screen, lambda: "/quit" in screen.text() and "this list" in screen.text(), WAIT)
        assert "You are tester" in screen.text()
        quit_cleanly(term, screen, "tester>", WAIT)
    finally:
        if term.isalive():
            term.close(force=True)
