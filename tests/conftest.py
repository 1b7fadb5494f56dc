"""Fixtures shared by the lobby, Discord and learning tests (tests get them by name)."""

from __future__ import annotations

import faulthandler
import os
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from db import rows
from db.store import Store
from engine.agents import registry
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from tests import machine
from tests.botrun import Terminals
from tests.clock import Clock
from tests.counting import KIND, register_counting
from tests.pg import PgServer, running_server

ROOT = Path(__file__).resolve().parent.parent
#: Discord requests the xdist workers validated (each reports its own at its end).
_VALIDATED: Counter[str] = Counter()
#: Seconds past a test's pytest-timeout limit after which the process ends (see below).
BACKSTOP = 60.0
_stderr = pytest.StashKey[int]()


def _workers(config: pytest.Config) -> int:
    """How many xdist workers this run has (0: the tests run in this process)."""
    if getattr(config, "workerinput", None) is not None:
        return 0
    if getattr(config.option, "dist", "no") == "no":
        return 0
    return len(getattr(config.option, "tx", None) or [])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): the CPUs this process may use (not the host's, which a
    container may not have), at most 4 (each worker may start a PostgreSQL server and bots)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def pytest_configure(config: pytest.Config) -> None:
    """Once per run, in the process that starts the xdist workers (or runs the tests): build
    numba's cache once (the workers would each compile the same kernels at once on a first
    run), then measure the machine factor (tests/machine.py) with two processes per worker
    busy, which the workers inherit through the environment. Every process then loads the
    hypothesis profile whose deadline scales with it."""
    config.stash[_stderr] = os.dup(sys.__stderr__.fileno() if sys.__stderr__ else 2)
    workers = _workers(config)
    if getattr(config, "workerinput", None) is None:
        quick = config.getoption("help") or config.getoption("collectonly")
        if workers and not quick and not os.environ.get(machine.ENV):
            warm = [sys.executable, "-c", "from engine.warm import warm_up; warm_up()"]
            subprocess.run(warm, cwd=ROOT, check=False, timeout=1800)
        if not os.environ.get(machine.ENV):
            machine.set_factor(machine.factor_of(machine.measure(2 * max(1, workers))))
    _hypothesis_profile(machine.factor())


def pytest_unconfigure(config: pytest.Config) -> None:
    fd = config.stash.get(_stderr, None)
    if fd is not None:
        os.close(fd)


def _hypothesis_profile(factor: float) -> None:
    """Hypothesis' default deadline (200 ms an example) times the factor; its `too_slow`
    health check (data generation speed) off: tests check behaviour, not speed."""
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "boardbot",
        deadline=timedelta(milliseconds=200 * factor),
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile("boardbot")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test's pytest-timeout limit (its marker's, else the configured one) times the
    machine factor; the slow tests first, so that a parallel run does not end waiting for one
    that started last (the order is otherwise kept)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    try:
        configured = config.getoption("timeout") or os.environ.get("PYTEST_TIMEOUT")
        configured = configured or config.getini("timeout")
    except ValueError:  # no pytest-timeout
        return
    factor = machine.factor()
    for item in items:
        marker = item.get_closest_marker("timeout")
        kwargs = dict(marker.kwargs) if marker is not None else {}
        if marker is not None and marker.args:
            seconds = marker.args[0]
        else:
            seconds = kwargs.pop("timeout", None) if marker is not None else configured
        if seconds and float(seconds) > 0:
            item.add_marker(pytest.mark.timeout(float(seconds) * factor, **kwargs), append=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """A backstop behind pytest-timeout: its signal cannot stop a test whose main thread is
    blocked outside Python (say, on a lock a thread holds while it reads a terminal). Past
    the limit + BACKSTOP, every thread's stack goes to stderr and the process ends: an xdist
    worker is replaced and the run goes on (xdist names the test), instead of hanging."""
    marker = item.get_closest_marker("timeout")
    seconds = float(marker.args[0]) if marker is not None and marker.args else 0.0
    if seconds > 0:
        fd = item.config.stash[_stderr]
        faulthandler.dump_traceback_later(seconds + BACKSTOP, exit=True, file=fd)
    try:
        return (yield)
    finally:
        if seconds > 0:
            faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def _undecodable_rows_reported_per_test() -> Iterator[None]:
    """A row that does not decode is logged once per process (`db.rows`); each test has its
    own database, so each starts with none reported (in a parallel run a worker process runs
    many tests, and another test's row of the same table and id would hide this one's)."""
    rows._REPORTED.clear()
    yield


@pytest.fixture(scope="session")
def time_factor() -> float:
    """How much longer than on the reference machine a limit must be here (tests/machine.py)."""
    return machine.factor()


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
def lobby_config() -> LobbyConfig:
    """The configuration of `lobby`: seeded; a module asks for another by defining its own."""
    return LobbyConfig(seed=7)


@pytest.fixture
async def lobby(
    tmp_path: Path, pool: EnginePool, lobby_config: LobbyConfig
) -> AsyncIterator[Lobby]:
    """A Lobby on a fresh SQLite file with agents in a thread (`pool`); a module may define
    its own ``lobby`` for one with a clock or another backend."""
    store = await Store.open(tmp_path / "lobby.db")
    lob = Lobby(store, pool, lobby_config)
    try:
        yield lob
    finally:
        await lob.close()
        await store.close()


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[Terminals]:
    """`python bot.py` in pseudo-terminals (tests/botrun.py), none left running after the test."""
    bots = Terminals(tmp_path)
    yield bots
    bots.close()


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
    h.timeout = machine.scaled(h.timeout)  # how long an interaction's tasks may take to settle
    yield bot, h
    await h.close()
    await bot.lobby.close()
    await bot.lobby.store.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its count of validated Discord requests to the main process."""
    output = getattr(session.config, "workeroutput", None)
    spec = sys.modules.get("tests.harness.spec")
    if output is not None and spec is not None:
        output["spec_validated"] = dict(spec.VALIDATED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """(xdist) A worker ended: add up what it reported."""
    _VALIDATED.update(getattr(node, "workeroutput", {}).get("spec_validated") or {})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Report the machine factor, and how many Discord requests tests/harness/spec.py checked
    (if any test ran it, here or in an xdist worker)."""
    terminalreporter.write_line(
        f"Time limits scaled by {machine.factor()} for this machine's speed (tests/machine.py)"
    )
    spec = sys.modules.get("tests.harness.spec")  # not imported: no Discord test ran here
    counts = _VALIDATED + (spec.VALIDATED if spec is not None else Counter())
    if not counts:
        return
    terminalreporter.write_line(
        f"Discord requests validated against the OpenAPI spec: {sum(counts.values())}"
    )
    if terminalreporter.config.get_verbosity() > 0:
        for route, n in counts.most_common():
            terminalreporter.write_line(f"  {n:6d}  {route}")
