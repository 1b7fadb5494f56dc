"""The lobby's background tasks (agent turns, the learning's warm-up): each kept until it ends,
its failure logged, all stopped together when the lobby closes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from lobby.joberrors import PoolClosed
from lobby.records import TRANSIENT

log = logging.getLogger(__name__)


class Tasks:
    """Background tasks of the lobby, and whether it is closing."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        #: The lobby is closing: no new agent turn starts, the clock stops.
        self.closing = False

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run a lobby coroutine in the background, keeping a reference and logging failures."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                exc = t.exception()
                if isinstance(exc, PoolClosed) and self.closing:
                    return
                if isinstance(exc, TRANSIENT):  # the clock's next pass takes it up again
                    log.warning("lobby task postponed: the store failed: %s", exc)
                    return
                log.error("lobby task failed", exc_info=exc)

        task.add_done_callback(done)
        return task

    async def close(self) -> None:
        """Stop every task (a commit in flight completes or rolls back whole)."""
        self.closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
