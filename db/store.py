"""The store: one connection to the database and the repositories over it, each owning the SQL
of its concern (``store.players``, ``store.matches``, ``store.ratings``, ``store.challenges``,
``store.analyses``, ``store.memory``, ``store.outbox``, ``store.leases``, ``store.prefs``,
``store.settings``, ``store.puzzles``, ``store.tournaments``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any, Self

from .analyses import Analyses
from .backend import Backend
from .challenges import Challenges
from .connection import Connection, open_backend
from .leases import Leases
from .matches import Matches
from .memory import AgentMemory, Outbox
from .players import Players
from .prefs import Prefs
from .puzzles import Puzzles
from .ratings import Ratings
from .settings import Settings
from .shards import Shards
from .tournaments import Tournaments

__all__ = ["Opener", "Store"]


class Store:
    """Async persistence for players, matches, moves, ratings, challenges, analyses, agent
    memory, the outbox, leases, what each person prefers and each server's settings.

    Create with ``store = await Store.open(path)`` (close with ``await store.close()``) or
    ``async with Store.open(path) as store:``.

    Every repository holds the same :class:`~db.connection.Connection`: every method of every
    repository goes through the same lock and the same ``write`` (one transaction per call),
    so the one-transaction-per-step guarantees read the same in each.
    """

    def __init__(self, connection: Connection) -> None:
        """Private: use :meth:`open`, which opens the backend and migrates."""
        self.connection = connection
        self.players = Players(connection)
        self.matches = Matches(connection)
        self.ratings = Ratings(connection)
        self.challenges = Challenges(connection)
        self.analyses = Analyses(connection)
        self.memory = AgentMemory(connection)
        self.outbox = Outbox(connection)
        self.leases = Leases(connection)
        self.prefs = Prefs(connection)
        self.settings = Settings(connection)
        self.tournaments = Tournaments(connection)
        self.puzzles = Puzzles(connection)

    @classmethod
    def open(
        cls, target: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> Opener:
        """Open and migrate: a SQLite file (creating parent directories and the file if
        needed), or a PostgreSQL database given as a ``postgresql://`` URL.

        ``clock`` supplies timestamps; tests may inject a fake one.
        """
        return Opener(target, clock)

    async def close(self) -> None:
        """Wait for in-flight operations, then close.  Idempotent."""
        await self.connection.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def path(self) -> str:
        """The database's name: its path, or its URL without the password."""
        return self.connection.backend.name

    @property
    def closed(self) -> bool:
        return self.connection.backend.closed

    @property
    def backend(self) -> Backend:
        return self.connection.backend

    @property
    def shards(self) -> Shards:
        """The guilds this process owns (see :class:`~db.connection.Connection`)."""
        return self.connection.shards

    @shards.setter
    def shards(self, shards: Shards) -> None:
        self.connection.shards = shards


class Opener:
    """What :meth:`Store.open` returns: await it, or use it with ``async with``."""

    def __init__(self, target: str | os.PathLike[str], clock: Callable[[], float]) -> None:
        self._target = target
        self._clock = clock
        self._opened: Store | None = None

    async def _open(self) -> Store:
        return Store(Connection(await open_backend(self._target), self._clock))

    def __await__(self) -> Generator[Any, None, Store]:
        return self._open().__await__()

    async def __aenter__(self) -> Store:
        self._opened = await self._open()
        return self._opened

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._opened is not None:
            await self._opened.close()
