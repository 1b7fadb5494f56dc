"""Each server's settings (``store.settings``): one JSON object per guild holding the keys a
server set (a key absent: the bot's default), who changed them last, and every change with who
made it (``settings_log``). The store keeps any JSON value under a short key; what the keys
mean and which values they take is the lobby's (`lobby/settings.py`), checked before a write."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .connection import Record, Repository, query
from .errors import BadValueError, PlayerNotFoundError
from .rows import Row, decodable

#: A setting's name: lower-case letters, digits and `_`, as the lobby names them.
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
#: The most text one server's settings may take as JSON (they are read at every start).
MAX_SETTINGS_TEXT = 8192


@dataclass(frozen=True, slots=True)
class GuildSettings:
    """The settings a server set, and who changed them last (None: nobody yet)."""

    guild_id: int
    values: dict[str, Any]
    updated_by: int | None
    updated_at: float | None


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """One change of a server's settings: who made it, and each key's (old, new) value (None:
    the default)."""

    id: int
    guild_id: int
    player_id: int
    changes: dict[str, tuple[Any, Any]]
    created_at: float


class Settings(Repository):
    """The guild_settings and settings_log tables."""

    async def get(self, guild_id: int) -> GuildSettings:
        """A server's settings (none set: an empty object). A row that does not decode is
        logged and read as none set, so a damaged row never stops a start."""
        rows = await self._db.fetchall(
            "SELECT guild_id, settings, updated_by, updated_at FROM guild_settings"
            " WHERE guild_id = ?",
            (_guild(guild_id),),
        )
        found = decodable(rows, _decode)
        return found[0] if found else GuildSettings(guild_id, {}, None, None)

    async def change(
        self, guild_id: int, player_id: int, changes: Mapping[str, Any]
    ) -> GuildSettings:
        """Set these keys (a value None: back to the default) in one transaction, with a log
        row naming `player_id`. BadValueError for a bad key or a value that is not plain JSON
        (nothing written); PlayerNotFoundError for a player that does not exist."""
        guild_id = _guild(guild_id)
        for key, value in changes.items():
            if not isinstance(key, str) or not _KEY.match(key):
                raise BadValueError("setting", key, "a setting's name")
            _check_json(key, value)
        async with self._db.write("change_settings") as conn:
            if not await query(conn, "SELECT 1 FROM players WHERE id = ?", (player_id,)):
                raise PlayerNotFoundError(player_id)
            now = self._db.now()
            # The row first, then its lock: two first changes at once (PostgreSQL) apply both.
            await conn.execute(
                "INSERT INTO guild_settings (guild_id, settings, updated_at) VALUES (?, '{}', ?)"
                " ON CONFLICT (guild_id) DO NOTHING",
                (guild_id, now),
            )
            rows = await query(
                conn,
                "SELECT guild_id, settings, updated_by, updated_at FROM guild_settings"
                " WHERE guild_id = ?" + conn.dialect.lock,
                (guild_id,),
            )
            found = decodable(rows, _decode)
            values = dict(found[0].values) if found else {}
            log = {k: (values.get(k), v) for k, v in changes.items() if values.get(k) != v}
            for key, value in changes.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            text = json.dumps(values, allow_nan=False, sort_keys=True, separators=(",", ":"))
            if len(text) > MAX_SETTINGS_TEXT:
                raise BadValueError("settings", f"{len(text)} characters", "that long")
            await conn.execute(
                "UPDATE guild_settings SET settings = ?, updated_by = ?, updated_at = ?"
                " WHERE guild_id = ?",
                (text, player_id, now, guild_id),
            )
            if log:
                await conn.execute(
                    "INSERT INTO settings_log (guild_id, player_id, changes, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (guild_id, player_id, json.dumps(log, allow_nan=False), now),
                )
        return GuildSettings(guild_id, values, player_id, now)

    async def history(self, guild_id: int, limit: int = 20) -> list[SettingsChange]:
        """A server's last changes, newest first."""
        rows = await self._db.fetchall(
            "SELECT id, guild_id, player_id, changes, created_at FROM settings_log"
            " WHERE guild_id = ? ORDER BY id DESC LIMIT ?",
            (_guild(guild_id), max(0, int(limit))),
        )
        return decodable(rows, _decode_change)


def _guild(guild_id: int) -> int:
    if type(guild_id) is not int or not 0 <= guild_id < 2**63:
        raise BadValueError("guild", guild_id, "a server's id")
    return guild_id


def _check_json(key: str, value: Any) -> None:
    """Plain JSON (no NaN or infinities, which neither database's JSON takes)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise BadValueError(key, value, "a plain value (finite numbers)") from None


def _decode(row: Record) -> GuildSettings:
    r = Row("guild_settings", row, ("guild_id",))
    return GuildSettings(
        r.get_int("guild_id"), r.json_object("settings"), r.opt_int("updated_by"),
        r.get_float("updated_at"),
    )  # fmt: skip


def _decode_change(row: Record) -> SettingsChange:
    r = Row("settings_log", row, ("id",))
    raw = r.json_object("changes")
    changes: dict[str, tuple[Any, Any]] = {}
    for key, pair in raw.items():
        if not (isinstance(pair, list) and len(pair) == 2):
            raise r.corrupt("changes", f"{key!r} is not an (old, new) pair")
        changes[key] = (pair[0], pair[1])
    return SettingsChange(
        r.get_int("id"), r.get_int("guild_id"), r.get_int("player_id"), changes,
        r.get_float("created_at"),
    )  # fmt: skip
