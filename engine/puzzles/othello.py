"""Othello puzzles: "best move" in an exact endgame of 10..16 empty squares. Every legal move is
solved to the end (engine/agents/othello/endgame.py) and the best must be strictly better than
every other; positions with a pass to play or fewer than two legal moves are not puzzles."""

from __future__ import annotations

import numpy as np

from engine.agents.othello.evals import final_score
from engine.agents.othello.search import OthelloSearch, OutOfBudget
from engine.games.othello import PASS, OthelloState
from engine.puzzles import difficulty
from engine.puzzles import proof as pf

MIN_EMPTIES, MAX_EMPTIES = 10, 16
#: Endgame nodes one position may take (with every move checked and the line) before it is
#: passed over.
MAX_NODES = 60_000_000

_SEARCH: dict[str, OthelloSearch] = {}


def shared_search() -> OthelloSearch:
    """The process's solver tables, made on first use (the endgame's are 2^20 entries)."""
    if "search" not in _SEARCH:
        _SEARCH["search"] = OthelloSearch()
    return _SEARCH["search"]


def empties(state: OthelloState) -> int:
    return 64 - (state.black | state.white).bit_count()


def key(state: OthelloState) -> tuple[int, int, int]:
    return state.key()


def value(search: OthelloSearch, state: OthelloState, alpha: int = -64, beta: int = 64) -> int:
    """The exact final disc margin for the side to move (fail-soft bound outside the window)."""
    if state.is_over():
        return int(final_score(np.uint64(state.me), np.uint64(state.opp)))
    return search.solve(state.me, state.opp, alpha, beta)[0]


def best_move(search: OthelloSearch, state: OthelloState) -> tuple[int, int]:
    """(exact value, a best move) of an unfinished position."""
    v, move = search.solve(state.me, state.opp)
    moves = state.legal_moves()
    if move not in moves:  # a root settled by the table alone may name no move
        move = next(m for m in moves if -value(search, state.play(m)) == v)
    return v, move


def principal_line(search: OthelloSearch, state: OthelloState) -> list[int]:
    """The solver's best moves to the end of the game (passes included)."""
    line: list[int] = []
    while not state.is_over():
        move = best_move(search, state)[1]
        line.append(move)
        state = state.play(move)
    return line


def second_best_gap(search: OthelloSearch, state: OthelloState, best: int, v: int) -> bool:
    """Whether every move but `best` ends strictly worse than `v` for the side to move: a
    null-window solve of each (value(move) = -value(child) < v)."""
    for move in state.legal_moves():
        if move != best and -value(search, state.play(move), -v, -v + 1) >= v:
            return False
    return True


def rating(state: OthelloState, answer: str) -> float:
    """A starting rating: more empty squares, more legal moves and answers the weaker searches
    miss make it harder."""
    base = 13.0 + 1.5 * (empties(state) - MIN_EMPTIES) + 0.5 * (len(state.legal_moves()) - 2)
    return difficulty.rating(base, difficulty.misses(state, answer))


def examine(state: OthelloState, max_nodes: int | None = MAX_NODES) -> pf.Proof | str:
    """The puzzle's proof for this position, or why it is none (a reason of `proof`);
    `max_nodes` None: no budget."""
    if state.is_over():
        return pf.OVER
    n = empties(state)
    if not MIN_EMPTIES <= n <= MAX_EMPTIES:
        return pf.OUT_OF_RANGE
    moves = state.legal_moves()
    if moves == [PASS] or len(moves) < 2:
        return pf.NO_CHOICE
    search = shared_search()
    search.reset(None, max_nodes)
    try:
        v, best = best_move(search, state)
        if not second_best_gap(search, state, best, v):
            return pf.NOT_UNIQUE
        line = principal_line(search, state)
    except OutOfBudget:
        return pf.BUDGET
    if line[0] != best:  # the solver contradicts itself: pass over it
        return pf.BUDGET
    text = tuple(state.move_to_str(m) for m in line)
    return pf.Proof(text[0], n, v, text, rating(state, text[0]))
