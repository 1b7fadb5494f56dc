"""Fixtures shared by the lobby, Discord and learning tests (tests get them by name)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.agents import registry
from lobby.pool import EnginePool
from tests.clock import Clock
from tests.counting import KIND, register_counting
from tests.pg import PgServer, running_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the whole session, started by the first test that needs it
    (tests/pg.py says which package and why)."""
    with running_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
async def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What `Store.open` is given, once per backend: a SQLite path whose parent directories
    do not exist yet, or the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "nested" / "dir" / "bot.db")
    server: PgServer = request.getfixturevalue("pg_server")
    return await server.fresh_database()


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


@pytest.fixture
def counting() -> Iterator[None]:
    """The fake learning agent `counting` (tests/counting.py) is registered for the test."""
    register_counting()
    yield
    registry.AGENTS.pop(KIND, None)


@pytest.fixture
async def env(tmp_path: Path, clock: Clock, pool: EnginePool) -> AsyncIterator[Any]:
    """The bot and its harness on a fresh database (tests/boardbot.py); a module may define
    its own ``env`` for a differently configured bot."""
    # Imported here: the harness (and its spec check, see below) loads only for Discord tests.
    from tests.boardbot import make_bot

    bot, h = await make_bot(tmp_path / "bot.db", clock, pool)
    yield bot, h
    await h.close()
    await bot.lobby.close()
    await bot.lobby.store.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Report how many Discord requests tests/harness/spec.py checked (if any test ran it)."""
    spec = sys.modules.get("tests.harness.spec")  # not imported: no Discord test ran
    if spec is None:
        return
    counts = spec.VALIDATED
    terminalreporter.write_line(
        f"Discord requests validated against the OpenAPI spec: {sum(counts.values())}"
    )
    if terminalreporter.config.get_verbosity() > 0:
        for route, n in counts.most_common():
            terminalreporter.write_line(f"  {n:6d}  {route}")
