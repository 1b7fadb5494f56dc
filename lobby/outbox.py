"""Learning from every finished match, exactly once, through the store's outbox: the finishing
transaction writes an outbox row; here it is applied in the background (the stored moves
replayed, every memory it changes written in one transaction that also deletes the row). How and
why: docs/learning.md, "The bot side"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from db.errors import TransientError
from db.models import MemoryWrite
from engine.agents.base import AgentSpec, LearningAgent
from engine.games import new_game
from engine.games.base import GameState, Move
from engine.learning import apply_learning, learning_seats, replay
from lobby.lease import LearningLease
from lobby.memory import LearningMemory, MemoryId

if TYPE_CHECKING:
    from db.models import Match, OutboxItem
    from db.store import Store

log = logging.getLogger(__name__)

SeatSpecs = Callable[["Match"], Awaitable[list[tuple[int, AgentSpec]]]]

#: The outbox kind of "learn from this finished match".
LEARN = "learn"


class Outbox:
    """The outbox's learning, applied in the background (while this process holds the lease)."""

    def __init__(
        self,
        store: Store,
        memory: LearningMemory,
        lease: LearningLease,
        seat_specs: SeatSpecs | None = None,
    ) -> None:
        self._store = store
        self._memory = memory
        self._lease = lease
        #: The (seat, spec) of a finished match's agent seats (the lobby knows them).
        self.seat_specs = seat_specs
        self.retry_seconds = 1.0  # after a failed outbox row, before the next attempt
        self._drainer: asyncio.Task[None] | None = None
        self._more = False
        self._closing = False
        #: How many matches were learned from, and how many learning attempts failed.
        self.learned = 0
        self.failures = 0

    async def learn_match(
        self,
        game: str,
        variant: str,
        match_id: int,
        seats: Sequence[tuple[int, AgentSpec]],
        result: str,
        *,
        outbox_id: int | None = None,
    ) -> int:
        """Learn from a finished match (its moves are read from the store).

        `seats` are the (seat, spec) of its agent seats; `result` the match result ("0", "1"
        or "draw"). Every memory it changes is written in ONE transaction, which also deletes
        the outbox row `outbox_id` (nothing is written if that row is already gone: exactly
        once). Returns how many memories were written.
        """
        groups: dict[MemoryId, tuple[LearningAgent, list[int]]] = {}
        for seat, spec in seats:
            agent = self._memory.agent(spec, game)
            if agent is not None:
                mid = (agent.memory_kind, agent.memory_name)
                groups.setdefault(mid, (agent, []))[1].append(seat)
        if not groups:
            if outbox_id is not None:
                await self._store.outbox.done(outbox_id)
            return 0
        states, moves = await self.replay(game, variant, match_id)
        winner = None if result == "draw" else int(result)
        async with contextlib.AsyncExitStack() as locks:
            for mid in sorted(groups):  # one order everywhere: no deadlock between memories
                await locks.enter_async_context(self._memory.lock(mid))
            writes: list[MemoryWrite] = []
            for (kind, name), (agent, held) in groups.items():
                learners = learning_seats(agent, held)
                keys = [k for seat in learners for k in agent.learn_keys(states, moves, seat)]
                rows = await self._memory.rows(kind, name, keys)
                new = apply_learning(agent, rows, states, moves, winner, learners)
                if keys or new:  # settings that keep no memory (a fixed grid) write nothing
                    writes.append(MemoryWrite(kind, name, new, 1, "matches"))
            if not await self._store.memory.apply(writes, outbox_id=outbox_id):
                return 0  # applied before (a retry after a kill)
            for w in writes:
                self._memory.cached_put(w.kind, w.name, w.rows, w.games)
        self.learned += 1
        return len(writes)

    async def replay(
        self, game: str, variant: str, match_id: int
    ) -> tuple[list[GameState], list[Move]]:
        """The positions before each stored move, and the moves."""
        start = new_game(game, variant)
        moves = [start.parse_move(row.move) for row in await self._store.matches.moves(match_id)]
        return replay(start, (), moves), moves

    def kick(self) -> None:
        """Apply the outbox's pending learning in the background (started if not running)."""
        if self._closing:
            return
        self._more = True
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain_outbox())

    async def _drain_outbox(self) -> None:
        while self._more:
            self._more = False
            try:
                if not await self._lease.hold():
                    return  # another shard process learns (its clock kicks it)
            except TransientError as exc:  # a busy or lost database: later
                log.warning("cannot take the learning lease: %s", exc)
                self._more = True
                await asyncio.sleep(self.retry_seconds)
                continue
            for item in await self._store.outbox.pending(LEARN):
                if self._closing:
                    return
                try:
                    await self._apply(item)
                except Exception as exc:
                    # A busy or full database is retried later; anything else would fail the
                    # same way again, so the row is kept for inspection but not retried.
                    transient = isinstance(exc, TransientError)
                    self.failures += 0 if transient else 1
                    log.log(
                        logging.WARNING if transient else logging.ERROR,
                        "learning failed for match #%s",
                        item.match_id,
                        exc_info=not transient,
                    )
                    with contextlib.suppress(Exception):
                        await self._store.outbox.failed(
                            item.id, f"{type(exc).__name__}: {exc}", final=not transient
                        )
                    if transient:
                        self._more = True
                        await asyncio.sleep(self.retry_seconds)

    async def _apply(self, item: OutboxItem) -> None:
        match = await self._store.matches.get(item.match_id) if item.match_id is not None else None
        if match is None or match.result is None or self.seat_specs is None:
            await self._store.outbox.done(item.id)  # nothing to learn from
            return
        seats = await self.seat_specs(match)
        await self.learn_match(
            match.game, match.variant, match.id, seats, match.result, outbox_id=item.id
        )

    async def drain(self) -> None:
        """Wait until the outbox's learning has been applied (tests, shutdown)."""
        self.kick()
        while self._drainer is not None and not self._drainer.done():
            await asyncio.shield(self._drainer)

    async def close(self, timeout: float = 10.0) -> None:
        """Apply pending match learning (at most `timeout` s; what is left stays in the outbox
        for the next start), then stop."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.drain(), timeout)
        self._closing = True
        if self._drainer is not None:
            self._drainer.cancel()
            await asyncio.gather(self._drainer, return_exceptions=True)
