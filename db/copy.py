"""Copy a SQLite database into a new PostgreSQL database (`python bot.py migrate`): every
table (players, matches with their moves, ratings and their history, challenges, analyses,
the outbox and the agents' learned memory), ids kept, verified by counts and checksums.

All of it is one PostgreSQL transaction: the copy and its verification commit together or not
at all, so a failed or interrupted copy leaves the target empty and can simply run again. The
target must be empty (a second run is refused, one line), and both databases are claimed with
the bot's own guards, so no bot writes to either meanwhile.

SQLite never opens the source: its file is copied to a temporary snapshot, and the snapshot
is brought to this version and read. An older source stays as it was, so the older bot that wrote
it can still open it. A value PostgreSQL cannot take (text in an INTEGER column, a NUL in a
name) stops the copy with one line naming its table, row and column.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backend import redact
from .errors import MigrationError, SchemaTooNewError, StoreError
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
    "member_prefs",
    "settings_log",
    "tournaments",
    "tournament_entrants",
    "tournament_games",
    "puzzle_attempts",
    "puzzle_scores",
    "puzzle_ratings",
    "puzzle_queue",
    "puzzle_posts",
)
#: Runtime state the copy leaves out: the leases of running bot processes (db/leases.py).
SKIPPED = ("leases",)
#: Tables whose ids PostgreSQL numbers itself: its counter continues after the copied ids.
_IDENTITY = ("players", "matches", "outbox", "challenges", "settings_log", "tournaments")
_BATCH = 2000


class CopyError(StoreError):
    """The copy cannot start or did not verify; the target was left as it was."""


class BadRowError(CopyError):
    """A row of the source PostgreSQL cannot take (the message names its table, row and
    column); nothing was copied."""


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

    The source is not changed: a temporary snapshot of it (in the system's temporary folder)
    is migrated and read. Raises CopyError (one line) if the target is not empty or the copy
    does not verify, BadRowError for a row PostgreSQL cannot take, and what the store raises
    for a database it cannot use (AlreadyRunning, SchemaTooNewError, BackendError)."""
    from .postgres import PostgresBackend
    from .sqlite import translated

    if not Path(source).is_file():  # opening would make a new, empty file
        raise CopyError(f"there is no SQLite database at {source}")
    source_guard, target_guard = InstanceLock(source), PgInstanceLock(target)
    source_guard.acquire()  # no bot writes to the source while it is copied
    try:
        await target_guard.claim()
        try:
            with (
                tempfile.TemporaryDirectory(prefix="boardbot-migrate-") as folder,
                translated(),  # the source's errors (it is read directly) as the store's
            ):
                lite = await _open_snapshot(source, Path(folder))
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


async def _open_snapshot(source: str, folder: Path) -> Any:
    """A copy of `source` in `folder`, open and migrated to this version.

    The file is copied, not opened: SQLite opening even a read-only connection on a WAL file
    makes its -wal and -shm files beside it. A journal a crash left is copied too, so SQLite
    replays it on the snapshot. The source's guard is held: nothing writes it meanwhile."""
    from .sqlite import SqliteBackend

    snapshot = folder / "snapshot.db"
    await asyncio.to_thread(_copy_files, Path(source), snapshot)
    raw = sqlite3.connect(snapshot)
    try:
        (found,) = raw.execute("PRAGMA user_version").fetchone()
    finally:
        raw.close()
    if int(found) > LATEST_VERSION:  # said of the source, not of the snapshot
        raise SchemaTooNewError(source, int(found), LATEST_VERSION)
    try:
        return await SqliteBackend.open(str(snapshot))
    except MigrationError as exc:  # its message names the snapshot: name the source instead
        raise MigrationError(str(exc).replace(repr(str(snapshot)), repr(source))) from None


def _copy_files(source: Path, snapshot: Path) -> None:
    shutil.copyfile(source, snapshot)
    for suffix in ("-wal", "-journal"):
        journal = Path(f"{source}{suffix}")
        if journal.is_file():
            shutil.copyfile(journal, f"{snapshot}{suffix}")


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
                rows_of = _Rows(table, cols, list(kinds.values()), await _key(conn, table))
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
                            rows_of.check(row)
                            mine.add(row)
                        await _insert(conn, insert, rows, rows_of)
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


