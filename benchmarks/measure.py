"""What every benchmark needs: percentiles, the time of a warm-up, the machine's load (a figure
means little without it: the machine is shared) and the JSON result of a run."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (`q` from 0 to 1): the smallest value with at least a share
    `q` of the values at or below it. No interpolation: every figure is one measured value."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def sign(score: int) -> int:
    """-1, 0 or 1: the outcome a solver's score says (a loss, a draw, a win); the strength
    checks compare outcomes, not scores."""
    return (score > 0) - (score < 0)


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes) and its CPUs, for a figure's line."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}, {os.cpu_count()} cpus"


def warm_up(compile_all: Callable[[], object], label: str = "compile / cache load") -> float:
    """Run `compile_all` (first calls of the kernels a benchmark times: numba compiles them or
    loads them from its cache) and print how long that took; returns the seconds."""
    t0 = time.perf_counter()
    compile_all()
    seconds = time.perf_counter() - t0
    print(f"{label}: {seconds:.2f} s", flush=True)
    return seconds


def write_result(result: Any, path: str | Path | None = None) -> str:
    """Print a run's result as indented JSON, also into `path` when given; returns the text."""
    text = json.dumps(result, indent=2)
    print(text, flush=True)
    if path:
        Path(path).write_text(text)
    return text
