"""Clocks and restarts: turns that ran out, the clock's pass, and taking matches up again after
a restart. Each match on its own: one that fails is logged, and set aside when a retry cannot
mend it; the others go on."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace

from db import errors as dberr
from engine.warm import warm_rules
from lobby.boundary import boundary
from lobby.challenges import Challenges
from lobby.matches import only_pass, result_of
from lobby.records import TRANSIENT, Snapshot

log = logging.getLogger(__name__)


class Clocks(Challenges):
    """The lobby's clocks and restarts."""

    @boundary
    async def expire_turns(self) -> list[Snapshot]:
        """End every match whose player to move ran out of time (each on its own: one that
        fails is logged, and set aside if it keeps failing)."""
        ended = []
        now = self.clock()
        for match_id in await self.store.expired_turn_ids(now):
            try:
                snap = await self._expire(match_id, now)
            except Exception as exc:
                await self._failed(match_id, "clock", exc)
                continue
            if snap is not None:
                ended.append(snap)
                await self._emit(snap)
        return ended

    async def _expire(self, match_id: int, now: float) -> Snapshot | None:
        if match_id in self._unsure:
            return None  # shown first (with a grace), never lost to what nobody saw
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            deadline = snap.match.turn_deadline
            if not snap.live or deadline is None or deadline > now:
                return None
            loser = snap.state.to_move()
            # A player who never moved abandons the match (unrated) rather than losing it.
            never_moved = snap.match.ply <= loser
            try:
                if never_moved:
                    return await self._finish(snap, "abandoned", None, "abandon", snap.match.ply)
                return await self._finish(
                    snap, "finished", result_of(1 - loser), "time", snap.match.ply
                )
            except (dberr.StaleMoveError, dberr.MatchNotLiveError):
                return None  # a move or resignation landed at the last moment

    @boundary
    async def tick(self) -> None:
        """One pass of the clock: show what a lost answer left unshown, expire turns and
        challenges, start any agent turn that is not running (its task failed, say, on a
        store error) and, among shard processes, kick the learning. Each part on its own: a
        busy or full database only postpones that part to the next pass, and a part that
        fails otherwise never keeps the others from running."""
        parts: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("showing unsure steps", self._show_unsure),
            ("turns", self.expire_turns),
            ("challenges", self.expire_challenges),
            ("agent restarts", self._restart_turns),
        ]
        if self.store.shards.count > 1:
            # Among shard processes one learns for all (the `learning` lease): the kick keeps
            # its lease and applies what other processes' matches left in the outbox; in the
            # others it finds the lease taken and stops, or takes it if its holder died.
            parts.append(("learning kick", self._kick_learning))
        for name, part in parts:
            try:
                await part()
            except TRANSIENT as exc:
                log.warning("clock: %s postponed: %s", name, exc)
            except Exception as exc:
                self._part_failed(name, exc)

    async def _kick_learning(self) -> None:
        self.learning.kick()

    def _part_failed(self, name: str, exc: Exception) -> None:
        """A clock part failed for a reason a retry may not mend: logged once per kind of
        failure (not every second), with its traceback; the other parts went on."""
        key = (name, type(exc).__name__, str(exc)[:200])
        if key in self._clock_faults:
            return
        if len(self._clock_faults) >= 1000:
            self._clock_faults.clear()
        self._clock_faults.add(key)
        log.error("clock: %s failed: %s", name, exc, exc_info=exc)

    async def _show_unsure(self) -> None:
        """Matches whose last step may have been stored though its answer was lost: shown as
        stored (their listeners get the stored state), with a person's grace."""
        for match_id in list(self._unsure):
            if self._closing:
                return
            try:
                snap = await self._converge(match_id)
            except Exception as exc:
                await self._failed(match_id, "showing", exc)
                continue
            await self._emit(snap)
            self._schedule(snap)

    async def _restart_turns(self) -> None:
        for match_id in await self.store.agent_turn_ids():
            if match_id in self._turns or self._closing:
                continue
            try:
                self._schedule(await self.snapshot(match_id))
            except Exception as exc:
                await self._failed(match_id, "turn", exc)

    @boundary
    async def resume(self, only: Collection[int] | None = None) -> list[Snapshot]:
        """After a restart: mend what a kill interrupted, extend clocks by the grace, announce
        every live board once and restart agent turns; the live matches.

        Each match is handled on its own: one that fails is logged and set aside if it cannot
        be mended, and the others go on. `only`: the matches to take up (those live before
        this process could start any), all live ones if None.

        First the rule kernels are loaded in a thread: numba's first use in a process takes
        about half a second (seconds on a first run), which must not freeze the event loop
        at the first request.
        """
        await asyncio.to_thread(warm_rules)
        self.spawn(self.learning.warm())
        self.learning.kick()  # learning a kill left in the outbox
        out = []
        for match_id in await self.store.live_match_ids():
            if only is not None and match_id not in only:
                continue  # started by this process meanwhile (the console's prompt comes first)
            try:
                snap = await self._retrying(functools.partial(self._resume_one, match_id))
            except Exception as exc:
                await self._failed(match_id, "resume", exc, at_once=True)
                continue
            await self._emit(snap)
            if snap.live:
                out.append(snap)
                self._schedule(snap)
        for match_id in await self.store.unshown_finals():  # ended, but maybe not shown so
            try:
                await self._emit(await self.snapshot(match_id))
            except Exception as exc:
                await self._failed(match_id, "resume", exc, at_once=True)
        return out

    @boundary
    async def final_shown(self, match_id: int) -> None:
        """A front end showed the end of this match (a restart need not show it again).
        Only a saving: if a busy or full database refuses the note, a restart shows the end
        once more."""
        try:
            await self.store.final_shown(match_id)
        except TRANSIENT as exc:
            log.warning("match %s: cannot note that its end is shown: %s", match_id, exc)

    async def _retrying(self, step: Callable[[], Awaitable[Snapshot]]) -> Snapshot:
        """A restart's step, tried again after a busy or full database (briefly: a restart
        that skipped it would leave a person without their grace)."""
        pause = self.config.store_retry_seconds
        for attempt in range(self.config.store_retries + 1):
            try:
                return await step()
            except TRANSIENT:
                if attempt == self.config.store_retries:
                    raise
                await self.sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")

    async def _resume_one(self, match_id: int) -> Snapshot:
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            if snap.state.is_over() or only_pass(snap.state):
                # Stored by a version that wrote a move, its passes and the finish apart.
                return await self._commit(snap, [])
            grace_until = self.clock() + self.config.resume_grace
            deadline = snap.match.turn_deadline
            if not snap.seat_to_move.is_agent and (deadline is None or deadline < grace_until):
                match = await self.store.set_turn_deadline(match_id, grace_until)
                snap = replace(snap, match=match)
            return snap

    async def _failed(
        self, match_id: int, where: str, exc: BaseException, *, at_once: bool = False
    ) -> None:
        """A match failed in the clock or at resume: log it; set it aside when a retry cannot
        mend it (a corrupt row, or failing `max_failures` times in a row). A busy or full
        database is never the match's fault: it is only logged (the clock retries)."""
        if isinstance(exc, TRANSIENT):
            log.warning("match %s: %s failed, will retry: %s", match_id, where, exc)
            return
        count = self._failures[match_id] = self._failures.get(match_id, 0) + 1
        corrupt = isinstance(exc, dberr.CorruptRowError | ValueError | KeyError | TypeError)
        if not (corrupt or at_once or count >= self.config.max_failures):
            log.warning("match %s: %s failed (%d): %s", match_id, where, count, exc)
            return
        log.error("match %s set aside: %s failed: %s", match_id, where, exc, exc_info=exc)
        try:
            await self.store.set_aside(match_id, f"{where}: {type(exc).__name__}: {exc}")
        except Exception:
            log.exception("cannot set match %s aside", match_id)
        self._failures.pop(match_id, None)

    async def run_clock(self, interval: float = 1.0) -> None:
        """Enforce turn clocks and keep agent turns running, forever (a background task)."""
        while not self._closing:
            try:
                await self.tick()
            except Exception:  # keep the clock alive; the next tick retries
                log.exception("turn clock tick failed")
            await asyncio.sleep(interval)
