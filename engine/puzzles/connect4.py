"""Connect Four puzzles: "win in N". The side to move wins in N plies (both sides' moves, N odd,
3..15) against any defence, and exactly one of its moves wins at all (the others draw or lose,
whatever the distance). Proven by the perfect solver with its books (engine/agents/connect4)."""

from __future__ import annotations

from engine.agents.connect4 import solver
from engine.agents.connect4.lines import centre_order
from engine.agents.connect4.score import from_score
from engine.games.connect4 import Connect4State
from engine.puzzles import difficulty
from engine.puzzles import proof as pf

MIN_PLIES, MAX_PLIES = 3, 15
#: Nodes the solver may spend on one position before it is passed over (a position this near
#: a win takes far fewer; the ones that need more are long draws or far wins).
MAX_NODES = 3_000_000


def key(state: Connect4State) -> tuple[int, int, int, int, int]:
    """The position's key, one for a position and its mirror image."""
    return min(state.key(), state.mirror_key())


def win_plies(state: Connect4State, score: int) -> int:
    """Plies to the win of the side to move (both sides' moves, the winning one counted) from
    its positive Pons score."""
    outcome, own_moves = from_score(score, state.ply, state.rows * state.cols)
    assert outcome == "win"
    return 2 * own_moves - 1


def winning_moves(state: Connect4State, max_nodes: int | None = MAX_NODES) -> list[int]:
    """Every column that wins for the side to move, at any distance (BudgetExceeded past
    `max_nodes` a child)."""
    wins = set(state.winning_moves())
    for col in state.legal_moves():
        if col not in wins and solver.solve_weak(state.play(col), max_nodes=max_nodes) < 0:
            wins.add(col)
    return sorted(wins)


def principal_line(state: Connect4State, max_nodes: int | None = MAX_NODES) -> list[int]:
    """The solver's line to the end: each side plays a move that keeps the exact score (the
    winner the quickest win, the loser the longest defence), the most central of them."""
    line: list[int] = []
    order = centre_order(state.cols)
    while not state.is_over():
        _, best = solver.best_moves(state, max_nodes=max_nodes)
        col = min(best, key=order.index)
        line.append(col)
        state = state.play(col)
    return line


def rating(state: Connect4State, answer: str, plies: int) -> float:
    """A starting rating: longer wins are harder, and so are positions with more moves that do
    not lose at once and answers the weaker searches miss."""
    choices = len(solver.non_losing_moves(state))
    base = 12.0 + 1.2 * (plies - MIN_PLIES) + 0.5 * (choices - 1)
    return difficulty.rating(base, difficulty.misses(state, answer))


def examine(state: Connect4State, max_nodes: int | None = MAX_NODES) -> pf.Proof | str:
    """The puzzle's proof for this position, or why it is none (a reason of `proof`);
    `max_nodes` None: no budget."""
    if state.is_over():
        return pf.OVER
    if state.winning_moves():
        return pf.OUT_OF_RANGE  # a win in one ply
    try:
        score = solver.solve(state, max_nodes=max_nodes)
        if score <= 0 or not MIN_PLIES <= win_plies(state, score) <= MAX_PLIES:
            return pf.OUT_OF_RANGE
        wins = winning_moves(state, max_nodes)
        if len(wins) != 1:
            return pf.NOT_UNIQUE
        line = principal_line(state, max_nodes)
    except solver.BudgetExceeded:
        return pf.BUDGET
    plies = win_plies(state, score)
    if line[0] != wins[0] or len(line) != plies:  # the solver contradicts itself: pass over it
        return pf.BUDGET
    moves = [state.move_to_str(c) for c in line]
    return pf.Proof(moves[0], plies, plies, tuple(moves), rating(state, moves[0], plies))
