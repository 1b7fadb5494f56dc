"""Learning agents in the lobby, in four parts (how and why: docs/learning.md, "The bot side"):
the agents' memory in this process (`lobby.memory`), learning from every finished match through
the store's outbox (`lobby.outbox`), the `learning` lease among shard processes (`lobby.lease`)
and `/train` jobs (`lobby.training`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lobby.lease import LearningLease
from lobby.memory import LearningMemory
from lobby.outbox import Outbox, SeatSpecs
from lobby.training import Training

if TYPE_CHECKING:
    from db.store import Store


class Learning:
    """The lobby's learning parts over one store and the memory of this process's agents
    (`seat_specs`: the agent seats of a finished match that learn from it). A lease taken anew
    empties the memory cache (another process may have written meanwhile)."""

    def __init__(
        self, store: Store, memory: LearningMemory, seat_specs: SeatSpecs | None = None
    ) -> None:
        self.memory = memory
        self.lease = LearningLease(store, self.memory.invalidate)
        self.outbox = Outbox(store, self.memory, self.lease, seat_specs)
        self.training = Training(self.memory, self.lease)

    async def close(self, timeout: float = 10.0) -> None:
        """Stop training jobs and apply pending match learning (at most `timeout` s; what is
        left stays in the outbox for the next start), then give the lease up."""
        await self.training.close()
        await self.outbox.close(timeout)
        await self.lease.drop()
