"""The greedy Othello agents: the move flipping the most discs, with one of three tie-breaks
(first square from a1, nearest the centre, nearest an edge) or one of them at random each move.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from engine.agents.base import Agent, AgentInfo, Budget, Decision, choice, require_moves
from engine.games.base import GameState, Move


def _centre_distance(square: int) -> float:
    f, r = square % 8, square // 8
    return float((f - 3.5) ** 2 + (r - 3.5) ** 2)


def _edge_distance(square: int) -> float:
    f, r = square % 8, square // 8
    return float(min(f, 7 - f, r, 7 - r))


TIE_BREAKS: dict[str, Callable[[int], float] | None] = {
    "first": None,
    "center": _centre_distance,
    "edge": _edge_distance,
}


def greedy_move(state: GameState, tie_break: str) -> tuple[Move, int]:
    """The max-flip move under `tie_break` and how many discs it flips."""
    from engine.games.othello import PASS, OthelloState

    if not isinstance(state, OthelloState):
        raise TypeError("the greedy strategies play Othello only")
    moves = require_moves(state)
    if moves == [PASS]:
        return PASS, 0
    flips = {m: state.flips(m).bit_count() for m in moves}
    best = max(flips.values())
    tied = [m for m in moves if flips[m] == best]  # ascending a1..h8 order
    key = TIE_BREAKS[tie_break]
    if key is None:
        return tied[0], best
    return min(tied, key=key), best  # min() keeps the first of equal keys


class GreedyAgent(Agent):
    """Maximise discs flipped; `tie_break` is first, center, edge, or random (per move)."""

    def __init__(self, tie_break: str = "first") -> None:
        if tie_break not in (*TIE_BREAKS, "random"):
            raise ValueError(f"unknown tie_break {tie_break!r}: first, center, edge or random")
        self.tie_break = tie_break

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        rule = self.tie_break
        if rule == "random":
            rule = rng.choice(list(TIE_BREAKS))
        move, flipped = greedy_move(state, rule)
        return Decision(move=move, score=flipped, depth=1, info={"tie_break": rule})


#: The greedy family's one parameter (the four registry names only set its default).
PARAMS = (
    choice(
        "tie_break",
        (*TIE_BREAKS, "random"),
        "which of several moves flipping as many discs it plays",
    ),
)

AGENT_INFOS = [
    AgentInfo(
        f"greedy-{rule}",
        ("othello",),
        f"flips as many discs as it can each move, {text}; blind to corners and mobility, "
        "so it is easy to beat",
        GreedyAgent,
        defaults={"tie_break": rule},
        params=PARAMS,
    )
    for rule, text in (
        ("first", "ties to the first square from a1"),
        ("center", "ties to the square nearest the centre"),
        ("edge", "ties to the square nearest an edge"),
        ("random", "ties broken a different way each move"),
    )
]
