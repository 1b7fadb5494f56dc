"""The opponents people may choose by name on Discord: the four levels plus one plain name per
agent family, each with a fixed spec, a budget answering within about a second a move
(`benchmarks/speed/opponents.py`) and a one-line description in plain words. Why the list is
curated, and which may learn: docs/agents.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.agents import registry
from engine.agents.base import AgentSpec, Budget

#: The move time every curated opponent answers within (about; the deadline margin aside).
MOVE_SECONDS = 1.0
#: The cap given to searching opponents whose depth or simulations normally end far sooner:
#: a safety net for a slow machine, below MOVE_SECONDS so the deadline margin still fits.
_CAP = 0.9


@dataclass(frozen=True, slots=True)
class Opponent:
    """One opponent people may choose: what it is, how long it thinks, what to tell them."""

    name: str
    game: str
    spec: AgentSpec
    budget: Budget
    description: str
    #: The difficulty level this opponent is, if it is one.
    level: str | None = None
    #: Whether it learns from its games (only these exact specs may write learned memory).
    learns: bool = False


def _level(game: str, name: str) -> Opponent:
    lv = registry.LEVELS[game][name]
    return Opponent(name, game, lv.spec, lv.budget, lv.description, level=name)


def _agent(
    game: str, name: str, budget: Budget, description: str, learns: bool = False, **params: object
) -> Opponent:
    spec = AgentSpec(name, dict(params))
    return Opponent(name, game, spec, budget, description, learns=learns)


def _greedy(rule: str, ties: str) -> Opponent:
    return _agent(
        "othello",
        f"greedy-{rule}",
        Budget(),
        f"flips as many discs as it can each move, {ties}; blind to corners and mobility "
        "(easier than easy)",
        tie_break=rule,
    )


_C4, _OTH = "connect4", "othello"

_CURATED: dict[str, tuple[Opponent, ...]] = {
    _C4: (
        *(_level(_C4, n) for n in registry.LEVEL_NAMES),
        _agent(
            _C4,
            "trainer",
            Budget(),
            "learns from every game it plays here: remembers which column did well on each "
            "board it has met; weak at first, better with practice",
            learns=True,
        ),
        _agent(
            _C4,
            "planner",
            Budget(depth=4, time=_CAP),
            "plays by rules of thumb: takes wins, blocks, never hands over a win, sets up "
            "double threats, and scores lines of two and three (a bit easier than medium)",
        ),
        _agent(
            _C4,
            "mcts",
            Budget(nodes=10_000, time=_CAP),
            "plays 10,000 quick random games from the position and picks the move that wins "
            "most often (a little stronger than medium)",
        ),
        _agent(
            _C4,
            "minimax",
            Budget(depth=5, time=_CAP),
            "looks 5 moves ahead for both sides (stronger than medium, weaker than hard)",
        ),
        _agent(
            _C4,
            "expectiminimax",
            Budget(depth=3, time=_CAP),
            "looks 3 moves ahead, and sometimes gambles that you will miss its trap instead of "
            "playing safe (a little weaker than medium)",
        ),
        _agent(
            _C4,
            "onestep",
            Budget(),
            "looks one move ahead: takes a win and blocks a threat, nothing more (as easy as easy)",
        ),
        _agent(_C4, "random", Budget(), "plays any legal move at random: the easiest opponent"),
    ),
    _OTH: (
        *(_level(_OTH, n) for n in registry.LEVEL_NAMES),
        _agent(
            _OTH,
            "mcts",
            Budget(nodes=10_000, time=_CAP),
            "plays 10,000 quick random games from the position and picks the move that wins "
            "most often (far stronger than easy, a little weaker than minimax)",
        ),
        _agent(
            _OTH,
            "minimax",
            Budget(depth=3, time=_CAP),
            "looks 3 moves ahead, valuing mobility, corners and stable discs, and plays the "
            "last 14 moves perfectly (between medium and hard)",
        ),
        _agent(
            _OTH,
            "expectiminimax",
            Budget(depth=3, time=_CAP),
            "looks 3 moves ahead like minimax, but sometimes gambles on a careless reply "
            "instead of playing safe (a little weaker than minimax)",
        ),
        _greedy("first", "ties to the first square from a1"),
        _greedy("center", "ties to the square nearest the centre"),
        _greedy("edge", "ties to the square nearest an edge"),
        _greedy("random", "ties broken a different way each move"),
        _agent(
            _OTH,
            "weightgrid",
            Budget(),
            "learns from every game it plays here which squares are worth owning; mostly flips "
            "as many discs as it can, one move in five takes the discs its grid values most "
            "(weak: below easy)",
            learns=True,
            memory="default",
        ),
        _agent(_OTH, "random", Budget(), "plays any legal move at random: the easiest opponent"),
    ),
}


def _game(game: str) -> tuple[Opponent, ...]:
    if game not in _CURATED:
        raise ValueError(f"unknown game {game!r}: choose one of {', '.join(_CURATED)}")
    return _CURATED[game]


def opponents(game: str) -> list[Opponent]:
    """Every curated opponent of `game`: the levels first, then the agents, easiest last."""
    return list(_game(game))


def names(game: str) -> list[str]:
    """The names people may choose in `game`, in `opponents` order."""
    return [o.name for o in _game(game)]


def opponent(game: str, name: str) -> Opponent:
    """The opponent called `name` (case and spaces ignored); a ValueError listing the names."""
    key = name.strip().lower()
    for o in _game(game):
        if o.name == key:
            return o
    shown = name if len(name) <= 40 else name[:37] + "..."
    raise ValueError(
        f"unknown opponent {shown!r} for {game}: choose one of {', '.join(names(game))}"
    )


def may_learn(game: str, spec: AgentSpec) -> bool:
    """Whether `spec` is exactly a curated learning opponent of `game` (may write memory)."""
    return any(o.learns and o.spec == spec for o in _game(game))
