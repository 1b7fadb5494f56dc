"""The engine pool: agents think in worker processes so the bot's event loop never blocks.

Facts this follows (DESIGN.md section 5): never `fork` inside the running bot (discord.py has
threads), so workers start with `spawn` (or `forkserver`); a timeout around `run_in_executor`
does not stop a worker, so the deadline lives inside the agent (its Budget); a worker that dies
breaks the whole executor (`BrokenProcessPool`), so the pool is rebuilt and the job retried once.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import random
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, Decision, LearningAgent
from engine.games.base import GameState

log = logging.getLogger(__name__)

T = TypeVar("T")

# Agents are built once per worker process and reused: building may load numba kernels or
# learned memory.
_agents: dict[tuple[AgentSpec, str], Agent] = {}


def _worker_init() -> None:
    from engine.warm import warm_up

    warm_up()


def _ping() -> int:
    return multiprocessing.current_process().pid or 0


def worker_agent(spec: AgentSpec, game: str) -> Agent:
    """This process's instance of the agent a spec names (built on first use)."""
    key = (spec, game)
    agent = _agents.get(key)
    if agent is None:
        agent = _agents[key] = registry.build(spec, game)
    return agent


def choose_in_worker(
    state: GameState,
    spec: AgentSpec,
    budget: Budget,
    seed: int,
    memory: Mapping[bytes, bytes] | None = None,
) -> Decision:
    """Run one agent decision (module level so it pickles into the worker).

    A learning agent first gets `memory`: the rows its `memory_keys(state)` asked for, loaded
    by the lobby (the worker never touches SQLite).
    """
    agent = worker_agent(spec, state.game)
    if memory is not None and isinstance(agent, LearningAgent):
        agent.use_memory(memory)
    return agent.choose(state, budget, random.Random(seed))


class EnginePool:
    """`await pool.choose(state, spec, budget)` -> Decision, computed in a worker process.

    `workers=0` runs agents in a thread instead (for tests of code above the pool that do not
    need processes); the bot always uses processes.
    """

    def __init__(self, workers: int = 2, context: str = "spawn") -> None:
        if workers < 0:
            raise ValueError("workers must be >= 0")
        if context == "fork":
            raise ValueError("never fork inside the bot: use spawn or forkserver")
        self.workers = workers
        self.context = context
        self._executor: Executor | None = None
        self._rebuild_lock = asyncio.Lock()
        self._seed = random.Random()
        self.rebuilds = 0

    def _make(self) -> Executor:
        if self.workers == 0:
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context(self.context),
            initializer=_worker_init,
        )

    async def start(self) -> None:
        """Start every worker and wait until each has warmed its kernels."""
        self._executor = self._make()
        await self._warm()

    async def _warm(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._executor is not None
        if self.workers == 0:
            await loop.run_in_executor(self._executor, _worker_init)
            return
        # One ping per worker makes the executor spawn them all; each runs the initializer
        # (warm-up) before taking a job.
        await asyncio.gather(
            *(loop.run_in_executor(self._executor, _ping) for _ in range(self.workers))
        )

    async def choose(
        self,
        state: GameState,
        spec: AgentSpec,
        budget: Budget,
        seed: int | None = None,
        memory: Mapping[bytes, bytes] | None = None,
    ) -> Decision:
        """One decision; `memory` is handed to a learning agent before it chooses."""
        seed = self._seed.randrange(2**63) if seed is None else seed
        return await self.run(choose_in_worker, state, spec, budget, seed, memory)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a module-level function in a worker (e.g. a training batch); retried once if
        the pool broke under it."""
        if self._executor is None:
            raise RuntimeError("the engine pool is not started")
        for attempt in (1, 2):
            executor = self._executor
            try:
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(executor, fn, *args)
            except BrokenProcessPool:
                if attempt == 2:
                    raise
                log.warning("engine pool broke; rebuilding and retrying once")
                await self._rebuild(executor)
        raise AssertionError("unreachable")

    async def _rebuild(self, broken: Executor | None) -> None:
        async with self._rebuild_lock:
            if self._executor is not broken:  # another job already rebuilt it
                return
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            self.rebuilds += 1
            self._executor = self._make()
            await self._warm()

    async def close(self) -> None:
        if self._executor is not None:
            executor, self._executor = self._executor, None
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)
