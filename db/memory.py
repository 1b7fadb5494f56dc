"""What learning agents keep between runs (memories of (key, value) rows with a meta row), and
the outbox of work still to do after a finish. They share a module because the learning loop
applies an outbox row and the memory writes it yields in one transaction (`AgentMemory.apply`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .connection import Params, Repository, Tx
from .models import MemoryInfo, MemoryWrite, OutboxItem
from .rows import OUTBOX_COLS, Row, decodable, decode_outbox, dump_json_object, nonempty

#: Outbox rows failing this many times are no longer retried.
OUTBOX_GIVE_UP = 20

_COUNTER_RE = re.compile(r"^[a-z_]{1,32}$")


class AgentMemory(Repository):
    """Agent memory (``store.memory``)."""

    async def put(
        self,
        kind: str,
        name: str,
        items: Iterable[tuple[bytes | str, bytes]],
        *,
        replace: bool = False,
        games_trained_delta: int = 0,
        meta: Mapping[str, Any] | None = None,
    ) -> int:
        """Upsert many (key, value) rows of memory ``(kind, name)`` in ONE transaction.

        One transaction (one fsync) instead of one per row is the difference
        between milliseconds and seconds for a few thousand rows.  ``str`` keys
        are stored as their UTF-8 bytes (so ``'a'`` and ``b'a'`` are the same
        key); keys always come back as ``bytes``.  ``replace=True`` deletes the
        memory's other rows first (a full snapshot).  ``games_trained_delta``
        and ``meta`` (replaces the meta object) are updated in the same
        transaction, so a checkpoint is all-or-nothing.  Returns the number of
        rows written.
        """
        kind = nonempty("kind", kind)
        name = nonempty("name", name)
        if games_trained_delta < 0:
            raise ValueError("games_trained_delta must be >= 0")
        meta_json = dump_json_object("meta", meta) if meta is not None else None
        now = self._db.now()
        rows = [(kind, name, _key_bytes(k), _value_bytes(v), now) for k, v in items]
        async with self._db.write("memory_put") as conn:
            await _ensure_memory_meta(conn, kind, name, now)
            await conn.execute(
                "UPDATE agent_memory_meta SET games_trained = games_trained + ?,"
                " meta = coalesce(?, meta), updated_at = ? WHERE kind = ? AND name = ?",
                (games_trained_delta, meta_json, now, kind, name),
            )
            if replace:
                await conn.execute(
                    "DELETE FROM agent_memory WHERE kind = ? AND name = ?", (kind, name)
                )
            await conn.executemany(
                "INSERT INTO agent_memory (kind, name, key, value, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, name, key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                rows,
            )
        return len(rows)

    async def apply(self, writes: Sequence[MemoryWrite], *, outbox_id: int | None = None) -> bool:
        """Write several memories (rows upserted, games_trained increased) in ONE transaction.

        With ``outbox_id``, that outbox row is deleted in the same transaction, and nothing is
        written if it is already gone (returns False): work taken from the outbox is applied
        exactly once, even if it is retried after a kill.
        """
        prepared = []
        for w in writes:
            kind, name = nonempty("kind", w.kind), nonempty("name", w.name)
            if w.games < 0:
                raise ValueError("games must be >= 0")
            if w.counter is not None and not _COUNTER_RE.match(w.counter):
                raise ValueError(f"counter must match {_COUNTER_RE.pattern}, got {w.counter!r}")
            rows = [(_key_bytes(k), _value_bytes(v)) for k, v in w.rows.items()]
            prepared.append((kind, name, rows, w.games, w.counter))
        async with self._db.write("memory_apply") as conn:
            deleted = outbox_id is None or await conn.execute(
                "DELETE FROM outbox WHERE id = ?", (outbox_id,)
            )
            if not deleted:
                return False
            now = self._db.now()
            for kind, name, rows, games, counter in prepared:
                await _ensure_memory_meta(conn, kind, name, now)
                await conn.execute(
                    "UPDATE agent_memory_meta SET games_trained = games_trained + ?,"
                    " updated_at = ? WHERE kind = ? AND name = ?",
                    (games, now, kind, name),
                )
                if counter is not None:
                    add = self._db.dialect.json_add.format(col="meta")
                    await conn.execute(
                        f"UPDATE agent_memory_meta SET meta = {add} WHERE kind = ? AND name = ?",
                        (counter, counter, games, kind, name),
                    )
                await conn.executemany(
                    "INSERT INTO agent_memory (kind, name, key, value, updated_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, name, key)"
                    " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    [(kind, name, key, value, now) for key, value in rows],
                )
        return True

    async def get(self, kind: str, name: str) -> dict[bytes, bytes]:
        """Every (key, value) row of one memory ({} if it does not exist)."""
        rows = await self._db.fetchall(
            "SELECT key, value FROM agent_memory WHERE kind = ? AND name = ?", (kind, name)
        )
        out: dict[bytes, bytes] = {}
        for row in rows:
            key, value = row[0], row[1]
            if type(key) is not bytes or type(value) is not bytes:
                r = Row("agent_memory", row, ())
                r.key = f"kind={kind!r}, name={name!r}, key={key!r}"
                r.blob("key")
                r.blob("value")
            out[key] = value
        return out

    async def get_one(self, kind: str, name: str, key: bytes | str) -> bytes | None:
        rows = await self._db.fetchall(
            "SELECT key, value FROM agent_memory WHERE kind = ? AND name = ? AND key = ?",
            (kind, name, _key_bytes(key)),
        )
        if not rows:
            return None
        r = Row("agent_memory", rows[0], ())
        r.key = f"kind={kind!r}, name={name!r}, key={rows[0][0]!r}"
        return r.blob("value")

    async def info(self, kind: str, name: str) -> MemoryInfo | None:
        infos = await self._infos("WHERE m.kind = ? AND m.name = ?", (kind, name))
        return infos[0] if infos else None

    async def infos(self, kind: str | None = None) -> list[MemoryInfo]:
        """All stored memories (optionally of one agent kind), sorted by (kind, name)."""
        if kind is None:
            return await self._infos("", ())
        return await self._infos("WHERE m.kind = ?", (kind,))

    async def _infos(self, where: str, params: Params) -> list[MemoryInfo]:
        rows = await self._db.fetchall(
            "SELECT m.kind, m.name, m.games_trained, m.meta, m.created_at, m.updated_at,"
            " (SELECT COUNT(*) FROM agent_memory a WHERE a.kind = m.kind AND a.name = m.name)"
            f" AS n_rows FROM agent_memory_meta m {where} ORDER BY m.kind, m.name",
            params,
        )
        out = []
        for row in rows:
            r = Row("agent_memory_meta", row, ("kind", "name"))
            out.append(
                MemoryInfo(
                    kind=r.get_str("kind"),
                    name=r.get_str("name"),
                    rows=r.get_int("n_rows"),
                    games_trained=r.get_int("games_trained"),
                    meta=r.json_object("meta"),
                    created_at=r.get_float("created_at"),
                    updated_at=r.get_float("updated_at"),
                )
            )
        return out


class Outbox(Repository):
    """What must still happen after a commit (``store.outbox``; its rows are written with
    the step, `Matches.commit_step`)."""

    async def pending(
        self, kind: str | None = None, *, max_attempts: int = OUTBOX_GIVE_UP, limit: int = 100
    ) -> list[OutboxItem]:
        """Outbox rows still to apply, oldest first (rows that failed `max_attempts` times
        are kept for inspection but no longer returned)."""
        sql = f"SELECT {OUTBOX_COLS} FROM outbox WHERE attempts < ?"
        params: list[Any] = [max_attempts]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = await self._db.fetchall(sql + " ORDER BY id LIMIT ?", [*params, limit])
        return decodable(rows, decode_outbox)  # one that does not decode is set aside

    async def done(self, outbox_id: int) -> bool:
        """Delete an outbox row that needed no write; False if it was already gone."""
        async with self._db.write("outbox_done") as conn:
            return await conn.execute("DELETE FROM outbox WHERE id = ?", (outbox_id,)) > 0

    async def failed(self, outbox_id: int, error: str, *, final: bool = False) -> None:
        """Count a failed attempt (a row failing every time stops being retried); `final`:
        no retry can mend it, so it is never returned again (kept for inspection)."""
        async with self._db.write("outbox_failed") as conn:
            await conn.execute(
                "UPDATE outbox SET attempts = CASE WHEN ? = 1 THEN"
                f" {self._db.dialect.greatest}(attempts + 1, ?) ELSE attempts + 1 END,"
                " last_error = ? WHERE id = ?",
                (int(final), OUTBOX_GIVE_UP, error[:500], outbox_id),
            )


async def _ensure_memory_meta(conn: Tx, kind: str, name: str, now: float) -> None:
    await conn.execute(
        "INSERT INTO agent_memory_meta (kind, name, created_at, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (kind, name) DO NOTHING",
        (kind, name, now, now),
    )


def _key_bytes(key: bytes | str) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes | bytearray | memoryview):
        return bytes(key)
    raise TypeError(f"memory keys must be bytes or str, got {type(key).__name__}")


def _value_bytes(value: bytes) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(
        f"memory values must be bytes (serialise first, e.g. np.save), got {type(value).__name__}"
    )
