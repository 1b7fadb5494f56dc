"""The database's claim: one process at a time on a database (db/instance.py), the store opened
under it, and the claim watched while the bot runs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from boot.errors import StartError

if TYPE_CHECKING:  # imported when used: the first screen must not wait for them
    from boot.settings import Config
    from db.instance import Guard
    from db.store import Store

log = logging.getLogger("boardbot")


async def open_database(config: Config, say: Callable[[str], None]) -> tuple[Store, Guard]:
    """Claim the database and open the store on it; `say` gets the line that names it.

    The guard holds the database until it is released (`shut_down` in bot.py). A database
    another process holds, or one that cannot be opened, is a StartError naming it."""
    from db.backend import is_postgres_url, redact
    from db.errors import StoreError
    from db.instance import AlreadyRunning, guard_for
    from db.store import Store

    name = redact(config.database)
    # A new file is said so: a bot started on another file than the one with the history
    # should not look as if the history were gone.
    new = not is_postgres_url(config.database) and not os.path.exists(config.database)
    guard = guard_for(config.database, config.shards)
    try:
        await guard.claim()
        store = await Store.open(config.database)
        if config.shards is not None:
            store.shards = config.shards
            log.info("running %s", config.shards.label())
    except (StoreError, OSError) as exc:
        guard.release()
        if isinstance(exc, AlreadyRunning):  # its line names the database already
            raise StartError(str(exc)) from None
        raise StartError(f"cannot use the database {name}: {exc}") from None
    say(f"database: {name}" + (" (new, empty)" if new else ""))
    return store, guard


@contextlib.asynccontextmanager
async def claim_watched(guard: Guard, lost: Callable[[], object]) -> AsyncIterator[None]:
    """While the body runs, watch the claim: if it is lost (two processes would run the same
    clocks), `lost()` is called to stop this one, and once the body is over a StartError
    says why."""
    why: list[str] = []

    def on_lost(reason: str) -> None:
        why.append(reason)
        lost()

    watching = asyncio.ensure_future(guard.watch(on_lost))
    try:
        yield
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    if why:
        raise StartError(why[0])
