"""The registry's `minimax` and `expectiminimax`, both games: each factory builds the search of
the game it is given (`connect4.minimax`, `othello.minimax`; docs/agents.md says how they are
shared). Light on purpose: a search is imported only when an agent is built, so importing the
registry compiles nothing (the Connect Four search's recursive kernels take seconds to compile
on a first run)."""

from __future__ import annotations

from engine.agents.base import Agent, AgentInfo, Budget, Limits, choice, integer
from engine.agents.connect4 import evals as connect4_evals
from engine.agents.othello.evals import EVALS as OTHELLO_EVALS
from engine.agents.searchparams import CHANCE, DEFAULT_DEPTH


def _othello_evals() -> tuple[str, ...]:
    return tuple(OTHELLO_EVALS)


def _check_eval(game: str, eval: str) -> str:
    if game == "connect4":
        name = eval or "checkers"
        connect4_evals.eval_id(name)
        return name
    if game == "othello":
        name = eval or "standard"
        choices = _othello_evals()
        if name not in choices:
            raise ValueError(f"unknown othello eval {name!r}: choose one of {', '.join(choices)}")
        return name
    raise ValueError(f"minimax plays connect4 and othello, not {game!r}")


def make_minimax(game: str = "connect4", eval: str = "", endgame_empties: int = -1) -> Agent:
    """The `minimax` agent of `game` (C4Minimax or OthelloMinimax); `endgame_empties` (Othello;
    -1: the default) is where the exact solve is tried from."""
    name = _check_eval(game, eval)
    if game == "othello":
        from engine.agents.othello.minimax import ENDGAME_EMPTIES, OthelloMinimax

        empties = ENDGAME_EMPTIES if endgame_empties < 0 else endgame_empties
        return OthelloMinimax(eval=name, endgame_empties=empties)
    from engine.agents.connect4.minimax import C4Minimax

    return C4Minimax(eval=name)


def make_expectiminimax(game: str = "connect4", eval: str = "", chance_plies: int = 2) -> Agent:
    """The `expectiminimax` agent of `game` (C4Expectiminimax or OthelloExpectiminimax)."""
    name = _check_eval(game, eval)
    if game == "othello":
        from engine.agents.othello.minimax import OthelloExpectiminimax

        return OthelloExpectiminimax(eval=name, chance_plies=chance_plies)
    from engine.agents.connect4.minimax import C4Expectiminimax

    return C4Expectiminimax(eval=name, chance_plies=chance_plies)


EVAL_PARAMS = (
    choice(
        "eval",
        connect4_evals.EVALS,
        "how it scores a position it stops at: discs still to play, open lines, or lines of three",
        games=("connect4",),
    ),
    choice(
        "eval",
        OTHELLO_EVALS,
        "how it scores a position: mobility, corners, stable discs",
        games=("othello",),
    ),
)

#: Othello only: how soon the exact endgame solve is tried (within the move's time).
ENDGAME_PARAMS = (
    integer(
        "endgame_empties",
        0,
        20,
        "from how many empty squares it tries to play the rest perfectly (within its time)",
        games=("othello",),
    ),
)

#: A search deeper than the board has empty cells (Connect Four) or moves (Othello) is moot.
_SEARCH_CEILING = Limits(time=None, nodes=None, depth=60)

AGENT_INFOS = [
    AgentInfo(
        "minimax",
        ("connect4", "othello"),
        "looks a few moves ahead for both sides and plays the move that holds up best against "
        "every reply; the deeper, the stronger",
        make_minimax,
        budget=Budget(depth=DEFAULT_DEPTH),
        params=EVAL_PARAMS + ENDGAME_PARAMS,
        ceiling=_SEARCH_CEILING,
    ),
    AgentInfo(
        "expectiminimax",
        ("connect4", "othello"),
        "like minimax, but also weighs what happens if the next replies are random, and plays "
        "for that only when it looks better",
        make_expectiminimax,
        budget=Budget(depth=DEFAULT_DEPTH),
        params=EVAL_PARAMS + CHANCE,
        ceiling=_SEARCH_CEILING,
    ),
]
