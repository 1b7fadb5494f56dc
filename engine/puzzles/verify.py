"""A shipped puzzle checked again by the solver: its position rebuilt from its moves, proven
afresh, and compared field by field."""

from __future__ import annotations

from engine.games import new_game
from engine.games.base import GameState
from engine.games.connect4 import Connect4State
from engine.games.othello import OthelloState
from engine.puzzles import connect4, othello
from engine.puzzles.pool import Puzzle
from engine.puzzles.proof import Proof, puzzle_id


def position(puzzle: Puzzle) -> GameState:
    """The puzzle's position: its moves played from the start (NotationError or
    IllegalMoveError if they do not fit its game)."""
    state = new_game(puzzle.game)
    for text in puzzle.moves:
        state = state.play(state.parse_move(text))
    return state


def examine(state: GameState, bounded: bool = True) -> Proof | str:
    """The solver's proof for a position of either game, or why it is not a puzzle; within the
    game's node budget, or (`bounded` False) however long it takes."""
    if isinstance(state, Connect4State):
        return connect4.examine(state, connect4.MAX_NODES if bounded else None)
    if isinstance(state, OthelloState):
        return othello.examine(state, othello.MAX_NODES if bounded else None)
    raise ValueError(f"no puzzles for {state.game!r}")


def position_key(state: GameState) -> object:
    """The key a puzzle's id hashes (one for a Connect Four position and its mirror image)."""
    if isinstance(state, Connect4State):
        return connect4.key(state)
    if isinstance(state, OthelloState):
        return othello.key(state)
    raise ValueError(f"no puzzles for {state.game!r}")


def verify(puzzle: Puzzle) -> str | None:
    """None when the solver proves the puzzle as stored; else what differs."""
    state = position(puzzle)
    if puzzle.id != puzzle_id(state, position_key(state)):
        return f"its id is not its position's ({puzzle_id(state, position_key(state))})"
    proof = examine(state, bounded=False)  # a budget must not fail a proven puzzle
    if isinstance(proof, str):
        return f"the solver turns the position down: {proof}"
    stored = (puzzle.answer, puzzle.plies, puzzle.value, puzzle.line[:1])
    if stored != (proof.answer, proof.plies, proof.value, proof.line[:1]):
        return (
            f"stored answer {puzzle.answer} in {puzzle.plies} plies, value {puzzle.value}; "
            f"the solver: {proof.answer} in {proof.plies}, value {proof.value}"
        )
    return line_fault(state, puzzle)


def line_fault(state: GameState, puzzle: Puzzle) -> str | None:
    """None when the stored line is legal, ends the game where it ends and gives the stored
    result: the side to move wins at its last ply (Connect Four), or ends `value` discs up
    (Othello)."""
    side, end = state.to_move(), state
    for text in puzzle.line:
        if end.is_over():
            return "the line goes on after the game's end"
        end = end.play(end.parse_move(text))
    outcome = end.outcome()
    if outcome is None:
        return "the line stops before the game's end"
    if isinstance(end, Connect4State):
        if outcome.winner != side or len(puzzle.line) != puzzle.plies:
            return "the line is not the side to move's win in the stored plies"
    elif outcome.score is None or outcome.score[side] - outcome.score[1 - side] != puzzle.value:
        return f"the line ends {outcome.score} (stored value {puzzle.value})"
    return None
