"""A small seeded chaos run (the full one is `python -m benchmarks.robustness.chaos`, figures in
the notes).

About 20 matches and 5 kills of the real bot process (kill -9 by the fault hook and at random
moments), with failed Discord responses and edits, a worker crash or hang, a busy or full
database, corrupt rows planted while the bot is down, both kinds of outage (a gateway
disconnect and a stopped process, 5 to 12 s: past the 8 s turn clock), a channel refusing
every edit (403) and a deleted channel, two tournaments held through it all: every violation
count must be 0.

Its times (the turn clock, the grace after a restart, the checks' limits, the bot's job ceiling)
are given for the reference machine: the run scales them by the machine factor
(`--time-factor`, tests/machine.py); the moments of the kills are not scaled.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.machine import factor, scaled

ROOT = Path(__file__).resolve().parents[2]
ARGS = [
    *("--matches", "20", "--kills", "5", "--seed", "4", "--workers", "1"),
    *("--turn-seconds", "8", "--grace", "4", "--epoch-seconds", "2", "5", "--stop-botmatches"),
    *("--outage-seconds", "5", "12"),
]


@pytest.mark.slow
def test_a_small_chaos_run_has_no_violations(tmp_path: Path) -> None:
    out, work = tmp_path / "chaos.json", tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.robustness.chaos",
            *ARGS,
            "--json",
            f"{out}",
            "--workdir",
            f"{work}",
            "--time-factor",
            f"{factor()}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(240),  # within pytest-timeout's 300 s, scaled too
    )
    assert out.exists(), proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert {k: v for k, v in result["violations"].items() if v} == {}, result["details"]
    assert proc.returncode == 0
    faults = result["faults"]
    assert result["kills"] == 5 and result["matches"] >= 15, result
    assert sum(v for k, v in faults.items() if k.startswith("response:")) > 0, faults
    assert sum(v for k, v in faults.items() if k.startswith("write:")) > 0, faults
    assert sum(v for k, v in faults.items() if k.startswith("job:")) > 0, faults
    assert faults["outage:gateway"] >= 1 and faults["outage:stopped"] >= 1, faults
    assert faults["channel_refused:403"] >= 1, faults
    assert faults.get("channel_deleted", 0) + faults.get("guild_removed", 0) >= 1, faults
    assert faults["corrupt_rows_planted"] > 0, faults
    assert faults["tournaments_finished"] >= 1, faults
