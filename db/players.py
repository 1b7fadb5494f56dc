"""Players: Discord users, console people and AI agents, each found by its own key and made
on first sight."""

from __future__ import annotations

import json
from collections.abc import Iterable

from .connection import Repository, Tx, query
from .models import Player, PlayerKind
from .rows import PLAYER_COLS, decodable, decode_player, nonempty


class Players(Repository):
    """The players table (``store.players``)."""

    async def get_or_create_user(self, discord_id: int, name: str) -> Player:
        """The player for a Discord user; refreshes ``display_name`` if it changed."""
        return await self._get_or_create("user", "discord_id", int(discord_id), name)

    async def get_or_create_agent(self, agent_key: str, name: str) -> Player:
        """The player for an AI agent (``agent_key`` e.g. ``'connect4:medium'``)."""
        return await self._get_or_create(
            "agent", "agent_key", nonempty("agent_key", agent_key), name
        )

    async def get_or_create_local(self, local_name: str, name: str | None = None) -> Player:
        """A console (non-Discord) human, unique by ``local_name``; kind ``'local'``."""
        local_name = nonempty("local_name", local_name)
        return await self._get_or_create("local", "local_name", local_name, name or local_name)

    async def _get_or_create(
        self, kind: PlayerKind, column: str, ident: int | str, name: str
    ) -> Player:
        name = nonempty("name", name)
        select = f"SELECT {PLAYER_COLS} FROM players WHERE {column} = ?"
        # Fast path without a write transaction (one fsync saved per click).
        rows = await self._db.fetchall(select, (ident,))
        if rows and decode_player(rows[0]).display_name == name:
            return decode_player(rows[0])
        async with self._db.write("player") as conn:
            now = self._db.now()
            select += conn.dialect.lock
            rows = await query(conn, select, (ident,))
            if not rows:
                # DO NOTHING: on PostgreSQL another process may add the player first (the
                # insert waits for its commit); then it is read like any other.
                rows = await query(
                    conn,
                    f"INSERT INTO players (kind, {column}, display_name, created_at, updated_at)"
                    f" VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING {PLAYER_COLS}",
                    (kind, ident, name, now, now),
                ) or await query(conn, select, (ident,))
            if decode_player(rows[0]).display_name != name:
                rows = await query(
                    conn,
                    "UPDATE players SET display_name = ?, updated_at = ? WHERE id = ?"
                    f" RETURNING {PLAYER_COLS}",
                    (name, now, rows[0]["id"]),
                )
            return decode_player(rows[0])

    async def get(self, player_id: int) -> Player | None:
        rows = await self._db.fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE id = ?", (player_id,)
        )
        return decode_player(rows[0]) if rows else None

    async def get_many(self, player_ids: Iterable[int]) -> dict[int, Player]:
        """Players by id; ids that do not exist are simply absent from the result."""
        async with self._db.read() as conn:
            return await players_by_id(conn, player_ids)

    async def find_local(self, local_name: str) -> Player | None:
        rows = await self._db.fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE local_name = ?", (local_name.strip(),)
        )
        return decode_player(rows[0]) if rows else None

    async def find_agents(self, keys: Iterable[str]) -> list[Player]:
        """The agent players with these keys (`game:name`), in key order; absent ones left out."""
        wanted = sorted(set(keys))
        if not wanted:
            return []
        rows = await self._db.fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE kind = 'agent' AND agent_key IN"
            f" ({', '.join('?' * len(wanted))}) ORDER BY agent_key",
            wanted,
        )
        return decodable(rows, decode_player)

    async def find_user(self, discord_id: int) -> Player | None:
        rows = await self._db.fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE discord_id = ?", (int(discord_id),)
        )
        return decode_player(rows[0]) if rows else None


async def players_by_id(conn: Tx, ids: Iterable[int]) -> dict[int, Player]:
    """The players with these ids that exist and decode (in the caller's transaction)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    # One JSON parameter keeps the statement text constant however many ids there are.
    rows = await query(
        conn,
        f"SELECT {PLAYER_COLS} FROM players WHERE id IN ({conn.dialect.ids_from_json})",
        (json.dumps(wanted),),
    )
    return {p.id: p for p in decodable(rows, decode_player)}
