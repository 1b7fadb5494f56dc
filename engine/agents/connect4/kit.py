"""Connect Four's kit (engine/kits.py): what the game provides beyond its rules to the shared
agents, the analysis and the pictures. Everything heavy is imported when first used."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.agents.base import AgentSpec, LearningAgent, Param, choice
from engine.agents.connect4.evals import EVALS, eval_id
from engine.games.base import GameState, Move
from engine.picture import Disc, Picture

if TYPE_CHECKING:
    from engine.agents.base import Agent
    from engine.agents.mcts import Tree
    from engine.analysis import Review

# -- the analysis (engine.analysis) ---------------------------------------------------------

ANALYSIS_BUDGET = 4.5
MOVE_WORD = "column"


def split_run(text: str) -> list[str]:
    """One column character a move."""
    return list(text)


def load_solvers() -> None:
    from engine.agents.connect4 import analysis

    analysis.load_solvers()


def review(states: list[GameState], moves: list[str], deadline: float) -> list[Review]:
    from engine.agents.connect4 import analysis

    return analysis.review(states, moves, deadline)


# -- the searches of minimax and expectiminimax (engine.agents.minimax) ----------------------

EVAL_PARAMS: tuple[Param, ...] = (
    choice(
        "eval",
        EVALS,
        "how it scores a position it stops at: discs still to play, open lines, or lines of three",
        games=("connect4",),
    ),
)
MINIMAX_PARAMS: tuple[Param, ...] = ()


def check_eval(eval: str) -> str:
    name = eval or "checkers"
    eval_id(name)
    return name


def minimax(eval: str, endgame_empties: int) -> Agent:
    from engine.agents.connect4.minimax import C4Minimax

    return C4Minimax(eval=eval)


def expectiminimax(eval: str, chance_plies: int) -> Agent:
    from engine.agents.connect4.minimax import C4Expectiminimax

    return C4Expectiminimax(eval=eval, chance_plies=chance_plies)


# -- hints (engine.hints) ---------------------------------------------------------------------


def solved_hint(state: GameState, seconds: float) -> tuple[str, str] | None:
    from engine.agents.connect4 import score
    from engine.games.connect4 import Connect4State

    assert isinstance(state, Connect4State)
    return score.solved_hint(state, seconds)


def solve_to_end(state: GameState) -> bool:
    return False


# -- mcts (engine.agents.mcts) -----------------------------------------------------------------

MCTS_FANOUT = 8


def mcts_runner(state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
    from engine.agents.connect4 import mcts

    return mcts.runner(state, tree, c)


# -- training (tools/training) -----------------------------------------------------------------


def training_evals(
    learner: Agent, spec: AgentSpec
) -> tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...]:
    """What a learner is measured against while it trains, as (label, opponent, the learner's
    parameters overridden): random, onestep and the untrained self (the same settings with an
    empty memory), all greedy (exploration 0)."""
    greedy: tuple[tuple[str, Any], ...] = (
        (("exploration", 0.0),) if hasattr(learner, "exploration") else ()
    )
    evals = [("random", "random", greedy), ("onestep", "onestep", greedy)]
    if isinstance(learner, LearningAgent):
        params = {**spec.params, **dict(greedy)}
        params.pop("memory", None)
        spec_text = spec.name + "".join(f":{k}={v}" for k, v in sorted(params.items()))
        evals.append(("untrained-self", spec_text, greedy))
    return tuple(evals)


# -- pictures (engine.picture) ---------------------------------------------------------------


def picture(state: GameState, last: Move | None) -> Picture:
    """Every hole of the frame, a disc or empty; the last disc and a winning line ringed."""
    from engine.games.connect4 import Connect4State

    assert isinstance(state, Connect4State)
    grid = state.board()  # row 0 at the top
    ringed = {state.cell_of(bit) for bit in state.outcome_cells()}  # (col, row from the bottom)
    if last is not None:
        ringed.add((int(last), state.heights[int(last)] - 1))
    discs = tuple(
        Disc(c, r, None if int(grid[r, c]) == 0 else int(grid[r, c]) - 1,
             (c, state.rows - 1 - r) in ringed)
        for r in range(state.rows)
        for c in range(state.cols)
    )  # fmt: skip
    return Picture(
        cols=state.cols,
        rows=state.rows,
        board="blue",
        grid=False,
        pieces=("red", "yellow"),
        discs=discs,
        col_labels=tuple(str(c + 1) for c in range(state.cols)),
    )
