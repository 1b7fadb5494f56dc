"""A small seeded fuzz run (the full one is `python -m benchmarks.robustness.fuzz`): hostile
members, their names built from mentions, masked links, markdown and 2,000-character tails,
against the real bot and pool. Nothing may ping beyond a challenged member, no name's markdown
may reach a message, and no refused interaction may change what people own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.machine import factor, scaled

ROOT = Path(__file__).resolve().parents[2]


def test_a_small_fuzz_run_with_hostile_names_is_clean(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "benchmarks.robustness.fuzz"),
            *("--interactions", "300", "--seed", "11"),
            *("--workers", "1", "--console-lines", "50", "--protocol-lines", "50"),
            *("--json", f"{out}", "--time-factor", f"{factor()}"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(200),
    )
    assert out.exists(), proc.stderr[-3000:]
    result = json.loads(out.read_text())
    bad = {
        k: result[k]
        for k in (
            "unhandled",
            "error_logs",
            "refused_changed_rows",
            "unsafe_mentions",
            "unescaped_names",
            "limit_failures",
            "duplicate_matches",
        )
        if result[k]
    }
    assert bad == {}, result["details"]
    assert proc.returncode == 0
    assert result["interactions"] == 300 and result["refused"] > 0 and result["accepted"] > 0
    assert result["engine_jobs"]["people"]["jobs"] + result["engine_jobs"]["background"]["jobs"]
