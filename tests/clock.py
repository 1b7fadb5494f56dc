"""A wall clock the tests move by hand (turn clocks, challenge expiry); conftest's ``clock``."""

from __future__ import annotations


class Clock:
    """A wall clock the test moves by hand (turn clocks, challenge expiry)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now
