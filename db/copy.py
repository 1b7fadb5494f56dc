"""Copy a SQLite database into a new PostgreSQL database (`python bot.py migrate`): every
table (players, matches with their moves, ratings and their history, challenges, analyses,
the outbox and the agents' learned memory), ids kept, verified by counts and checksums.

All of it is one PostgreSQL transaction: the copy and its verification commit together or not
at all, so a failed or interrupted copy leaves the target empty and can simply run again. The
target must be empty (a second run is refused, one line), and both databases are claimed with
the bot's own guards, so no bot writes to either meanwhile.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backend import redact
from .errors import StoreError
from .instance import InstanceLock, PgInstanceLock
from .migrations import LATEST_VERSION

#: Every table, parents before children (the foreign keys).
TABLES = (
    "players",
    "matches",
    "moves",
    "ratings",
    "rating_history",
    "guild_settings",
    "agent_memory_meta",
    "agent_memory",
    "match_faults",
    "outbox",
    "challenges",
    "analyses",
)
#: Runtime state the copy leaves out: the leases of running bot processes (db/leases.py).
SKIPPED = ("leases",)
#: Tables whose ids PostgreSQL numbers itself: its counter continues after the copied ids.
_IDENTITY = ("players", "matches", "outbox", "challenges")
_BATCH = 2000


class CopyError(StoreError):
    """The copy cannot start or did not verify; the target was left as it was."""


@dataclass(frozen=True, slots=True)
class TableCopy:
    table: str
    rows: int
    checksum: str  # the same on both sides, or the copy is rolled back


@dataclass(slots=True)
class _Sum:
    """An order-free checksum of rows: the sum of their SHA-256 digests (mod 2**256)."""

    kinds: Sequence[str]
    rows: int = 0
    total: int = 0

    def add(self, row: Sequence[Any]) -> None:
        text = "\x1f".join(_canonical(v, k) for v, k in zip(row, self.kinds, strict=True))
        self.total = (self.total + int(hashlib.sha256(text.encode()).hexdigest(), 16)) % 2**256
        self.rows += 1

    @property
    def hex(self) -> str:
        return f"{self.total:064x}"[:16]


def _canonical(value: Any, kind: str) -> str:
    """One value as text, the same whichever database returned it (a whole number in a REAL
    column is an int from SQLite and a float from PostgreSQL)."""
    if value is None:
        return "N"
    if kind == "double precision":
        return "F" + float(value).hex()
    if kind in ("bigint", "smallint"):
        return "I" + str(int(value))
    if kind == "bytea":
        return "B" + bytes(value).hex()
    return "T" + json.dumps(value)


async def copy_sqlite_to_postgres(
    source: str, target: str, progress: Callable[[str], None] = lambda _: None
) -> list[TableCopy]:
    """Copy the SQLite file `source` into the empty PostgreSQL database `target` (a URL).

    Raises CopyError (one line) if the target is not empty or the copy does not verify, and
    what the store raises for a database it cannot use (AlreadyRunning, SchemaTooNewError,
    sqlite3.OperationalError)."""
    from .postgres import PostgresBackend
    from .sqlite import SqliteBackend

    if not Path(source).is_file():  # opening would make a new, empty file
        raise CopyError(f"there is no SQLite database at {source}")
    source_guard, target_guard = InstanceLock(source), PgInstanceLock(target)
    source_guard.acquire()
    try:
        await target_guard.claim()
        try:
            lite = await SqliteBackend.open(source)  # brings an older file to this version
            try:
                pg = await PostgresBackend.open(target)
                try:
                    return await _copy(lite, pg, progress)
                finally:
                    await pg.close()
            finally:
                await lite.close()
        finally:
            target_guard.release()
    finally:
        source_guard.release()


async def _copy(lite: Any, pg: Any, progress: Callable[[str], None]) -> list[TableCopy]:
    from .postgres import placeholders

    src = lite.connection
    listed = await src.execute_fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    )
    found = {str(r[0]) for r in listed} - set(SKIPPED)
    if found - set(TABLES):
        raise CopyError(f"the copy does not know the tables {sorted(found - set(TABLES))}")
    async with pg.transaction() as tx:
        conn = tx.conn
        full = [
            f"{t}: {n}" for t in TABLES if (n := await conn.fetchval(f"SELECT count(*) FROM {t}"))
        ]
        if full:
            raise CopyError(
                f"the target database {pg.name} is not empty ({', '.join(full)} rows);"
                " the copy goes only into a new, empty database"
            )
        # The copied moves of finished matches are not appended at a live match's ply: the
        # trigger guards the bot's writes, not this copy (re-enabled before the commit).
        await conn.execute("ALTER TABLE moves DISABLE TRIGGER moves_append_only_at_ply")
        await src.execute("BEGIN")  # one snapshot of the source
        try:
            out = []
            for table in TABLES:
                kinds = await _kinds(conn, table)
                cols = list(kinds)
                mine, theirs = _Sum(list(kinds.values())), _Sum(list(kinds.values()))
                select = f"SELECT {', '.join(cols)} FROM {table}"  # the sums need no order
                insert = placeholders(
                    f"INSERT INTO {table} ({', '.join(cols)})"
                    f" VALUES ({', '.join('?' for _ in cols)})"
                )
                async with src.execute(select) as cursor:
                    while batch := list(await cursor.fetchmany(_BATCH)):
                        rows = [tuple(r) for r in batch]
                        for row in rows:
                            mine.add(row)
                        await conn.executemany(insert, rows)
                async for record in conn.cursor(select, prefetch=_BATCH):
                    theirs.add(tuple(record))
                if (mine.rows, mine.hex) != (theirs.rows, theirs.hex):
                    raise CopyError(
                        f"{table}: the copy does not verify ({mine.rows} rows, checksum"
                        f" {mine.hex} in SQLite; {theirs.rows} rows, checksum {theirs.hex} in"
                        " PostgreSQL); nothing was kept"
                    )
                out.append(TableCopy(table, mine.rows, mine.hex))
                progress(f"{table}: {mine.rows} rows, checksum {mine.hex}")
        finally:
            await src.execute("COMMIT")
        await conn.execute("ALTER TABLE moves ENABLE TRIGGER moves_append_only_at_ply")
        for table in _IDENTITY:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id))"
                f" FROM {table} HAVING max(id) IS NOT NULL"
            )
    return out


async def _kinds(conn: Any, table: str) -> dict[str, str]:
    """The table's columns in PostgreSQL, in order, with their types."""
    rows = await conn.fetch(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
        table,
    )
    return {str(r[0]): str(r[1]) for r in rows}


def describe(copies: Iterable[TableCopy], source: str, target: str) -> str:
    """The closing line of a copy."""
    total = sum(c.rows for c in copies)
    return (
        f"copied {total} rows from {source} to {redact(target)} (schema version"
        f" {LATEST_VERSION}); every table's count and checksum are equal"
    )
