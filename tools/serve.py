"""The engine protocol: one position per line in, one move per line out.

Outside tools measure agents through it the way chess engines are measured over UCI, so it must
never crash or hang on bad input: every line gets exactly one reply, `error: <reason>` included.
The format: docs/architecture.md, "The engine protocol".
"""

from __future__ import annotations

import random
from typing import TextIO

from engine.agents.base import Agent, Budget
from engine.games import parse_position
from engine.games.base import NotationError

MAX_LINE = 4096  # far above any legal position; longer lines are refused unparsed


def answer(
    line: str,
    game: str,
    agent: Agent,
    budget: Budget,
    rng: random.Random,
    variant: str | None = None,
) -> str:
    """The reply to one protocol line: a move in the game's notation, or `error: ...`."""
    if len(line) > MAX_LINE:
        return f"error: line too long ({len(line)} characters, at most {MAX_LINE})"
    try:
        state = parse_position(game, line, variant)
    except (NotationError, ValueError) as exc:
        return f"error: {exc}"
    if state.is_over():
        return "error: the game is over in this position"
    try:
        decision = agent.choose(state, budget, rng)
    except Exception as exc:  # an agent bug must not kill the loop; say what happened
        return f"error: the agent failed: {type(exc).__name__}: {exc}"
    return state.move_to_str(decision.move)


def serve(
    game: str,
    agent: Agent,
    budget: Budget,
    seed: int | None,
    stdin: TextIO,
    stdout: TextIO,
    variant: str | None = None,
) -> int:
    """Answer lines from `stdin` until EOF; returns the number of lines answered."""
    rng = random.Random(seed)
    count = 0
    for raw in stdin:
        line = raw.rstrip("\r\n")
        stdout.write(answer(line, game, agent, budget, rng, variant) + "\n")
        stdout.flush()
        count += 1
    return count
