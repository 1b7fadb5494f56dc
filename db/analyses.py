"""Analyses of finished matches, computed once and kept: the second request is instant. A row
holds the analysis as JSON with the version of the analyser that wrote it, so a better analyser
recomputes rather than shows an old verdict."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .connection import Repository
from .errors import CorruptRowError


class Analyses(Repository):
    """Analyses of finished matches (``store.analyses``)."""

    async def get(self, match_id: int, version: int) -> dict[str, Any] | None:
        """The stored analysis of a match by analyser `version`, or None."""
        rows = await self._db.fetchall(
            "SELECT data FROM analyses WHERE match_id = ? AND version = ?", (match_id, version)
        )
        if not rows:
            return None
        try:
            data = json.loads(rows[0][0])
        except (TypeError, ValueError) as exc:
            raise CorruptRowError("analyses", f"match {match_id}", "data", str(exc)) from exc
        if not isinstance(data, dict):
            raise CorruptRowError("analyses", f"match {match_id}", "data", "not an object")
        return data

    async def put(self, match_id: int, version: int, data: Mapping[str, Any]) -> None:
        """Keep a match's analysis (replacing one by another version)."""
        text = json.dumps(dict(data), allow_nan=False, separators=(",", ":"))
        async with self._db.write("put_analysis") as conn:
            await conn.execute(
                "INSERT INTO analyses (match_id, version, data, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (match_id) DO UPDATE SET version = excluded.version,"
                " data = excluded.data, created_at = excluded.created_at",
                (match_id, version, text, self._db.now()),
            )
