"""Agent turns: an agent to move thinks in the engine pool (never holding the match's lock)
and its move is stored only if the match is still where it was; a failed job is replaced by
the level below, and at last by the easy level computed here."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable

from engine.agents import registry
from engine.agents.base import AgentSpec, Budget, Decision
from engine.games.base import GameState, Move
from lobby.announce import Announcer
from lobby.boundary import boundary
from lobby.errors import MatchOver, StaleAction
from lobby.joberrors import JobFailed, PoolClosed
from lobby.matches import Matches
from lobby.memory import LearningMemory
from lobby.pool import EnginePool
from lobby.records import TRANSIENT, LobbyConfig, Seat, Snapshot
from lobby.tasks import Tasks

log = logging.getLogger(__name__)


class Turns:
    """The lobby's agent turns (one running task per match at most)."""

    def __init__(
        self,
        pool: EnginePool,
        config: LobbyConfig,
        sleep: Callable[[float], Awaitable[None]],
        rng: random.Random,
        matches: Matches,
        memory: LearningMemory,
        announce: Announcer,
        tasks: Tasks,
    ) -> None:
        self._pool = pool
        self._config = config
        self._sleep = sleep
        self._rng = rng
        self._matches = matches
        self._memory = memory  # the rows a learning agent asks for
        self._announce = announce
        self._tasks = tasks
        #: The running agent turn of each match (at most one).
        self._turns: dict[int, asyncio.Task[Snapshot]] = {}

    def schedule(self, snap: Snapshot) -> None:
        """Start the agent's turn if an agent is to move and its turn is not running."""
        if self._tasks.closing or not snap.live or not snap.seat_to_move.is_agent:
            return
        running = self._turns.get(snap.id)
        if running is not None and not running.done():
            return
        # a person waits from now (their move or their game was just stored)
        task: asyncio.Task[Snapshot] = self._tasks.spawn(self._turn(snap.id, time.monotonic()))
        self._turns[snap.id] = task
        task.add_done_callback(functools.partial(self._turn_ended, snap.id))

    def _turn_ended(self, match_id: int, task: asyncio.Task[Snapshot]) -> None:
        if self._turns.get(match_id) is task:
            del self._turns[match_id]

    @boundary
    async def advance(self, match_id: int) -> Snapshot:
        """Wait until the agents to move have moved (starting their turn if needed); the
        snapshot after their moves."""
        snap = await self._matches.snapshot(match_id)
        self.schedule(snap)
        task = self._turns.get(match_id)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        return await self._matches.snapshot(match_id)

    @boundary
    async def run_botmatch(self, match_id: int) -> Snapshot:
        """Wait for a spectated agent match to end (it runs on its own once started)."""
        return await self.advance(match_id)

    async def _turn(self, match_id: int, asked: float) -> Snapshot:
        """An agent's turn, repeated while an agent is to move (a bot match plays to its end,
        one move per `delay` seconds); `asked`: when it was scheduled (a person playing the
        agent waits from then for its first move)."""
        snap = await self._matches.snapshot(match_id)
        moved_at: float | None = None
        while snap.live and snap.seat_to_move.is_agent and not self._tasks.closing:
            if snap.match.kind == "eve" and moved_at is not None:
                delay = float(snap.match.options.get("delay", self._config.botmatch_delay))
                await self._sleep(max(0.0, delay - (time.perf_counter() - moved_at)))
                snap = await self._matches.snapshot(match_id)
                if not snap.live:
                    break
            moved_at = time.perf_counter()
            seat = snap.seat_to_move
            waits = snap.match.kind == "pve"  # a person waits; spectators can wait a little
            move, fallback = await self._agent_move(snap, seat, asked if waits else None)
            asked = time.monotonic()
            think_ms = int((time.perf_counter() - moved_at) * 1000)
            stored = await self._store_agent_move(snap, move, think_ms, fallback)
            if stored is None:  # resigned, stopped or timed out while the agent thought
                return await self._matches.snapshot(match_id)
            snap = stored
            await self._announce.match(snap)
        return snap

    async def _store_agent_move(
        self, snap: Snapshot, move: Move, think_ms: int, fallback: str | None
    ) -> Snapshot | None:
        """Commit an agent's move if the match is still where it was; a store error that a
        retry can mend is retried a few times (the move stays right while the ply does). If
        an attempt was stored though its answer was lost, the stored match is returned (to be
        shown, with a person's grace) instead of nothing: the board must not freeze."""
        pause = self._config.store_retry_seconds
        for attempt in range(self._config.store_retries + 1):
            try:
                if self._matches.unsure(snap.id):  # an attempt's answer was lost: was it stored?
                    current = await self._matches.snapshot(snap.id)
                    if not current.live or current.match.ply != snap.match.ply:
                        return await self._matches.converge(snap.id)  # stored: show it as stored
                async with self._matches.lock(snap.id):
                    current = await self._matches.snapshot(snap.id)
                    if not current.live or current.match.ply != snap.match.ply:
                        return None
                    return await self._matches.commit(current, [move], think_ms, fallback)
            except (StaleAction, MatchOver):
                return None
            except TRANSIENT as exc:
                if attempt == self._config.store_retries:
                    raise
                log.warning("match %s: cannot store the agent's move yet (%s)", snap.id, exc)
                await self._sleep(pause)
                pause *= 2
        return None

    async def _agent_move(
        self, snap: Snapshot, seat: Seat, asked: float | None
    ) -> tuple[Move, str | None]:
        """The agent's move, and which fallback chose it if the agent's own job failed;
        `asked`: when a person began to wait for it (None: nobody waits).

        A job that crashes its worker, hangs past its cap or raises is replaced by the level
        below (in the pool), then by the easy level computed here: a person waiting for a bot
        must never wait forever, and a rated game is never handed a random move.
        """
        assert seat.spec is not None and seat.budget is not None
        try:
            move = await self._choose(snap, seat.spec, seat.budget, asked)
            # (checked once the job is sent: on a fresh start the rules' kernels are still
            # loading in a thread, and the job goes first)
            legal = snap.state.legal_moves()
            if move in legal:
                return move, None
            log.error("agent %s chose an illegal move %r", seat.spec.label(), move)
        except PoolClosed:
            raise
        except JobFailed as exc:
            log.warning("agent %s in match %s: %s", seat.spec.label(), snap.id, exc)
        except Exception:
            log.exception("agent %s failed in match %s", seat.spec.label(), snap.id)
        game = snap.match.game
        below = level_below(game, seat)
        if below is not None:
            level = registry.LEVELS[game][below]
            try:
                move = await self._choose(snap, level.spec, level.budget, asked)
                if move in snap.state.legal_moves():
                    return move, below
            except PoolClosed:
                raise
            except Exception as exc:
                log.warning("fallback %s failed in match %s: %s", below, snap.id, exc)
        easy = registry.LEVELS[game]["easy"]
        seed = self._rng.randrange(2**63)
        decision = await asyncio.to_thread(choose_here, snap.state, easy.spec, easy.budget, seed)
        return decision.move, "easy (computed in the bot)"

    async def _choose(
        self, snap: Snapshot, spec: AgentSpec, budget: Budget, asked: float | None
    ) -> Move:
        memory = await self._memory_for(spec, snap.state)
        decision = await self._pool.choose(
            snap.state,
            spec,
            budget,
            self._rng.randrange(2**63),
            memory=memory,
            urgent=asked is not None,
            asked=asked,
        )
        return decision.move

    async def _memory_for(self, spec: AgentSpec, state: GameState) -> dict[bytes, bytes] | None:
        """The memory rows a learning agent asks for here (None for other agents)."""
        try:
            return await self._memory.rows_for(spec, state)
        except TRANSIENT as exc:  # the store is out for a moment (a restart): no fault of ours
            log.warning("cannot load the memory of %s now: %s", spec.label(), exc)
            return {}
        except Exception:  # play from what the agent has rather than not at all
            log.exception("cannot load the memory of %s", spec.label())
            return {}

    def turn_running(self, match_id: int) -> bool:
        """Whether an agent's turn is running for this match."""
        task = self._turns.get(match_id)
        return task is not None and not task.done()

    def has_turn(self, match_id: int) -> bool:
        """Whether this match has an agent's turn task (running, or just ended)."""
        return match_id in self._turns


def level_below(game: str, seat: Seat) -> str | None:
    """The level a failed agent falls back to: the level below its own, or `easy` for an
    agent without a level; None for `easy` itself (the last resort is computed in the bot)."""
    names = list(registry.LEVELS[game])
    if seat.level in names:
        i = names.index(seat.level)
        return names[i - 1] if i > 0 else None
    return names[0] if names else None


def choose_here(state: GameState, spec: AgentSpec, budget: Budget, seed: int) -> Decision:
    """The last resort: a cheap agent computed in this process (in a thread)."""
    return registry.build(spec, state.game).choose(state, budget, random.Random(seed))
