"""The records the lobby hands to front ends: the store's dataclasses, named here so that a
front end imports the lobby only (the layer contract in pyproject.toml keeps it so)."""

from __future__ import annotations

from db.models import (
    Challenge,
    HistoryEntry,
    LeaderboardEntry,
    Match,
    MemoryInfo,
    MoveRow,
    Player,
    PlayerStats,
    Rating,
    RatingPoint,
)

__all__ = [
    "Challenge",
    "HistoryEntry",
    "LeaderboardEntry",
    "Match",
    "MemoryInfo",
    "MoveRow",
    "Player",
    "PlayerStats",
    "Rating",
    "RatingPoint",
]
