"""Leases: work that only one of several bot processes on one database may do at a time.

Shard processes share the database; learning from finished matches and training jobs write
an agent's memory from a cache of it, so two processes doing them at once would overwrite each
other's rows. The process holding the `learning` lease does both; a lease lapses when its
holder stops renewing it (a killed process), so another process takes over. Times are the
store's clock (wall time): the processes' clocks must agree to within a lease's length.
"""

from __future__ import annotations

from .connection import Repository, query


class Leases(Repository):
    """Leases held by one bot process at a time (``store.leases``)."""

    async def take(self, name: str, holder: str, seconds: float) -> bool:
        """Take or renew the lease `name` for `seconds`; False if another holder has it."""
        now = self._db.now()
        async with self._db.write("take_lease") as conn:
            await conn.execute(
                "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
                " expires_at = excluded.expires_at"
                " WHERE leases.holder = excluded.holder OR leases.expires_at < ?",
                (name, holder, now + seconds, now),
            )
            rows = await query(conn, "SELECT holder FROM leases WHERE name = ?", (name,))
        return bool(rows) and rows[0][0] == holder

    async def drop(self, name: str, holder: str) -> None:
        """Give the lease up (only if `holder` has it)."""
        async with self._db.write("drop_lease") as conn:
            await conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    async def holder(self, name: str) -> str | None:
        """Who holds the lease now (an expired one counts as free)."""
        rows = await self._db.fetchall(
            "SELECT holder FROM leases WHERE name = ? AND expires_at >= ?", (name, self._db.now())
        )
        return str(rows[0][0]) if rows else None
