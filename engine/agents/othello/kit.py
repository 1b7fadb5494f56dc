"""Othello's kit (engine/kits.py): what the game provides beyond its rules to the shared agents,
the analysis and the pictures. Everything heavy is imported when first used."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.agents.base import AgentSpec, Param, choice, integer
from engine.agents.othello.evals import EVALS
from engine.games.base import GameState, Move
from engine.picture import Disc, Picture

if TYPE_CHECKING:
    from engine.agents.base import Agent
    from engine.agents.mcts import Tree
    from engine.analysis import Review

# -- the analysis (engine.analysis) ---------------------------------------------------------

ANALYSIS_BUDGET = 9.0
MOVE_WORD = "square"


def split_run(text: str) -> list[str]:
    """Squares like d3, and `pass`."""
    return re.findall(r"pass|[a-h][1-8]|.", text)


def load_solvers() -> None:
    from engine.agents.othello import analysis

    analysis.load_solvers()


def review(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    from engine.agents.othello import analysis

    return analysis.review(states, moves, deadline)


# -- the searches of minimax and expectiminimax (engine.agents.minimax) ----------------------

EVAL_PARAMS: tuple[Param, ...] = (
    choice(
        "eval",
        EVALS,
        "how it scores a position: mobility, corners, stable discs",
        games=("othello",),
    ),
)
#: How soon minimax tries the exact endgame solve (within the move's time).
MINIMAX_PARAMS: tuple[Param, ...] = (
    integer(
        "endgame_empties",
        0,
        20,
        "from how many empty squares it tries to play the rest perfectly (within its time)",
        games=("othello",),
    ),
)


def check_eval(eval: str) -> str:
    name = eval or "standard"
    if name not in EVALS:
        raise ValueError(f"unknown othello eval {name!r}: choose one of {', '.join(EVALS)}")
    return name


def minimax(eval: str, endgame_empties: int) -> Agent:
    """`endgame_empties` -1: the default."""
    from engine.agents.othello.minimax import ENDGAME_EMPTIES, OthelloMinimax

    empties = ENDGAME_EMPTIES if endgame_empties < 0 else endgame_empties
    return OthelloMinimax(eval=eval, endgame_empties=empties)


def expectiminimax(eval: str, chance_plies: int) -> Agent:
    from engine.agents.othello.minimax import OthelloExpectiminimax

    return OthelloExpectiminimax(eval=eval, chance_plies=chance_plies)


# -- hints (engine.hints) ---------------------------------------------------------------------

#: Positions with at most this many empty squares are solved to the end without a time limit
#: (a fraction of a second on one core).
SOLVE_EMPTIES = 14


def solved_hint(state: GameState, seconds: float) -> tuple[str, str] | None:
    return None  # the endgame solver is the expert agent's own: its decision says so


def solve_to_end(state: GameState) -> bool:
    from engine.games.othello import OthelloState

    assert isinstance(state, OthelloState)
    return 64 - (state.black | state.white).bit_count() <= SOLVE_EMPTIES


# -- mcts (engine.agents.mcts) -----------------------------------------------------------------

MCTS_FANOUT = 33


def mcts_runner(state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
    from engine.agents.othello import mcts

    return mcts.runner(state, tree, c)


# -- training (tools/training) -----------------------------------------------------------------


def training_evals(
    learner: Agent, spec: AgentSpec
) -> tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...]:
    """What a learner is measured against while it trains, as (label, opponent, the learner's
    parameters overridden): greedy-random and random, plus the learned grid on every move
    (capture_share 1) for a learner that has one."""
    evals: list[tuple[str, str, tuple[tuple[str, Any], ...]]] = [
        ("greedy-random", "greedy-random", ()),
        ("random", "random", ()),
    ]
    if hasattr(learner, "capture_share"):
        evals.append(("greedy-random(capture=1)", "greedy-random", (("capture_share", 1.0),)))
    return tuple(evals)


# -- pictures (engine.picture) ---------------------------------------------------------------

FILES = "abcdefgh"


def picture(state: GameState, last: Move | None) -> Picture:
    """The discs on the board, the last one ringed; coordinates on every edge."""
    from engine.games.othello import OthelloState

    assert isinstance(state, OthelloState)
    discs = tuple(
        Disc(sq % 8, 7 - sq // 8, 0 if (state.black >> sq) & 1 else 1, sq == last)
        for sq in range(64)
        if ((state.black | state.white) >> sq) & 1
    )
    return Picture(
        cols=8,
        rows=8,
        board="green",
        grid=True,
        pieces=("black", "white"),
        discs=discs,
        col_labels=tuple(FILES),
        row_labels=tuple(str(8 - r) for r in range(8)),
        labels_above=True,
    )
