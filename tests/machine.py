"""How slow this machine is right now, as one number: every time limit of the tests scales by it.

A test asserts behaviour, not speed; but a test of a bot must still give up on a bot that never
answers, so its waits have limits. Those limits were set on a quiet 2-core machine running one
test at a time. On a slower or busier machine (other programs, or the suite's own parallel
workers) everything takes longer, and a fixed limit fails a correct bot: the chaos run's
restart check once missed its 7 s by 0.4 s in a loaded suite.

So once per test session `tests/conftest.py` measures a small fixed CPU workload (pure Python,
`WORK`) run by as many processes at once as the suite keeps busy (`copies`: two per xdist worker,
a test and the bot process it starts), and compares its median time to `REFERENCE`, the same
workload's time on the reference machine running alone. The ratio (at least 1, at most `CAP`) is
the factor; it goes into the environment (`BOARDBOT_TIME_FACTOR`), so the xdist workers and every
process a test starts read the same number. Set that variable yourself to skip the measurement
(`BOARDBOT_TIME_FACTOR=1` for the old limits). Use `scaled(seconds)` for a limit; the chaos run
takes the factor as `--time-factor`. Limits only grow: a factor never makes a check stricter,
and `CAP` keeps a hung bot a failure.

    python -m tests.machine [COPIES]    # measure now and print the factor
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENV = "BOARDBOT_TIME_FACTOR"
#: Seconds one round of `work()` takes on the reference machine (2 cores, Python 3.11, quiet:
#: the median of a round, one copy alone; measured with `python -m tests.machine 1`).
REFERENCE = 0.045
#: The largest factor: past it a limit stops meaning "slow machine" and starts hiding hangs.
CAP = 8.0
WORK = 300_000  # loop steps of one round (about 50 ms on the reference machine)
ROUNDS = 7
ROOT = Path(__file__).resolve().parent.parent

_factor: float | None = None


def work() -> float:
    """One round of the fixed workload (integer arithmetic and a small dict); its seconds."""
    t0 = time.perf_counter()
    table: dict[int, int] = {}
    x = 0
    for i in range(WORK):
        x = (x * 31 + i) % 1_000_003
        table[x & 1023] = i
    return time.perf_counter() - t0


def round_seconds() -> float:
    """The median round of `ROUNDS` in this process."""
    return statistics.median(work() for _ in range(ROUNDS))


def measure(copies: int) -> float:
    """The median round's seconds with `copies` processes running the workload at once (the
    slowest copy's: a test waits for its slowest process)."""
    code = "from tests.machine import round_seconds; print(round_seconds())"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(max(1, copies))
    ]
    out = [p.communicate(timeout=120)[0] for p in procs]
    return max(float(o.split()[-1]) for o in out)


def factor_of(seconds: float) -> float:
    return round(min(CAP, max(1.0, seconds / REFERENCE)), 2)


def factor() -> float:
    """This session's factor: from the environment (set by the first measurement, or by you),
    else measured now with two processes at once."""
    global _factor
    if _factor is None:
        given = os.environ.get(ENV, "").strip()
        _factor = min(CAP, max(1.0, float(given))) if given else factor_of(measure(2))
        os.environ[ENV] = str(_factor)
    return _factor


def set_factor(value: float) -> None:
    """Fix this session's factor (and its subprocesses')."""
    global _factor
    _factor = min(CAP, max(1.0, value))
    os.environ[ENV] = str(_factor)


def scaled(seconds: float) -> float:
    """A time limit of a test on this machine: `seconds` on the reference machine."""
    return seconds * factor()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    s = measure(n)
    print(f"{n} at once: a round takes {s:.4f} s (reference {REFERENCE} s): {factor_of(s)}")