#: The whole numbers each integer type of PostgreSQL holds.
_RANGES = {"smallint": 2**15, "integer": 2**31, "bigint": 2**63}


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _unfit(value: Any, kind: str) -> str | None:
    """Why PostgreSQL cannot take `value` (as SQLite returned it) into a column of `kind`;
    None if it can. SQLite stores any value in any column; PostgreSQL does not."""
    if value is None:
        return None
    if kind in _RANGES:
        if not isinstance(value, int):
            return f"{_show(value)} is not a whole number"
        if not -_RANGES[kind] <= value < _RANGES[kind]:
            return f"{value} is out of range for {kind}"
    elif kind in ("double precision", "real"):
        if not isinstance(value, int | float):
            return f"{_show(value)} is not a number"
    elif kind == "bytea":
        if not isinstance(value, bytes):
            return f"{_show(value)} is not binary data"
    elif not isinstance(value, str):
        return f"{_show(value)} is not text"
    elif "\x00" in value:
        return f"{_show(value)} holds a NUL character, which PostgreSQL text cannot store"
    return None


@dataclass(frozen=True, slots=True)
class _Rows:
    """One table's rows as the copy sees them: checked, and named in messages by their key."""

    table: str
    cols: list[str]
    kinds: list[str]
    key: list[str]

    def name(self, row: Sequence[Any]) -> str:
        key = self.key or self.cols  # every copied table has a primary key; this is a fallback
        values = dict(zip(self.cols, row, strict=True))
        return f"{self.table} row " + ", ".join(f"{k}={_show(values[k])}" for k in key)

    def check(self, row: Sequence[Any]) -> None:
        for col, kind, value in zip(self.cols, self.kinds, row, strict=True):
            problem = _unfit(value, kind)
            if problem is not None:
                raise self.refused(row, f"column {col}: {problem}")

    def refused(self, row: Sequence[Any], why: str) -> BadRowError:
        return BadRowError(
            f"{self.name(row)}: {why}; nothing was copied"
            " (mend or delete the row in the SQLite file and run again)"
        )


async def _insert(conn: Any, insert: str, rows: list[tuple[Any, ...]], rows_of: _Rows) -> None:
    """Insert a batch; if PostgreSQL refuses it (a constraint the SQLite file did not keep),
    find the row and raise BadRowError naming it."""
    try:
        async with conn.transaction():  # a savepoint: the batch is undone, the copy goes on
            await conn.executemany(insert, rows)
        return
    except Exception as exc:
        if not _refused(exc):
            raise  # not about a value: a lost connection, a full disk, ...
        error = exc
    for row in rows:  # one at a time, each in its own savepoint, to name the one refused
        try:
            async with conn.transaction():
                await conn.execute(insert, *row)
        except Exception as exc:
            if not _refused(exc):
                raise
            raise rows_of.refused(row, f"PostgreSQL refuses it ({_one_line(exc)})") from None
    raise BadRowError(
        f"{rows_of.table}: PostgreSQL refuses a batch ({_one_line(error)}); nothing was copied"
    )


def _refused(exc: Exception) -> bool:
    """Whether PostgreSQL refused a value or a row (a data exception, a constraint), or the
    driver a value it cannot send (its DataError, an InterfaceError and a ValueError)."""
    import asyncpg

    if isinstance(exc, asyncpg.PostgresError):
        return str(getattr(exc, "sqlstate", "")).startswith(("22", "23"))
    return isinstance(exc, asyncpg.InterfaceError) and isinstance(exc, ValueError)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())  # the server's DETAIL comes on a line of its own


async def _key(conn: Any, table: str) -> list[str]:
    """The table's primary key columns in PostgreSQL, in order."""
    rows = await conn.fetch(
        "SELECT k.column_name FROM information_schema.table_constraints c"
        " JOIN information_schema.key_column_usage k"
        " USING (constraint_schema, constraint_name, table_name)"
        " WHERE c.table_schema = current_schema() AND c.table_name = $1"
        " AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position",
        table,
    )
    return [str(r[0]) for r in rows]


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
