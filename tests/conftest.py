"""Fixtures shared by the lobby, Discord and learning tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lobby.pool import EnginePool


class Clock:
    """A wall clock the test moves by hand (turn clocks, challenge expiry)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def pool() -> AsyncIterator[EnginePool]:
    """Agents in a thread: the code above the pool without process start-up costs."""
    p = EnginePool(workers=0)
    await p.start()
    yield p
    await p.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Report how many Discord requests tests/discord_spec.py checked (if any test ran it)."""
    import sys

    spec = sys.modules.get("tests.discord_spec")  # not imported: no Discord test ran
    if spec is None:
        return
    counts = spec.VALIDATED
    terminalreporter.write_line(
        f"Discord requests validated against the OpenAPI spec: {sum(counts.values())}"
    )
    if terminalreporter.config.get_verbosity() > 0:
        for route, n in counts.most_common():
            terminalreporter.write_line(f"  {n:6d}  {route}")
