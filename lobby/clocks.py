"""Clocks and restarts: turns that ran out, the clock's pass, and taking matches up again after
a restart. Each match on its own: one that fails is logged, and set aside when a retry cannot
mend it; the others go on."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace

from db import errors as dberr
from db.store import Store
from engine.warm import warm_rules
from lobby.announce import Announcer
from lobby.boundary import boundary
from lobby.challenges import Challenges
from lobby.matches import Matches, only_pass, result_of
from lobby.memory import LearningMemory
from lobby.outbox import Outbox
from lobby.records import TRANSIENT, LobbyConfig, Snapshot
from lobby.tasks import Tasks
from lobby.turns import Turns

log = logging.getLogger(__name__)

#: A clock pass this many seconds later than scheduled (the process was stopped or starved,
#: or the wall clock jumped ahead) means nobody could move meanwhile: people to move get the
#: resume grace. Short: a stop of 5 s across a person's last seconds already took them from
#: them; a busy loop past it only gives people time, never takes it.
GAP_SECONDS = 3.0


class Clocks:
    """The lobby's clocks and restarts: the clock's pass, the matches failing in it, and where
    nobody can move now (no person's clock may run out there)."""

    def __init__(
        self,
        store: Store,
        config: LobbyConfig,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        *,
        matches: Matches,
        turns: Turns,
        challenges: Challenges,
        memory: LearningMemory,
        outbox: Outbox,
        announce: Announcer,
        tasks: Tasks,
    ) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._sleep = sleep
        self._matches = matches
        self._turns = turns
        self._challenges = challenges
        self._memory = memory  # warmed up at a restart
        self._outbox = outbox  # kicked at a restart and, among shard processes, by the clock
        self._announce = announce
        self._tasks = tasks
        #: Failures in a row of each match in the clock or at resume (`max_failures`).
        self._failures: dict[int, int] = {}
        self._matches.when_ended(self._forget)
        #: Clock failures already logged (each kind once).
        self._clock_faults: set[tuple[str, str, str]] = set()
        #: Where nobody can move now, so no person's clock may run out (`pause_clocks`): None
        #: while Discord cannot reach the bot, a guild id while that server is out; and where
        #: the link is back but the grace is not given yet.
        self._paused: set[int | None] = set()
        self._grace_owed: set[int | None] = set()
        #: Guilds the bot left and channels deleted (guild id, channel id) whose live matches
        #: are not all ended yet (the store failed when they went): the clock ends them, and
        #: none of them ends on time meanwhile.
        self._out_of_reach: set[tuple[int | None, int | None]] = set()

    def _forget(self, match_id: int) -> None:
        """An ended match's failures go with it."""
        self._failures.pop(match_id, None)

    @boundary
    async def expire_turns(self) -> list[Snapshot]:
        """End every match whose player to move ran out of time (each on its own: one that
        fails is logged, and set aside if it keeps failing)."""
        ended = []
        now = self._clock()
        for match_id in await self._store.matches.expired_turn_ids(now):
            try:
                snap = await self._expire(match_id, now)
            except Exception as exc:
                await self._failed(match_id, "clock", exc)
                continue
            if snap is not None:
                ended.append(snap)
                await self._announce.match(snap)
        return ended

    async def _expire(self, match_id: int, now: float) -> Snapshot | None:
        if self._matches.unsure(match_id):
            return None  # shown first (with a grace), never lost to what nobody saw
        async with self._matches.lock(match_id):
            snap = await self._matches.snapshot(match_id)
            deadline = snap.match.turn_deadline
            if not snap.live or deadline is None or deadline > now:
                return None
            if self._unreachable(snap.match.guild_id, snap.match.channel_id):
                return None  # nobody can see it: it ends unrated (`abandon_in`), not on time
            if self._held(snap.match.guild_id):
                return None  # nobody could move there: the grace comes first
            loser = snap.state.to_move()
            # A player who never moved abandons the match (unrated) rather than losing it.
            never_moved = snap.match.ply <= loser
            try:
                if never_moved:
                    return await self._matches.finish(
                        snap, "abandoned", None, "abandon", snap.match.ply
                    )
                return await self._matches.finish(
                    snap, "finished", result_of(1 - loser), "time", snap.match.ply
                )
            except (dberr.StaleMoveError, dberr.MatchNotLiveError):
                return None  # a move or resignation landed at the last moment

    @boundary
    async def tick(self, look: Callable[[], None] | None = None) -> None:
        """One pass of the clock: show what a lost answer left unshown, expire turns and
        challenges, start any agent turn that is not running (its task failed, say, on a
        store error) and, among shard processes, kick the learning. Each part on its own: a
        busy or full database only postpones that part to the next pass, and a part that
        fails otherwise never keeps the others from running. `look` is called before each
        part (`run_clock` watches for gaps in the bot's time with it)."""
        parts: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("grace after a gap", self._give_grace_owed),
            ("matches out of reach", self._abandon_out_of_reach),
            ("showing unsure steps", self._show_unsure),
            ("turns", self.expire_turns),
            ("challenges", self._challenges.expire_challenges),
            ("agent restarts", self._restart_turns),
        ]
        if self._store.shards.count > 1:
            # Among shard processes one learns for all (the `learning` lease): the kick keeps
            # its lease and applies what other processes' matches left in the outbox; in the
            # others it finds the lease taken and stops, or takes it if its holder died.
            parts.append(("learning kick", self._kick_learning))
        for name, part in parts:
            if look is not None:
                look()
            try:
                await part()
            except TRANSIENT as exc:
                log.warning("clock: %s postponed: %s", name, exc)
            except Exception as exc:
                self._part_failed(name, exc)

    async def _kick_learning(self) -> None:
        self._outbox.kick()

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
        for match_id in self._matches.unsure_ids():
            if self._tasks.closing:
                return
            try:
                snap = await self._matches.converge(match_id)
            except Exception as exc:
                await self._failed(match_id, "showing", exc)
                continue
            await self._announce.match(snap)
            self._turns.schedule(snap)

    async def _restart_turns(self) -> None:
        for match_id in await self._store.matches.agent_turn_ids():
            if self._turns.has_turn(match_id) or self._tasks.closing:
                continue
            try:
                self._turns.schedule(await self._matches.snapshot(match_id))
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
        self._tasks.spawn(self._memory.warm())
        self._outbox.kick()  # learning a kill left in the outbox
        out = []
        for match_id in await self._store.matches.live_ids():
            if only is not None and match_id not in only:
                continue  # started by this process meanwhile (the console's prompt comes first)
            try:
                snap = await self._retrying(functools.partial(self._resume_one, match_id))
            except Exception as exc:
                await self._failed(match_id, "resume", exc, at_once=True)
                continue
            await self._announce.match(snap)
            if snap.live:
                out.append(snap)
                self._turns.schedule(snap)
        for match_id in await self._store.matches.unshown_finals():  # ended, but maybe not shown so
            try:
                await self._announce.match(await self._matches.snapshot(match_id))
            except Exception as exc:
                await self._failed(match_id, "resume", exc, at_once=True)
        return out

    @boundary
    async def final_shown(self, match_id: int) -> None:
        """A front end showed the end of this match (a restart need not show it again).
        Only a saving: if a busy or full database refuses the note, a restart shows the end
        once more."""
        try:
            await self._store.matches.final_shown(match_id)
        except TRANSIENT as exc:
            log.warning("match %s: cannot note that its end is shown: %s", match_id, exc)

    async def _retrying(self, step: Callable[[], Awaitable[Snapshot]]) -> Snapshot:
        """A restart's step, tried again after a busy or full database (briefly: a restart
        that skipped it would leave a person without their grace)."""
        pause = self._config.store_retry_seconds
        for attempt in range(self._config.store_retries + 1):
            try:
                return await step()
            except TRANSIENT:
                if attempt == self._config.store_retries:
                    raise
                await self._sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")

    async def _resume_one(self, match_id: int) -> Snapshot:
        async with self._matches.lock(match_id):
            snap = await self._matches.snapshot(match_id)
            if snap.state.is_over() or only_pass(snap.state):
                # Stored by a version that wrote a move, its passes and the finish apart.
                return await self._matches.commit(snap, [])
            grace_until = self._clock() + self._config.resume_grace
            deadline = snap.match.turn_deadline
            if not snap.seat_to_move.is_agent and (deadline is None or deadline < grace_until):
                match = await self._store.matches.set_turn_deadline(match_id, grace_until)
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
        if not (corrupt or at_once or count >= self._config.max_failures):
            log.warning("match %s: %s failed (%d): %s", match_id, where, count, exc)
            return
        log.error("match %s set aside: %s failed: %s", match_id, where, exc, exc_info=exc)
        try:
            await self._store.matches.set_aside(match_id, f"{where}: {type(exc).__name__}: {exc}")
        except Exception:
            log.exception("cannot set match %s aside", match_id)
        self._failures.pop(match_id, None)

    # ------------------------------------------------------------------ gaps

    def pause_clocks(self, guild_id: int | None = None) -> None:
        """Nobody can move: Discord cannot reach the bot (`guild_id` None), or one server is
        out. No person's clock runs out there until `resume_clocks` gives the grace (agents
        go on playing)."""
        if guild_id not in self._paused:
            log.warning("clocks paused: %s", _scope(guild_id))
        self._paused.add(guild_id)

    @boundary
    async def resume_clocks(self, guild_id: int | None = None) -> None:
        """The link is back after `pause_clocks`: every person to move there gets at least the
        resume grace, as after a restart (the clock's next pass tries again if the store is
        busy; until then nobody there is timed out). Nothing happens if it was not paused."""
        if guild_id not in self._paused:
            return
        self._paused.discard(guild_id)
        self._grace_owed.add(guild_id)
        log.warning("clocks resumed with a grace: %s", _scope(guild_id))
        try:
            await self._give_grace_owed()
        except TRANSIENT as exc:  # still owed: the clock's next pass gives it
            log.warning("the grace is not given yet: %s", exc)

    def _held(self, guild_id: int | None) -> bool:
        """Whether a person's clock in this guild must not run out now."""
        held = self._paused | self._grace_owed
        return None in held or (guild_id is not None and guild_id in held)

    async def _give_grace_owed(self) -> None:
        """Give the grace wherever the link came back or a gap was seen (each scope once)."""
        for scope in list(self._grace_owed):
            if scope in self._paused:
                continue  # out again: the grace comes when it is back
            await self._give_grace(scope)
            self._grace_owed.discard(scope)

    async def _give_grace(self, guild_id: int | None) -> None:
        """Every live match (of one guild, or all) with a person to move whose clock ends
        within the grace: it now ends a grace from now. A match that fails is left to the
        next pass (the grace stays owed)."""
        grace_until = self._clock() + self._config.resume_grace
        failed: BaseException | None = None
        for match_id in await self._store.matches.expired_turn_ids(grace_until):
            try:
                await self._retrying(functools.partial(self._grace_one, match_id, guild_id))
            except Exception as exc:
                await self._failed(match_id, "grace", exc)
                failed = exc
        if failed is not None and isinstance(failed, TRANSIENT):
            raise failed

    async def _grace_one(self, match_id: int, guild_id: int | None) -> Snapshot:
        async with self._matches.lock(match_id):
            snap = await self._matches.snapshot(match_id)
            if guild_id is not None and snap.match.guild_id != guild_id:
                return snap
            grace_until = self._clock() + self._config.resume_grace
            deadline = snap.match.turn_deadline
            person_to_move = snap.live and not snap.seat_to_move.is_agent
            if person_to_move and deadline is not None and deadline < grace_until:
                match = await self._store.matches.set_turn_deadline(match_id, grace_until)
                snap = replace(snap, match=match)
            return snap

    @boundary
    async def abandon_in(
        self, *, guild_id: int | None = None, channel_id: int | None = None
    ) -> list[Snapshot]:
        """End unrated every live match shown in a guild the bot left, or in a channel that
        was deleted (`unreachable`): nobody can see or play them any more. Each on its own;
        if the store fails meanwhile, the clock ends the rest (and none ends on time)."""
        self._out_of_reach.add((guild_id, channel_id))
        try:
            ended = await self._abandon_scope(guild_id, channel_id)
        except TRANSIENT as exc:
            log.warning(
                "live matches out of reach (guild %s, channel %s) end later: %s",
                guild_id,
                channel_id,
                exc,
            )
            return []
        self._out_of_reach.discard((guild_id, channel_id))
        return ended

    def _unreachable(self, guild_id: int | None, channel_id: int | None) -> bool:
        return any(
            (g is not None and g == guild_id) or (c is not None and c == channel_id)
            for g, c in self._out_of_reach
        )

    async def _abandon_out_of_reach(self) -> None:
        """The clock's part: end what `abandon_in` could not (a store failure postpones it)."""
        for guild_id, channel_id in sorted(self._out_of_reach, key=repr):
            await self._abandon_scope(guild_id, channel_id)
            self._out_of_reach.discard((guild_id, channel_id))

    async def _abandon_scope(self, guild_id: int | None, channel_id: int | None) -> list[Snapshot]:
        ended = []
        postponed: BaseException | None = None  # kept out of reach until the store answers
        for match_id in await self._store.matches.live_ids_in(
            guild_id=guild_id, channel_id=channel_id
        ):
            try:
                snap = await self._retrying(functools.partial(self._matches.abandon, match_id))
            except TRANSIENT as exc:
                postponed = exc
                continue
            except Exception as exc:
                await self._failed(match_id, "abandon", exc)
                continue
            ended.append(snap)
        if postponed is not None:
            raise postponed
        return ended

    async def run_clock(
        self,
        interval: float = 1.0,
        gap: float = GAP_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Enforce turn clocks and keep agent turns running, forever (a background task).

        Time is looked at before each part of a pass: more than `gap` seconds later than
        expected, by the `monotonic` clock (the process was stopped or starved, or the store
        hung) or by the wall clock (it jumped ahead, or the machine slept: the monotonic
        clock stops then), means nobody could move meanwhile. Then no turn ends before every
        person to move has the resume grace, as after a restart."""
        last = [monotonic(), self._clock()]

        def look() -> None:
            mono, wall = monotonic(), self._clock()
            late = max(mono - last[0], wall - last[1]) - interval
            last[:] = [mono, wall]
            if late > gap:
                log.warning("the clock ran %.0f s late: people to move get a grace", late)
                self._grace_owed.add(None)

        while not self._tasks.closing:
            try:
                await self.tick(look)
            except Exception:  # keep the clock alive; the next tick retries
                log.exception("turn clock tick failed")
            await asyncio.sleep(interval)


def _scope(guild_id: int | None) -> str:
    return "everywhere (Discord is out of reach)" if guild_id is None else f"guild {guild_id}"
