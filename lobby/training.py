"""`/train` jobs: a learning agent's memory trained in the engine pool, batch by batch (each
batch's rows written as it ends), one job at a time in all; their progress for front ends. How
and why: docs/learning.md, "The bot side"."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from db.errors import TransientError
from engine.agents.base import AgentSpec, Budget, LearningAgent
from engine.games import new_game
from engine.learning import (
    learning_seats,
    line_up,
    play_and_learn,
    trainable_text,
    uses_memory,
)
from lobby.errors import TrainingRefused
from lobby.joberrors import JobTimeout, PoolClosed, WorkerCrashed
from lobby.lease import LearningLease
from lobby.memory import LearningMemory, MemoryId

if TYPE_CHECKING:
    from lobby.pool import EnginePool

log = logging.getLogger(__name__)

#: Training batches aim at this many seconds of work in a worker (progress and DB writes
#: follow each batch; a short batch keeps the worker free for players' moves).
BATCH_SECONDS = 0.5
MAX_BATCH_GAMES = 2_000
MAX_TRAIN_GAMES = 1_000_000
ROLLING_GAMES = 200  # the rolling win rate's window


class Training:
    """The training jobs of this process (at most one running)."""

    def __init__(
        self,
        memory: LearningMemory,
        lease: LearningLease,
        *,
        batch_seconds: float = BATCH_SECONDS,
    ) -> None:
        self._memory = memory
        self._lease = lease
        self.batch_seconds = batch_seconds
        self.jobs: dict[MemoryId, TrainingJob] = {}

    def start(
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
        agent = self._memory.agent(spec, game)
        if agent is None:
            raise TrainingRefused(f"{spec.name} does not learn: only learning agents train")
        if not uses_memory(agent, game):
            hint = trainable_text(spec.name, game)
            raise TrainingRefused(
                f"{spec.label()} keeps no memory with these settings"
                + (f"; try {hint}" if hint else "")
            )
        if opponent is not None and self._memory.agent(opponent[0], game) is not None:
            if opponent[0] != spec:
                raise TrainingRefused("the opponent must not be another learning agent")
            opponent = None  # itself: that is self-play
        mid = (agent.memory_kind, agent.memory_name)
        if not self._lease.may_train():
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
                if not await self._lease.hold():  # renewed each batch; lost only if stalled 15 s
                    p.error = "another bot process took over learning; the job stopped"
                    break
                batch = min(batch, p.total - p.done)
                # The memory's lock is held for the whole batch: a match that finishes
                # meanwhile learns after the batch is written, from the rows it wrote, so
                # neither overwrites the other (a batch is about half a second).
                async with self._memory.lock(mid):
                    snapshot = dict(await self._memory.all_rows(*mid))
                    request = BatchRequest(
                        game, spec, budget, opponent, batch, rng.getrandbits(63), p.done
                    )
                    t0 = time.perf_counter()
                    result = await self._batch(pool, request, snapshot, mid)
                    seconds = time.perf_counter() - t0
                    await self._memory.put(*mid, result.rows, games=result.games)
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

    async def close(self) -> None:
        """Stop every job (after the batch in flight is stored or dropped)."""
        for job in list(self.jobs.values()):
            job.cancel()
            if job.task is not None:
                job.task.cancel()
        jobs = [j.task for j in self.jobs.values() if j.task is not None]
        await asyncio.gather(*jobs, return_exceptions=True)


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
