"""Learning agents in the lobby: the cache of their memory, learning from every finished match
(once, through the store's outbox) and `/train` jobs in the engine pool. How and why:
docs/learning.md, "The bot side"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from db.errors import TransientError
from db.models import MemoryWrite
from engine.agents import registry
from engine.agents.base import AgentSpec, Budget, LearningAgent
from engine.games import new_game
from engine.games.base import GameState, Move
from engine.learning import (
    apply_learning,
    learning_agent,
    learning_seats,
    line_up,
    play_and_learn,
    replay,
    trainable_text,
    uses_memory,
)
from lobby.errors import TrainingRefused
from lobby.pool import JobTimeout, PoolClosed, WorkerCrashed

if TYPE_CHECKING:
    from db.models import Match, OutboxItem
    from db.store import Store
    from lobby.pool import EnginePool

log = logging.getLogger(__name__)

MemoryId = tuple[str, str]  # (kind, name)
SeatSpecs = Callable[["Match"], Awaitable[list[tuple[int, AgentSpec]]]]

#: The outbox kind of "learn from this finished match".
LEARN = "learn"

#: A memory with at most this many rows is loaded whole on first use; bigger ones key by key.
FULL_LOAD_LIMIT = 50_000
#: Training batches aim at this many seconds of work in a worker (progress and DB writes
#: follow each batch; a short batch keeps the worker free for players' moves).
BATCH_SECONDS = 0.5
MAX_BATCH_GAMES = 2_000
MAX_TRAIN_GAMES = 1_000_000
MAX_AGENTS = 64  # local agent instances kept
ROLLING_GAMES = 200  # the rolling win rate's window
#: Among shard processes on one database, the one holding this lease learns and trains
#: (db/leases.py); it is renewed when half of it is left.
LEASE = "learning"
LEASE_SECONDS = 30.0


# ---------------------------------------------------------------------- the memory cache


@dataclass(slots=True)
class _Memory:
    rows: dict[bytes, bytes] = field(default_factory=dict)
    absent: set[bytes] = field(default_factory=set)
    complete: bool = False  # every row is in `rows`: a missing key is absent
    games_trained: int = 0  # as this process last knew it (to notice other writers)
    checked: float = 0.0  # monotonic time of the last freshness check


class LearningHub:
    """Memory rows of learning agents for the lobby process; learning and training jobs."""

    def __init__(
        self,
        store: Store,
        *,
        seat_specs: SeatSpecs | None = None,
        full_load_limit: int = FULL_LOAD_LIMIT,
        recheck_seconds: float = 60.0,
        batch_seconds: float = BATCH_SECONDS,
    ) -> None:
        self.store = store
        self.full_load_limit = full_load_limit
        self.recheck_seconds = recheck_seconds
        self.batch_seconds = batch_seconds
        self._agents: dict[tuple[AgentSpec, str], LearningAgent | None] = {}
        self._memories: dict[MemoryId, _Memory] = {}
        self._locks: dict[MemoryId, asyncio.Lock] = {}
        self.jobs: dict[MemoryId, TrainingJob] = {}
        #: The (seat, spec) of a finished match's agent seats (the lobby knows them).
        self.seat_specs = seat_specs
        self.retry_seconds = 1.0  # after a failed outbox row, before the next attempt
        self._drainer: asyncio.Task[None] | None = None
        self._more = False
        self._closing = False
        #: How many matches were learned from, and how many learning attempts failed.
        self.learned = 0
        self.failures = 0
        #: This process among shard processes (the `learning` lease's holder name).
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._lease_until = 0.0  # monotonic; the lease is not held after this

    async def hold(self) -> bool:
        """Whether this process may learn and train now: always when it is the only bot
        process on its database; among shard processes only while it holds the `learning`
        lease (taken or renewed here). A lease taken anew reloads the memory cache: another
        process may have written meanwhile."""
        if self.store.shards.count == 1:
            return True
        now = time.monotonic()
        if now < self._lease_until - LEASE_SECONDS / 2:
            return True
        held = await self.store.leases.take(LEASE, self.holder, LEASE_SECONDS)
        if held and now >= self._lease_until:
            self.invalidate()
        self._lease_until = now + LEASE_SECONDS if held else 0.0
        return held

    # ------------------------------------------------------------------ agents

    def agent(self, spec: AgentSpec, game: str) -> LearningAgent | None:
        """A local instance of the agent `spec` names if it learns, else None (cached; see
        `engine.learning.learning_agent`)."""
        key = (spec, game)
        if key in self._agents:
            return self._agents[key]
        if len(self._agents) >= MAX_AGENTS:  # bounded: specs come from people
            self._agents.clear()
        agent: LearningAgent | None = None
        try:
            agent = learning_agent(spec, game)
        except Exception:
            log.exception("cannot build agent %s for %s", spec.label(), game)
        self._agents[key] = agent
        return agent

    async def warm(self) -> None:
        """Build every learning agent here and run its memory calls once, in a thread.

        The lobby calls `memory_keys` and `learn` in its own process; the first call may load
        numba kernels (about half a second), which must not stall the event loop mid-game.
        """
        await asyncio.to_thread(self._warm_sync)

    def _warm_sync(self) -> None:
        for game in registry.GAMES:
            for info in registry.agents_for(game):
                try:
                    text = trainable_text(info.name, game)
                    if text is None:
                        continue
                    agent = learning_agent(registry.resolve(text, game)[0], game)
                    if agent is None:
                        continue
                    state = new_game(game)
                    moves = state.legal_moves()[:1]
                    agent.learn_keys([state], moves, 0)
                    agent.learn([state], moves, 0, 0.5, {})
                except Exception:
                    log.exception("cannot warm up %s for %s", info.name, game)

    # ------------------------------------------------------------------ memory

    def _lock(self, mid: MemoryId) -> asyncio.Lock:
        lock = self._locks.get(mid)
        if lock is None:
            lock = self._locks[mid] = asyncio.Lock()
        return lock

    async def _memory(self, mid: MemoryId) -> _Memory:
        """The cache of one memory, loaded (or reloaded if someone else wrote it)."""
        mem = self._memories.get(mid)
        now = time.monotonic()
        if mem is not None and now - mem.checked < self.recheck_seconds:
            return mem
        info = await self.store.memory.info(*mid)
        games = info.games_trained if info is not None else 0
        if mem is not None and mem.games_trained == games:
            mem.checked = now
            return mem
        if mem is not None:
            log.info("memory %s/%s changed outside this process; reloading", *mid)
        mem = _Memory(games_trained=games, checked=now)
        rows = info.rows if info is not None else 0
        if rows <= self.full_load_limit:
            mem.rows = await self.store.memory.get(*mid) if rows else {}
            mem.complete = True
        self._memories[mid] = mem
        return mem

    async def rows(self, kind: str, name: str, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """The stored values of `keys` (absent keys are left out)."""
        mem = await self._memory((kind, name))
        out: dict[bytes, bytes] = {}
        for key in keys:
            value = mem.rows.get(key)
            if value is not None:
                out[key] = value
            elif not mem.complete and key not in mem.absent:
                loaded = await self.store.memory.get_one(kind, name, key)
                if loaded is None:
                    mem.absent.add(key)
                else:
                    mem.rows[key] = out[key] = loaded
        return out

    async def all_rows(self, kind: str, name: str) -> dict[bytes, bytes]:
        """The whole memory (loaded completely if it was not yet)."""
        mem = await self._memory((kind, name))
        if not mem.complete:
            mem.rows = await self.store.memory.get(kind, name)
            mem.absent.clear()
            mem.complete = True
        return mem.rows

    async def rows_for(self, spec: AgentSpec, state: GameState) -> dict[bytes, bytes] | None:
        """The rows a learning agent needs to choose in `state`; None for other agents."""
        agent = self.agent(spec, state.game)
        if agent is None:
            return None
        keys = agent.memory_keys(state)
        if not keys:
            return {}
        return await self.rows(agent.memory_kind, agent.memory_name, keys)

    async def put(self, kind: str, name: str, rows: Mapping[bytes, bytes], games: int) -> None:
        """Write rows and `games` more games trained in one transaction; update the cache.

        Call with the memory's lock held (read-learn-write must not interleave).
        """
        await self.store.memory.apply([MemoryWrite(kind, name, rows, games, "trained")])
        self._cached_put(kind, name, rows, games)

    def _cached_put(self, kind: str, name: str, rows: Mapping[bytes, bytes], games: int) -> None:
        mem = self._memories.get((kind, name))
        if mem is not None:
            mem.rows.update(rows)
            mem.absent.difference_update(rows)
            mem.games_trained += games

    def invalidate(self, kind: str | None = None, name: str | None = None) -> None:
        """Forget cached rows (all, one kind, or one memory): they reload on next use."""
        for mid in list(self._memories):
            if (kind is None or mid[0] == kind) and (name is None or mid[1] == name):
                del self._memories[mid]

    # ------------------------------------------------------------------ learning from matches

    def learns(self, specs: Iterable[AgentSpec | None], game: str) -> bool:
        return any(s is not None and self.agent(s, game) is not None for s in specs)

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
            agent = self.agent(spec, game)
            if agent is not None:
                mid = (agent.memory_kind, agent.memory_name)
                groups.setdefault(mid, (agent, []))[1].append(seat)
        if not groups:
            if outbox_id is not None:
                await self.store.outbox.done(outbox_id)
            return 0
        states, moves = await self.replay(game, variant, match_id)
        winner = None if result == "draw" else int(result)
        async with contextlib.AsyncExitStack() as locks:
            for mid in sorted(groups):  # one order everywhere: no deadlock between memories
                await locks.enter_async_context(self._lock(mid))
            writes: list[MemoryWrite] = []
            for (kind, name), (agent, held) in groups.items():
                learners = learning_seats(agent, held)
                keys = [k for seat in learners for k in agent.learn_keys(states, moves, seat)]
                rows = await self.rows(kind, name, keys)
                new = apply_learning(agent, rows, states, moves, winner, learners)
                if keys or new:  # settings that keep no memory (a fixed grid) write nothing
                    writes.append(MemoryWrite(kind, name, new, 1, "matches"))
            if not await self.store.memory.apply(writes, outbox_id=outbox_id):
                return 0  # applied before (a retry after a kill)
            for w in writes:
                self._cached_put(w.kind, w.name, w.rows, w.games)
        self.learned += 1
        return len(writes)

    async def replay(
        self, game: str, variant: str, match_id: int
    ) -> tuple[list[GameState], list[Move]]:
        """The positions before each stored move, and the moves."""
        start = new_game(game, variant)
        moves = [start.parse_move(row.move) for row in await self.store.matches.moves(match_id)]
        return replay(start, (), moves), moves

    # ------------------------------------------------------------------ the outbox

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
                if not await self.hold():
                    return  # another shard process learns (its clock kicks it)
            except TransientError as exc:  # a busy or lost database: later
                log.warning("cannot take the learning lease: %s", exc)
                self._more = True
                await asyncio.sleep(self.retry_seconds)
                continue
            for item in await self.store.outbox.pending(LEARN):
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
                        await self.store.outbox.failed(
                            item.id, f"{type(exc).__name__}: {exc}", final=not transient
                        )
                    if transient:
                        self._more = True
                        await asyncio.sleep(self.retry_seconds)

    async def _apply(self, item: OutboxItem) -> None:
        match = await self.store.matches.get(item.match_id) if item.match_id is not None else None
        if match is None or match.result is None or self.seat_specs is None:
            await self.store.outbox.done(item.id)  # nothing to learn from
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
        """Stop training jobs and apply pending match learning (at most `timeout` s; what is
        left stays in the outbox for the next start)."""
        for job in list(self.jobs.values()):
            job.cancel()
            if job.task is not None:
                job.task.cancel()
        jobs = [j.task for j in self.jobs.values() if j.task is not None]
        await asyncio.gather(*jobs, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.drain(), timeout)
        self._closing = True
        if self._drainer is not None:
            self._drainer.cancel()
            await asyncio.gather(self._drainer, return_exceptions=True)
        if self._lease_until:  # another shard process may take over at once
            self._lease_until = 0.0
            with contextlib.suppress(Exception):
                await self.store.leases.drop(LEASE, self.holder)

    # ------------------------------------------------------------------ training

    def start_training(
        self,
        pool: EnginePool,
        game: str,
        spec: AgentSpec,
        budget: Budget,
        games: int,
        *,
        opponent: tuple[AgentSpec, Budget] | None = None,
        seed: int | None = None,
        label: str | None = None,
    ) -> TrainingJob:
        """Start a training job in the background; TrainingRefused if it cannot run."""
        if not 1 <= games <= MAX_TRAIN_GAMES:
            raise TrainingRefused(f"games must be between 1 and {MAX_TRAIN_GAMES}")
        agent = self.agent(spec, game)
        if agent is None:
            raise TrainingRefused(f"{spec.name} does not learn: only learning agents train")
        if not uses_memory(agent, game):
            hint = trainable_text(spec.name, game)
            raise TrainingRefused(
                f"{spec.label()} keeps no memory with these settings"
                + (f"; try {hint}" if hint else "")
            )
        if opponent is not None and self.agent(opponent[0], game) is not None:
            if opponent[0] != spec:
                raise TrainingRefused("the opponent must not be another learning agent")
            opponent = None  # itself: that is self-play
        mid = (agent.memory_kind, agent.memory_name)
        if self.store.shards.count > 1 and time.monotonic() >= self._lease_until:
            raise TrainingRefused(
                "learning and training run in another bot process (shard) right now: "
                "try again in a minute"
            )
        # One job at a time in all: a job takes a worker from everyone's moves.
        running = next((j for j in self.jobs.values() if not j.progress.finished), None)
        if running is not None:
            p = running.progress
            raise TrainingRefused(
                f"a training job is already running ({p.agent}, {p.done}/{p.total} games):"
                " one at a time; wait for it to finish"
            )
        progress = TrainingProgress(
            game=game,
            agent=label or spec.label(),
            kind=mid[0],
            name=mid[1],
            total=games,
            opponent=None if opponent is None else opponent[0].label(),
        )
        job = TrainingJob(progress)
        self.jobs[mid] = job
        rng = random.Random(seed)
        job.task = asyncio.ensure_future(self._train(job, pool, game, spec, budget, opponent, rng))
        return job

    async def _batch(
        self, pool: EnginePool, request: BatchRequest, snapshot: dict[bytes, bytes], mid: MemoryId
    ) -> BatchResult:
        """One batch in the pool; a batch whose worker crashed or hung is tried once more (on
        another worker: the pool replaces a dead one), then the job stops with the error."""
        try:
            return await pool.run(train_batch_in_worker, request, snapshot)
        except (JobTimeout, WorkerCrashed) as exc:
            log.warning("training %s/%s: a batch failed (%s); trying it once more", *mid, exc)
            return await pool.run(train_batch_in_worker, request, snapshot)

    async def _train(
        self,
        job: TrainingJob,
        pool: EnginePool,
        game: str,
        spec: AgentSpec,
        budget: Budget,
        opponent: tuple[AgentSpec, Budget] | None,
        rng: random.Random,
    ) -> TrainingProgress:
        p = job.progress
        mid = (p.kind, p.name)
        batch = min(10, p.total)  # a first small batch measures the speed
        try:
            while p.done < p.total and not job.cancelled:
                if not await self.hold():  # renewed each batch; lost only if stalled 15 s
                    p.error = "another bot process took over learning; the job stopped"
                    break
                batch = min(batch, p.total - p.done)
                # The memory's lock is held for the whole batch: a match that finishes
                # meanwhile learns after the batch is written, from the rows it wrote, so
                # neither overwrites the other (a batch is about half a second).
                async with self._lock(mid):
                    snapshot = dict(await self.all_rows(*mid))
                    request = BatchRequest(
                        game, spec, budget, opponent, batch, rng.getrandbits(63), p.done
                    )
                    t0 = time.perf_counter()
                    result = await self._batch(pool, request, snapshot, mid)
                    seconds = time.perf_counter() - t0
                    await self.put(*mid, result.rows, games=result.games)
                p.add(result.scores)
                p.batches += 1
                per_game = max(seconds / max(result.games, 1), 1e-5)
                batch = max(1, min(MAX_BATCH_GAMES, int(self.batch_seconds / per_game)))
        except asyncio.CancelledError:
            job.cancelled = True
            raise
        except (PoolClosed, TransientError) as exc:  # shutting down, or a busy store
            log.warning("training %s/%s stopped: %s", *mid, exc)
            p.error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            log.exception("training %s/%s failed", *mid)
            p.error = f"{type(exc).__name__}: {exc}"
        finally:
            p.finished = True
            p.ended = time.monotonic()
            if job.cancelled and p.error is None:
                p.error = "cancelled"
            if self.jobs.get(mid) is job:
                del self.jobs[mid]
        return p


# ---------------------------------------------------------------------- training jobs


@dataclass(slots=True)
class TrainingProgress:
    """What a training job has done so far (read by front ends for their progress lines)."""

    game: str
    agent: str
    kind: str
    name: str
    total: int
    opponent: str | None = None
    done: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    batches: int = 0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=ROLLING_GAMES))
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    finished: bool = False
    error: str | None = None

    def add(self, scores: Iterable[float]) -> None:
        for s in scores:
            self.done += 1
            self.recent.append(s)
            if s == 1.0:
                self.wins += 1
            elif s == 0.0:
                self.losses += 1
            else:
                self.draws += 1

    @property
    def seconds(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    @property
    def games_per_second(self) -> float:
        return self.done / self.seconds if self.seconds > 0 else 0.0

    @property
    def rolling(self) -> float | None:
        """The mean score over the last ROLLING_GAMES games (None before the first)."""
        return sum(self.recent) / len(self.recent) if self.recent else None

    def text(self) -> str:
        """A short multi-line summary, shared by the Discord message and the console."""
        who = "self-play" if self.opponent is None else f"vs {self.opponent}"
        score = "first mover's score" if self.opponent is None else "score"
        if self.finished and self.error is None:
            state = "done"
        elif self.finished:
            state = f"stopped ({self.error})"
        else:
            state = "training..."
        pct = 100 * self.done / self.total if self.total else 100.0
        lines = [
            f"Training {self.agent} ({self.game}, memory {self.kind}/{self.name}, {who}): {state}",
            f"{self.done}/{self.total} games ({pct:.0f}%) · {self.games_per_second:.1f} games/s"
            f" · {self.seconds:.1f} s",
        ]
        if self.rolling is not None:
            lines.append(
                f"{score} over the last {len(self.recent)}: {100 * self.rolling:.1f}%"
                f" · total {self.wins}W {self.draws}D {self.losses}L"
            )
        return "\n".join(lines)


@dataclass(slots=True)
class TrainingJob:
    progress: TrainingProgress
    task: asyncio.Task[TrainingProgress] | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        """Stop after the batch in flight (its rows are still stored)."""
        self.cancelled = True

    async def wait(self) -> TrainingProgress:
        assert self.task is not None
        return await self.task


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One training batch, as it crosses into a worker."""

    game: str
    spec: AgentSpec
    budget: Budget
    opponent: tuple[AgentSpec, Budget] | None  # None: self-play
    games: int
    seed: int
    first_game: int  # games already played by the job (sets whose turn it is to start)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What a batch sends back: the rows it changed, and how each game went."""

    rows: dict[bytes, bytes]  # the changed rows, final values
    scores: list[float]  # per game: the learner's score (self-play: the first mover's)
    games: int


