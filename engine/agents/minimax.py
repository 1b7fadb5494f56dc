"""The registry's `minimax` and `expectiminimax`, every game: each factory builds the search its
game's kit provides (engine/kits.py: Connect Four's `connect4.minimax`, Othello's
`othello.minimax`; docs/agents.md says how they are shared). Light on purpose: a search is
imported only when an agent is built, so importing the registry compiles nothing (the Connect
Four search's recursive kernels take seconds to compile on a first run)."""

from __future__ import annotations

from typing import Protocol, cast

from engine.agents.base import Agent, AgentInfo, Budget, Limits, Param
from engine.agents.searchparams import CHANCE, DEFAULT_DEPTH
from engine.games import GAMES
from engine.kits import kit


class SearchKit(Protocol):
    """What a game's kit provides for minimax and expectiminimax (engine/kits.py)."""

    #: The `eval` parameter of the game (its choices), and minimax's own parameters.
    EVAL_PARAMS: tuple[Param, ...]
    MINIMAX_PARAMS: tuple[Param, ...]

    def check_eval(self, eval: str) -> str:
        """The evaluation's name ("": the game's default); ValueError for an unknown one."""
        ...

    def minimax(self, eval: str, endgame_empties: int) -> Agent: ...

    def expectiminimax(self, eval: str, chance_plies: int) -> Agent: ...


def search_kit(game: str) -> SearchKit:
    return cast(SearchKit, kit(game))


def make_minimax(game: str = "connect4", eval: str = "", endgame_empties: int = -1) -> Agent:
    """The `minimax` agent of `game`; `endgame_empties` (Othello; -1: the default) is where the
    exact solve is tried from."""
    searches = search_kit(game)
    return searches.minimax(searches.check_eval(eval), endgame_empties)


def make_expectiminimax(game: str = "connect4", eval: str = "", chance_plies: int = 2) -> Agent:
    """The `expectiminimax` agent of `game`."""
    searches = search_kit(game)
    return searches.expectiminimax(searches.check_eval(eval), chance_plies)


EVAL_PARAMS = tuple(p for game in GAMES for p in search_kit(game).EVAL_PARAMS)
MINIMAX_PARAMS = tuple(p for game in GAMES for p in search_kit(game).MINIMAX_PARAMS)

#: A search deeper than the board has empty cells (Connect Four) or moves (Othello) is moot.
_SEARCH_CEILING = Limits(time=None, nodes=None, depth=60)

AGENT_INFOS = [
    AgentInfo(
        "minimax",
        GAMES,
        "looks a few moves ahead for both sides and plays the move that holds up best against "
        "every reply; the deeper, the stronger",
        make_minimax,
        budget=Budget(depth=DEFAULT_DEPTH),
        params=EVAL_PARAMS + MINIMAX_PARAMS,
        ceiling=_SEARCH_CEILING,
        learns=False,
    ),
    AgentInfo(
        "expectiminimax",
        GAMES,
        "like minimax, but also weighs what happens if the next replies are random, and plays "
        "for that only when it looks better",
        make_expectiminimax,
        budget=Budget(depth=DEFAULT_DEPTH),
        params=EVAL_PARAMS + CHANCE,
        ceiling=_SEARCH_CEILING,
        learns=False,
    ),
]
