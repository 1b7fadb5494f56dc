"""The jobs a worker process runs for the engine pool: an agent's decision, a warm-up step, and
the agents a worker keeps between jobs. Module-level functions, so they pickle into the worker
(`lobby.worker`); the pool that sends them: `lobby.pool`."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from engine import warm as warming
from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, Decision, LearningAgent
from engine.games.base import GameState
from lobby.worker import repeatable

# Agents are built once per worker process and reused: building may load numba kernels or
# learned memory.
_agents: OrderedDict[tuple[AgentSpec, str], Agent] = OrderedDict()
#: Agents kept per worker, least recently used dropped first: an agent can hold a big table
#: (an Othello search table is 16 MB), and specs come from people.
MAX_AGENTS = 32


def worker_agent(spec: AgentSpec, game: str) -> Agent:
    """This process's instance of the agent a spec names (built on first use)."""
    key = (spec, game)
    agent = _agents.get(key)
    if agent is None:
        agent = _agents[key] = registry.build(spec, game)
        while len(_agents) > MAX_AGENTS:
            _agents.popitem(last=False)
    else:
        _agents.move_to_end(key)
    return agent


@repeatable  # a compile ate its time budget: the worker decides again
def choose_in_worker(
    state: GameState,
    spec: AgentSpec,
    budget: Budget,
    seed: int,
    memory: Mapping[bytes, bytes] | None = None,
    least: float | None = None,
) -> Decision:
    """Run one agent decision (module level so it pickles into the worker).

    A learning agent first gets `memory`: the rows its `memory_keys(state)` asked for, loaded
    by the lobby (the worker never touches SQLite). Building the agent (the first time in this
    worker: its tables, books, weights) counts in the time budget too, down to `least` seconds
    (`after_wait`: half the budget before any wait; half this one without).
    """
    began = time.monotonic()
    agent = worker_agent(spec, state.game)
    budget = after_build(budget, time.monotonic() - began, least)
    if memory is not None and isinstance(agent, LearningAgent):
        agent.use_memory(memory)
    return agent.choose(state, budget, random.Random(seed))


#: A decision's time budget is what the wait for its move may take: the time since the person
#: began to wait (the lobby's own work before the job is queued, then waiting for a worker to
#: start, to load its agent's kernels, to finish another move) counts in it, but leaves the
#: agent at least this share of its budget to think.
MIN_THINKING = 0.5


def after_wait(args: tuple[Any, ...], waited: float) -> tuple[Any, ...]:
    """`choose_in_worker`'s arguments with its time budget shortened by the `waited` seconds,
    and the least it may think (`least`: what the worker's build of the agent may not take)."""
    state, spec, budget, seed, memory = args
    if budget.time is None:
        return args
    least = budget.time * MIN_THINKING
    left = max(least, budget.time - max(0.0, waited))
    return (state, spec, dataclasses.replace(budget, time=left), seed, memory, least)


def after_build(budget: Budget, built: float, least: float | None) -> Budget:
    """`budget` shortened by the `built` seconds the worker took to build its agent, to no
    less than `least` (None: half of it)."""
    if budget.time is None or built <= 0:
        return budget
    floor = budget.time * MIN_THINKING if least is None else min(least, budget.time)
    return dataclasses.replace(budget, time=max(floor, budget.time - built))


#: The niceness of a warm-up nobody waits for (Linux: of its thread only).
GENTLE = 10


def warm_in_worker(step: warming.WarmStep, gentle: bool = False) -> None:
    """Compile (or load) every kernel of a step's agent (with an instance of its own: the
    worker keeps only the agents its jobs use, whose tables can be big).

    `gentle`: in a thread of low priority (the worker's own thread, which runs the decisions,
    keeps its priority), so a background warm-up takes the CPU only when nothing else, a
    person's first move compiling beside it above all, wants it."""

    def warm() -> None:
        warming.warm_step(step)

    if not gentle or not sys.platform.startswith("linux"):
        warm()
        return
    failed: list[BaseException] = []

    def run() -> None:
        with contextlib.suppress(OSError):  # a thread's niceness: Linux's setpriority by tid
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), GENTLE)
        try:
            warm()
        except BaseException as exc:  # raised in the worker's thread, as if it ran there
            failed.append(exc)

    thread = threading.Thread(target=run, name="warm-up")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
