"""Learning agents in the lobby: their memory, learning from every match, training jobs.

A `LearningAgent` (engine/agents/base.py) is pure: it never touches SQLite. This module is the
other half of that contract for the bot:

* Memory cache. `LearningHub` keeps the rows of each memory (kind, name) in the lobby process,
  loaded from the Store on first use: the whole memory when it is small (then a missing key is
  known to be absent), otherwise key by key (absent keys are remembered too). Before a learning
  agent moves, the lobby asks a local instance of the agent which rows it needs
  (`memory_keys(state)`) and sends exactly those rows to the worker with the job.
* Learning from every match. When a match with a learning agent ends with a result (a finished
  game, a resignation, a loss on time; not an abandoned or stopped match), the lobby writes an
  outbox row ("learn", match) in the same transaction as the finish. This hub applies the
  outbox in the background: the match's stored moves are replayed into states, the agent's
  `learn_keys` rows are read from the cache, `learn` gives the new rows, and every memory the
  match changes is written in ONE transaction with `games_trained + 1` that also deletes the
  outbox row. So learning happens exactly once, survives a kill (the outbox is read again at
  the next start), and `games_trained` counts exactly the matches and games learned. Two seats
  on one memory (self-play) both learn, in that one write; an agent with `learn_whole_game`
  (the weight grid, whose update covers the whole board) learns once; settings that keep no
  memory (a fixed grid) write nothing. Per-memory locks make read-learn-write atomic.
* Training jobs (`/train`, the console's /train). Self-play (or play against a fixed opponent)
  runs in the engine pool in batches of about half a second: a worker gets a snapshot of the
  memory, plays the games and learns after each one, and sends back the changed rows; the lobby
  writes each batch in one transaction and shows progress. The memory's lock is held from the
  snapshot to the write, so a match finishing meanwhile learns after the batch, on top of its
  rows: neither overwrites the other. A batch uses one worker, so the other one keeps serving
  moves. At most one job runs per memory.

Another process writing the same memory (e.g. `python -m engine train` on the bot's database
while it runs) is noticed within `recheck_seconds` (the games_trained counter moved), and the
cache is then reloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import random
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from db.models import MemoryWrite
from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, LearningAgent
from engine.games import new_game
from engine.games.base import GameState, Move
from lobby.pool import JobTimeout, PoolClosed, WorkerCrashed
from lobby.words import plural

if TYPE_CHECKING:
    from db.models import Match, MemoryInfo, OutboxItem, Rating
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
#: Under a learned grid: what its colours say (rank 8 on top, as the board is drawn).
HEAT_LEGEND = "🟦 squares it learned to avoid … 🟥 squares it learned to want (a1 bottom left)"
ROLLING_GAMES = 200  # the rolling win rate's window


class TrainingRefused(Exception):
    """A training request that cannot run (not a learning agent, a job already running...)."""


# ---------------------------------------------------------------------- the memory cache


@dataclass(slots=True)
class _Memory:
    rows: dict[bytes, bytes] = field(default_factory=dict)
    absent: set[bytes] = field(default_factory=set)
    complete: bool = False  # every row is in `rows`: a missing key is absent
    games_trained: int = 0  # as this process last knew it (to notice other writers)
    checked: float = 0.0  # monotonic time of the last freshness check


@dataclass(slots=True)
class _Learned:
    """One finished match's learning, for one memory (several seats may share it)."""

    agent: LearningAgent
    seats: list[tuple[int, float]]  # (seat, result for that seat)


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

    # ------------------------------------------------------------------ agents

    def agent(self, spec: AgentSpec, game: str) -> LearningAgent | None:
        """A local instance of the agent `spec` names if it learns, else None (cached).

        Agents whose factory is a class that is not a LearningAgent are never built here
        (building some agents loads books or kernels).
        """
        key = (spec, game)
        if key in self._agents:
            return self._agents[key]
        if len(self._agents) >= MAX_AGENTS:  # bounded: specs come from people
            self._agents.clear()
        agent: LearningAgent | None = None
        info = registry.AGENTS.get(spec.name)
        factory = info.factory if info is not None else None
        if factory is not None and not (
            isinstance(factory, type) and not issubclass(factory, LearningAgent)
        ):
            try:
                built = registry.build(spec, game)
            except Exception:
                log.exception("cannot build agent %s for %s", spec.label(), game)
                built = None
            if isinstance(built, LearningAgent):
                agent = built
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
                    agent = _learning_agent(registry.resolve(text, game)[0], game)
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
        info = await self.store.memory_info(*mid)
        games = info.games_trained if info is not None else 0
        if mem is not None and mem.games_trained == games:
            mem.checked = now
            return mem
        if mem is not None:
            log.info("memory %s/%s changed outside this process; reloading", *mid)
        mem = _Memory(games_trained=games, checked=now)
        rows = info.rows if info is not None else 0
        if rows <= self.full_load_limit:
            mem.rows = await self.store.memory_get(*mid) if rows else {}
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
                loaded = await self.store.memory_get_one(kind, name, key)
                if loaded is None:
                    mem.absent.add(key)
                else:
                    mem.rows[key] = out[key] = loaded
        return out

    async def all_rows(self, kind: str, name: str) -> dict[bytes, bytes]:
        """The whole memory (loaded completely if it was not yet)."""
        mem = await self._memory((kind, name))
        if not mem.complete:
            mem.rows = await self.store.memory_get(kind, name)
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
        await self.store.memory_apply([MemoryWrite(kind, name, rows, games, "trained")])
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
        groups: dict[MemoryId, _Learned] = {}
        for seat, spec in seats:
            agent = self.agent(spec, game)
            if agent is None:
                continue
            score = 0.5 if result == "draw" else (1.0 if result == str(seat) else 0.0)
            mid = (agent.memory_kind, agent.memory_name)
            group = groups.setdefault(mid, _Learned(agent, []))
            group.seats.append((seat, score))
        if not groups:
            if outbox_id is not None:
                await self.store.outbox_done(outbox_id)
            return 0
        states, moves = await self.replay(game, variant, match_id)
        async with contextlib.AsyncExitStack() as locks:
            for mid in sorted(groups):  # one order everywhere: no deadlock between memories
                await locks.enter_async_context(self._lock(mid))
            writes: list[MemoryWrite] = []
            for (kind, name), group in groups.items():
                seats_ = group.seats
                if len(seats_) == 2 and getattr(group.agent, "learn_whole_game", False):
                    seats_ = seats_[:1]  # its update covers both colours: once per game
                new: dict[bytes, bytes] = {}
                asked = False
                for seat, score in seats_:
                    keys = group.agent.learn_keys(states, moves, seat)
                    asked = asked or bool(keys)
                    current = await self.rows(kind, name, keys)
                    current.update({k: new[k] for k in keys if k in new})  # the other seat's
                    new.update(group.agent.learn(states, moves, seat, score, current))
                if asked or new:  # settings that keep no memory (a fixed grid) write nothing
                    writes.append(MemoryWrite(kind, name, new, 1, "matches"))
            if not await self.store.memory_apply(writes, outbox_id=outbox_id):
                return 0  # applied before (a retry after a kill)
            for w in writes:
                self._cached_put(w.kind, w.name, w.rows, w.games)
        self.learned += 1
        return len(writes)

    async def replay(
        self, game: str, variant: str, match_id: int
    ) -> tuple[list[GameState], list[Move]]:
        """The positions before each stored move, and the moves."""
        state = new_game(game, variant)
        states: list[GameState] = []
        moves: list[Move] = []
        for row in await self.store.moves(match_id):
            move = state.parse_move(row.move)
            states.append(state)
            moves.append(move)
            state = state.play(move)
        return states, moves

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
            for item in await self.store.outbox_pending(LEARN):
                if self._closing:
                    return
                try:
                    await self._apply(item)
                except Exception as exc:
                    # A busy or full database is retried later; anything else would fail the
                    # same way again, so the row is kept for inspection but not retried.
                    transient = isinstance(exc, sqlite3.OperationalError)
                    self.failures += 0 if transient else 1
                    log.log(
                        logging.WARNING if transient else logging.ERROR,
                        "learning failed for match #%s",
                        item.match_id,
                        exc_info=not transient,
                    )
                    with contextlib.suppress(Exception):
                        await self.store.outbox_failed(
                            item.id, f"{type(exc).__name__}: {exc}", final=not transient
                        )
                    if transient:
                        self._more = True
                        await asyncio.sleep(self.retry_seconds)

    async def _apply(self, item: OutboxItem) -> None:
        match = await self.store.get_match(item.match_id) if item.match_id is not None else None
        if match is None or match.result is None or self.seat_specs is None:
            await self.store.outbox_done(item.id)  # nothing to learn from
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
        self, pool: EnginePool, request: TrainRequest, snapshot: dict[bytes, bytes], mid: MemoryId
    ) -> TrainResult:
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
                batch = min(batch, p.total - p.done)
                # The memory's lock is held for the whole batch: a match that finishes
                # meanwhile learns after the batch is written, from the rows it wrote, so
                # neither overwrites the other (a batch is about half a second).
                async with self._lock(mid):
                    snapshot = dict(await self.all_rows(*mid))
                    request = TrainRequest(
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
        except (PoolClosed, sqlite3.OperationalError) as exc:  # shutting down, or a busy store
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
class TrainRequest:
    """One training batch, as it crosses into a worker."""

    game: str
    spec: AgentSpec
    budget: Budget
    opponent: tuple[AgentSpec, Budget] | None  # None: self-play
    games: int
    seed: int
    first_game: int  # games already played by the job (sets whose turn it is to start)


@dataclass(frozen=True, slots=True)
class TrainResult:
    rows: dict[bytes, bytes]  # the changed rows, final values
    scores: list[float]  # per game: the learner's score (self-play: the first mover's)
    games: int


def train_batch_in_worker(request: TrainRequest, memory: dict[bytes, bytes]) -> TrainResult:
    """Play and learn `request.games` games on a snapshot of the memory (in a worker).

    The agent learns after every game, exactly as in a match: it is given the rows its
    `memory_keys` ask for before each move, and `learn` after the game (self-play: once per
    seat). In games against an opponent the learner alternates colours.
    """
    from lobby.pool import worker_agent

    r = request
    rng = random.Random(r.seed)
    agent = worker_agent(r.spec, r.game)
    if not isinstance(agent, LearningAgent):
        raise TypeError(f"{r.spec.name} is not a learning agent")
    opponent: Agent | None = None
    opp_budget = r.budget
    if r.opponent is not None:
        opponent = worker_agent(r.opponent[0], r.game)
        opp_budget = r.opponent[1]
    changed: dict[bytes, bytes] = {}
    scores: list[float] = []
    for i in range(r.games):
        learner_seat = (r.first_game + i) % 2
        state = new_game(r.game)
        states: list[GameState] = []
        moves: list[Move] = []
        while not state.is_over():
            if opponent is None or state.to_move() == learner_seat:
                keys = agent.memory_keys(state)
                agent.use_memory({k: memory[k] for k in keys if k in memory})
                move = agent.choose(state, r.budget, rng).move
            else:
                move = opponent.choose(state, opp_budget, rng).move
            states.append(state)
            moves.append(move)
            state = state.play(move)
        outcome = state.outcome()
        assert outcome is not None
        winner = outcome.winner
        for seat in learning_seats(agent, opponent is None, learner_seat):
            score = 0.5 if winner is None else float(winner == seat)
            keys = agent.learn_keys(states, moves, seat)
            new = agent.learn(
                states, moves, seat, score, {k: memory[k] for k in keys if k in memory}
            )
            memory.update(new)
            changed.update(new)
        seat = 0 if opponent is None else learner_seat
        scores.append(0.5 if winner is None else float(winner == seat))
    return TrainResult(changed, scores, r.games)


def learning_seats(agent: LearningAgent, self_play: bool, learner_seat: int) -> list[int]:
    """Whose `learn` runs after a training game: the learner's seat; in self-play both seats,
    or one for an agent whose update covers the whole game (`learn_whole_game`, the weight
    grid), the same rule as `engine.learning` and the lobby's matches."""
    if not self_play:
        return [learner_seat]
    return [0] if getattr(agent, "learn_whole_game", False) else [0, 1]


def uses_memory(agent: LearningAgent, game: str) -> bool:
    """Whether these settings keep a memory at all (a fixed weight grid does not)."""
    return bool(agent.memory_keys(new_game(game)))


def trainable_text(name: str, game: str) -> str | None:
    """How to name a learning agent so that it trains: `name`, or `name:memory=default`
    for an agent that only learns when given a memory (the weight grid); None if neither."""
    for text in (name, f"{name}:memory=default"):
        try:
            spec, _ = registry.resolve(text, game)
            agent = _learning_agent(spec, game)
        except ValueError:
            continue
        if agent is not None and uses_memory(agent, game):
            return text
    return None


# ---------------------------------------------------------------------- /agents


@dataclass(slots=True)
class AgentOverview:
    """One agent as `/agents` shows it."""

    game: str
    name: str
    description: str
    levels: list[str]
    ratings: list[tuple[str, Rating]]  # (what was rated: "default", "level easy", ...)
    learning: bool
    memories: list[MemoryInfo]
    grids: dict[str, str]  # memory name -> heat map text (the weight grid)
    trainable: str | None = None  # how /train names it


async def agents_overview(store: Store, hub: LearningHub | None, game: str) -> list[AgentOverview]:
    """Every agent of `game`: description, levels, ratings and learned state."""
    board = await store.leaderboard(game, limit=100_000)
    by_key = {e.player.agent_key: e.rating for e in board if e.player.agent_key}
    out: list[AgentOverview] = []
    for info in registry.agents_for(game):
        spec, _ = registry.resolve(info.name, game)
        levels = [n for n, lv in registry.LEVELS[game].items() if lv.spec.name == info.name]
        ratings: list[tuple[str, Rating]] = []
        for level in levels:
            rating = by_key.get(f"{game}:{level}")
            if rating is not None:
                ratings.append((f"level {level}", rating))
        rating = by_key.get(f"{game}:{spec.label()}")
        if rating is not None:
            ratings.append((spec.label(), rating))
        agent = hub.agent(spec, game) if hub is not None else _learning_agent(spec, game)
        memories: list[MemoryInfo] = []
        grids: dict[str, str] = {}
        if agent is not None:
            memories = await store.memory_list(agent.memory_kind)
            if agent.memory_kind == "weightgrid":
                for m in memories:
                    text = await _grid_text(store, m.kind, m.name)
                    if text:
                        grids[m.name] = text
        out.append(
            AgentOverview(
                game,
                info.name,
                info.description,
                levels,
                ratings,
                agent is not None,
                memories,
                grids,
                trainable_text(info.name, game) if agent is not None else None,
            )
        )
    return out


def _learning_agent(spec: AgentSpec, game: str) -> LearningAgent | None:
    info = registry.AGENTS[spec.name]
    if isinstance(info.factory, type) and not issubclass(info.factory, LearningAgent):
        return None
    agent = registry.build(spec, game)
    return agent if isinstance(agent, LearningAgent) else None


async def _grid_text(store: Store, kind: str, name: str) -> str | None:
    """The learned weight grid of one memory as an emoji heat map, if the engine renders it."""
    try:
        module = importlib.import_module("engine.agents.othello.weightgrid")
        render: Callable[[Any], str] | None = getattr(module, "render_grid_text", None)
        if render is None:
            return None
        value = await store.memory_get_one(kind, name, b"grid")
        if value is None:
            return None
        decode = getattr(module, "decode_grid", None)
        if decode is not None:
            grid = decode(value)
        else:
            import numpy as np

            grid = np.frombuffer(value, dtype=np.float64).reshape(8, 8)
        return str(render(grid))
    except Exception:
        log.exception("cannot render the weight grid %s/%s", kind, name)
        return None


def overview_lines(a: AgentOverview, *, bold: bool = True) -> tuple[str, list[str]]:
    """(heading, lines) for one agent, shared by the Discord embed and the console."""
    b = "**" if bold else ""
    heading = a.name
    if a.levels:
        heading += f" (level{'s' if len(a.levels) > 1 else ''} {', '.join(a.levels)})"
    lines = [a.description]
    for what, r in a.ratings:
        lines.append(
            f"{b}Rating{b} {what}: {r.ordinal:.1f} ({plural(r.games, 'game')}: "
            f"{r.wins}W {r.draws}D {r.losses}L)"
        )
    if a.learning:
        if not a.memories:
            how = f" agent:{a.trainable}" if a.trainable else ""
            lines.append(f"{b}Learned{b}: nothing yet (train it with /train{how})")
        for m in a.memories:
            lines.append(
                f"{b}Memory{b} {m.name}: {plural(m.rows, 'row')},"
                f" {plural(m.games_trained, 'game')} learned"
            )
            grid = a.grids.get(m.name)
            if grid:
                lines.append(grid)
                lines.append(HEAT_LEGEND)
    return heading, lines
