"""What `/agents` shows: every agent of a game with its levels, ratings and what it has
learned (each learning agent says what it shows of its memory: `LearningAgent.show_memory`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.agents import registry
from engine.agents.base import LearningAgent
from engine.learning import learning_agent, trainable_text
from lobby.memory import LearningMemory
from lobby.models import MemoryInfo, Rating

if TYPE_CHECKING:
    from db.store import Store

log = logging.getLogger(__name__)


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
    shown: dict[str, list[str]]  # memory name -> what the agent shows of it (a heat map...)
    trainable: str | None = None  # how /train names it


async def agents_overview(
    store: Store, hub: LearningMemory | None, game: str
) -> list[AgentOverview]:
    """Every agent of `game`: description, levels, ratings and learned state."""
    board = await store.ratings.leaderboard(game, limit=100_000)
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
        agent = hub.agent(spec, game) if hub is not None else learning_agent(spec, game)
        memories: list[MemoryInfo] = []
        shown: dict[str, list[str]] = {}
        if agent is not None:
            memories = await store.memory.infos(agent.memory_kind)
            for m in memories:
                lines = await _shown(store, agent, m)
                if lines:
                    shown[m.name] = lines
        out.append(
            AgentOverview(
                game,
                info.name,
                info.description,
                levels,
                ratings,
                agent is not None,
                memories,
                shown,
                trainable_text(info.name, game) if agent is not None else None,
            )
        )
    return out


async def _shown(store: Store, agent: LearningAgent, memory: MemoryInfo) -> list[str]:
    """What the agent shows of one stored memory (`show_memory`; nothing if that fails)."""
    try:
        rows: dict[bytes, bytes] = {}
        for key in agent.shown_keys():
            value = await store.memory.get_one(memory.kind, memory.name, key)
            if value is not None:
                rows[key] = value
        return agent.show_memory(rows) if rows else []
    except Exception:
        log.exception("cannot show the memory %s/%s", memory.kind, memory.name)
        return []
