"""The `learning` lease: among shard processes on one database, the one holding it learns and
trains for all (db/leases.py); it is renewed when half of it is left. A process alone on its
database always may."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from db.store import Store

LEASE = "learning"
LEASE_SECONDS = 30.0


class LearningLease:
    """This process's hold on the `learning` lease. `taken` is called when it takes the lease
    anew (another process may have written the memory meanwhile)."""

    def __init__(self, store: Store, taken: Callable[[], None]) -> None:
        self._store = store
        self._taken = taken
        #: This process among shard processes (the lease's holder name).
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._lease_until = 0.0  # monotonic; the lease is not held after this

    async def hold(self) -> bool:
        """Whether this process may learn and train now: always when it is the only bot
        process on its database; among shard processes only while it holds the `learning`
        lease (taken or renewed here). A lease taken anew reloads the memory cache: another
        process may have written meanwhile."""
        if self._store.shards.count == 1:
            return True
        now = time.monotonic()
        if now < self._lease_until - LEASE_SECONDS / 2:
            return True
        held = await self._store.leases.take(LEASE, self.holder, LEASE_SECONDS)
        if held and now >= self._lease_until:
            self._taken()
        self._lease_until = now + LEASE_SECONDS if held else 0.0
        return held

    def may_train(self) -> bool:
        """Whether a training job may start here now (the lease is held, or not needed)."""
        return self._store.shards.count == 1 or time.monotonic() < self._lease_until

    async def drop(self) -> None:
        """Give the lease up, if held: another shard process may take over at once."""
        if self._lease_until:
            self._lease_until = 0.0
            with contextlib.suppress(Exception):
                await self._store.leases.drop(LEASE, self.holder)
