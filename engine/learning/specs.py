"""Naming learning agents: which specs learn, keep a memory, and how to name one that trains.

Shared by the `train` CLI and the lobby (its `/train` and `/agents`), so both agree on what
"a learning agent" and "its memory" mean for a spec.
"""

from __future__ import annotations

from engine.agents import registry
from engine.agents.base import AgentSpec, LearningAgent
from engine.games import new_game


def learning_agent(spec: AgentSpec, game: str) -> LearningAgent | None:
    """The agent `spec` names if it learns, else None. An agent whose factory is a class that is
    not a LearningAgent, or whose entry says it never learns, is never built (building some
    agents loads books, weights or kernels: the Othello expert's took the bot's own process a
    fifth of a second at a person's first move)."""
    info = registry.AGENTS.get(spec.name)
    factory = info.factory if info is not None else None
    if factory is None or (info is not None and info.learns is False):
        return None
    if isinstance(factory, type) and not issubclass(factory, LearningAgent):
        return None
    agent = registry.build(spec, game)
    return agent if isinstance(agent, LearningAgent) else None


def uses_memory(agent: LearningAgent, game: str) -> bool:
    """Whether these settings keep a memory at all (a fixed weight grid does not)."""
    return bool(agent.memory_keys(new_game(game)))


def trainable_text(name: str, game: str) -> str | None:
    """How to name a learning agent so that it trains: `name`, or `name:memory=default`
    for an agent that only learns when given a memory (the weight grid); None if neither."""
    for text in (name, f"{name}:memory=default"):
        try:
            spec, _ = registry.resolve(text, game)
            agent = learning_agent(spec, game)
        except ValueError:
            continue
        if agent is not None and uses_memory(agent, game):
            return text
    return None


def with_memory(spec: AgentSpec, memory: str | None) -> AgentSpec:
    """`spec` using memory `memory` (None: keep the spec's, else "default"), if its agent takes
    a `memory` parameter. Naming a memory is what switches the weight grid to its learned grid."""
    info = registry.AGENTS.get(spec.name)
    if info is None or "memory" not in info.parameters():
        return spec
    if memory is None:
        if "memory" in spec.params:
            return spec
        memory = "default"
    return AgentSpec(spec.name, {**spec.params, "memory": memory})
