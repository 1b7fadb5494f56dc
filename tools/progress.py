"""The tools' progress bar."""

from __future__ import annotations

import sys
import time


class Progress:
    """A one-line progress bar on stderr (silent when stderr is not a terminal unless forced)."""

    def __init__(self, total: int, label: str = "", force: bool = False) -> None:
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.start = time.perf_counter()
        self.enabled = force or sys.stderr.isatty()
        self._last = 0.0

    def update(self, n: int = 1, extra: str = "") -> None:
        self.done += n
        now = time.perf_counter()
        if not self.enabled or (now - self._last < 0.1 and self.done < self.total):
            return
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        rate = self.done / max(now - self.start, 1e-9)
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(
            f"\r{self.label} [{bar}] {self.done}/{self.total} {rate:.1f}/s {extra}".rstrip()
        )
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()
