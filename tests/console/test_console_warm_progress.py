"""The console's progress on a first start counts the engine's kernels compiled of all the
warm-up needs, in one line redrawn in place, and its last line says they are all ready:
`python bot.py` in a pseudo-terminal, whose workers compile a small plan's kernels one at a
time (numba's compile events, slowed so the line moves while the test reads it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pexpect

from tests.botrun import Terminals
from tests.vt import Screen, pump, quit_cleanly, wait_eof

ROOT = Path(__file__).resolve().parents[2]
WAIT = 90  # seconds: a limit for a console that never answers, not a speed to meet
STEPS, KERNELS, PAUSE = 3, 6, 0.4  # the plan's steps, each one's kernels, a compile's seconds

#: In every process (the bot's and its workers'), once `engine.warm` is imported: a plan of its
#: first steps, never compiled before, whose warm-up "compiles" each step's kernels in turn.
HOOK = f"""
import importlib.machinery, os, sys, time
from importlib.abc import MetaPathFinder
from types import SimpleNamespace

def patch(warm):
    plan = warm.warm_plan
    warm.warm_plan = lambda: plan()[:{STEPS}]
    warm.KERNELS.update({{s.key: {KERNELS} for s in plan()[:{STEPS}]}})
    warm.WarmStep.cached = lambda self: False

    def warm_step(step, agent=None):
        from numba.core import event
        for i in range({KERNELS}):
            fn = SimpleNamespace(__module__="engine.fake", __qualname__=f"{{step.key}}_{{i}}")
            data = {{"dispatcher": SimpleNamespace(py_func=fn), "args": ()}}
            with event.trigger_event("numba:compile", data=data):
                time.sleep(float(os.environ.get("FAKE_PAUSE", {PAUSE})))

    warm.warm_step = warm_step

class Patch(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "engine.warm":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Patch())
"""

PROGRESS = re.compile(r"Game engine: kernels (\d+) of (\d+) ready")


def hooked(tmp_path: Path, terminals: Terminals, pause: float = PAUSE) -> pexpect.spawn:
    """`python bot.py` whose warm-up is the small plan above, each kernel `pause` s."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    path = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    extra = {"PYTHONPATH": path, "FAKE_PAUSE": str(pause)}
    return terminals.spawn(timeout=WAIT, dimensions=(50, 160), extra=extra)


def test_the_engines_progress_counts_kernels_in_one_line_up_to_all_of_them(
    tmp_path: Path, terminals: Terminals
) -> None:
    term = hooked(tmp_path, terminals)
    total = STEPS * KERNELS
    counts: list[int] = []  # each count the progress line showed, in order

    def progress() -> bool:
        """Note the progress line's count; whether the engine said it is ready."""
        lines = screen.history()
        shown = [m for line in lines if (m := PROGRESS.search(line))]
        assert len(shown) <= 1, screen.text()  # one line, redrawn in place
        if shown:
            assert int(shown[0].group(2)) == total, screen.text()
            if not counts or counts[-1] != int(shown[0].group(1)):
                counts.append(int(shown[0].group(1)))
        return any("The game engine is ready" in line for line in lines)

    screen = Screen(50, 160)
    term.logfile_read = screen
    pump(term, screen, lambda: f"the {total} kernels of its {STEPS} opponents" in screen.text(),
         WAIT)  # fmt: skip
    pump(term, screen, progress, WAIT)
    assert counts == sorted(counts) and len(set(counts)) >= 2, counts  # it rose
    assert all(0 <= n <= total for n in counts) and counts[0] < total, counts
    [ready] = [line for line in screen.history() if "The game engine is ready" in line]
    assert f"kernels {total} of {total} ready, all {STEPS} opponents" in ready
    assert not any(PROGRESS.search(line) for line in screen.history())  # replaced by it
    quit_cleanly(term, screen, "tester>", WAIT)


def test_a_training_and_the_engines_progress_each_keep_their_own_line(
    tmp_path: Path, terminals: Terminals
) -> None:
    """Two progress lines at once (a training started while the engine warms up) are each
    redrawn in place: neither replaces the other."""
    term = hooked(tmp_path, terminals, pause=2.0)  # a warm-up of 36 s: the training is on
    screen = Screen(50, 160)
    term.logfile_read = screen
    pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
    term.send("/train game:connect4 agent:trainer games:1000000\r")

    def lines(start: str) -> list[str]:
        return [line for line in screen.history() if line.startswith(start)]

    def both() -> bool:
        return bool(lines("Training trainer (")) and bool(lines("Game engine: kernels"))

    pump(term, screen, both, WAIT)
    shown = (lines("Training trainer (")[0], lines("Game engine: kernels")[0])
    pump(term, screen, lambda: (lines("Training trainer (") or [""])[0] != shown[0], WAIT)
    assert len(lines("Training trainer (")) == 1, screen.text()  # redrawn, not repeated
    assert len(lines("Game engine: kernels")) <= 1, screen.text()  # (or the ready line now)
    pump(term, screen, lambda: screen.cursor_line() == "tester>", WAIT)
    term.send("/train stop\r")
    pump(term, screen, lambda: "what it learned is kept" in screen.text(), WAIT)
    term.send("/quit\r")
    wait_eof(term, WAIT)
    term.close()
    assert term.exitstatus == 0 and "Traceback" not in screen.text()
