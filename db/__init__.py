"""Persistence layer: the only code in the project that touches the database (a SQLite file
by default, or PostgreSQL: docs/scaling.md).

Usage::

    from db import Store

    async with Store.open("data/boardbot.db") as store:  # or a "postgresql://..." URL
        me = await store.players.get_or_create_user(1234, "alice")
"""

from .errors import (
    BackendError,
    CorruptDatabaseError,
    CorruptError,
    CorruptRowError,
    FullError,
    MatchNotFoundError,
    MatchNotLiveError,
    MigrationError,
    NotFoundError,
    PlayerNotFoundError,
    RefusedError,
    SchemaTooNewError,
    StaleMoveError,
    StaleRatingError,
    StoreClosedError,
    StoreError,
    TransientError,
)
from .matches import AUTO
from .models import (
    Finish,
    HistoryEntry,
    LeaderboardEntry,
    Match,
    MemoryInfo,
    MemoryWrite,
    MoveRow,
    NewMove,
    OutboxItem,
    Player,
    PlayerStats,
    Rating,
)
from .ratings import RatingFn
from .store import Store

__all__ = [
    "AUTO",
    "BackendError",
    "CorruptDatabaseError",
    "CorruptError",
    "CorruptRowError",
    "Finish",
    "FullError",
    "HistoryEntry",
    "LeaderboardEntry",
    "Match",
    "MatchNotFoundError",
    "MatchNotLiveError",
    "MemoryInfo",
    "MemoryWrite",
    "MigrationError",
    "MoveRow",
    "NewMove",
    "NotFoundError",
    "OutboxItem",
    "Player",
    "PlayerNotFoundError",
    "PlayerStats",
    "Rating",
    "RatingFn",
    "RefusedError",
    "SchemaTooNewError",
    "StaleMoveError",
    "StaleRatingError",
    "Store",
    "StoreClosedError",
    "StoreError",
    "TransientError",
]
