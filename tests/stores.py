"""What the store's tests share: the state of a database made behind the store's back, and the
people and matches most tests start from."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


def postgres(target: str) -> bool:
    """Whether `Store.open` was given a PostgreSQL URL (else a SQLite path)."""
    return target.startswith("postgresql://")


@asynccontextmanager
async def another_process_writing(target: str) -> AsyncIterator[None]:
    """Another connection holds what a new player's write needs until the block ends: SQLite's
    write lock, or PostgreSQL's lock on the players table (reads still pass)."""
    if postgres(target):
        import asyncpg

        other = await asyncpg.connect(target)
        tx = other.transaction()
        await tx.start()
        await other.execute("LOCK TABLE players IN SHARE ROW EXCLUSIVE MODE")
        try:
            yield
        finally:
            await tx.rollback()
            await other.close()
    else:
        raw = sqlite3.connect(target, isolation_level=None)
        raw.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            raw.execute("ROLLBACK")
            raw.close()