def train_batch_in_worker(request: BatchRequest, memory: dict[bytes, bytes]) -> BatchResult:
    """Play and learn `request.games` games on a snapshot of the memory (in a worker).

    The agent learns after every game, exactly as in a match (`engine.learning.play_and_learn`,
    self-play: both seats by the learning rule). In games against an opponent the learner
    alternates colours.
    """
    from lobby.jobs import worker_agent

    r = request
    rng = random.Random(r.seed)
    agent = worker_agent(r.spec, r.game)
    if not isinstance(agent, LearningAgent):
        raise TypeError(f"{r.spec.name} is not a learning agent")
    opponent = None if r.opponent is None else worker_agent(r.opponent[0], r.game)
    opponent_budget = r.budget if r.opponent is None else r.opponent[1]
    changed: dict[bytes, bytes] = {}
    scores: list[float] = []
    try:
        for i in range(r.games):
            seat = 0 if opponent is None else (r.first_game + i) % 2
            agents, budgets = line_up(agent, opponent, seat, r.budget, opponent_budget)
            seats = learning_seats(agent, (0, 1) if opponent is None else (seat,))
            start = new_game(r.game)
            record, new = play_and_learn(start, agents, budgets, rng, agent, memory, seats)
            changed.update(new)
            assert record.outcome is not None
            scores.append(record.outcome.result_for(seat))
    finally:
        agent.use_memory({})  # the worker's cached agent must not keep the snapshot alive
    return BatchResult(changed, scores, r.games)
