"""The memory of learning agents in the lobby's process: an instance of each learning agent,
and a cache of its stored memory rows (loaded whole when small, else key by key; reloaded when
another process wrote it). How and why: docs/learning.md, "The bot side"."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from db.models import MemoryWrite
from engine.agents import registry
from engine.agents.base import AgentSpec, LearningAgent
from engine.games import new_game
from engine.games.base import GameState
from engine.learning import learning_agent, trainable_text

if TYPE_CHECKING:
    from db.store import Store

log = logging.getLogger(__name__)

MemoryId = tuple[str, str]  # (kind, name)

#: A memory with at most this many rows is loaded whole on first use; bigger ones key by key.
FULL_LOAD_LIMIT = 50_000
MAX_AGENTS = 64  # local agent instances kept


@dataclass(slots=True)
class _Memory:
    rows: dict[bytes, bytes] = field(default_factory=dict)
    absent: set[bytes] = field(default_factory=set)
    complete: bool = False  # every row is in `rows`: a missing key is absent
    games_trained: int = 0  # as this process last knew it (to notice other writers)
    checked: float = 0.0  # monotonic time of the last freshness check


class LearningMemory:
    """The learning agents of this process and the cache of their memory rows."""

    def __init__(
        self,
        store: Store,
        *,
        full_load_limit: int = FULL_LOAD_LIMIT,
        recheck_seconds: float = 60.0,
    ) -> None:
        self._store = store
        self.full_load_limit = full_load_limit
        self.recheck_seconds = recheck_seconds
        self._agents: dict[tuple[AgentSpec, str], LearningAgent | None] = {}
        self._memories: dict[MemoryId, _Memory] = {}
        self._locks: dict[MemoryId, asyncio.Lock] = {}

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

    def lock(self, mid: MemoryId) -> asyncio.Lock:
        """One memory's lock: read-learn-write of the same memory must not interleave."""
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
        info = await self._store.memory.info(*mid)
        games = info.games_trained if info is not None else 0
        if mem is not None and mem.games_trained == games:
            mem.checked = now
            return mem
        if mem is not None:
            log.info("memory %s/%s changed outside this process; reloading", *mid)
        mem = _Memory(games_trained=games, checked=now)
        rows = info.rows if info is not None else 0
        if rows <= self.full_load_limit:
            mem.rows = await self._store.memory.get(*mid) if rows else {}
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
                loaded = await self._store.memory.get_one(kind, name, key)
                if loaded is None:
                    mem.absent.add(key)
                else:
                    mem.rows[key] = out[key] = loaded
        return out

    async def all_rows(self, kind: str, name: str) -> dict[bytes, bytes]:
        """The whole memory (loaded completely if it was not yet)."""
        mem = await self._memory((kind, name))
        if not mem.complete:
            mem.rows = await self._store.memory.get(kind, name)
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
        await self._store.memory.apply([MemoryWrite(kind, name, rows, games, "trained")])
        self.cached_put(kind, name, rows, games)

    def cached_put(self, kind: str, name: str, rows: Mapping[bytes, bytes], games: int) -> None:
        """Rows just written (and `games` more trained), into the cache if it holds them."""
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

    def learns(self, specs: Iterable[AgentSpec | None], game: str) -> bool:
        """Whether one of the agents `specs` name learns."""
        return any(s is not None and self.agent(s, game) is not None for s in specs)
