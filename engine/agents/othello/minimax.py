"""Othello minimax and expectiminimax: iterative deepening with aspiration windows over the
search of `search.py`, and the exact endgame solve when it fits the budget. Details:
docs/agents.md.
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from engine.agents.base import Agent, Budget, Decision, require_moves
from engine.agents.othello.evals import EVAL_BOUND, EVALS, WIN
from engine.agents.othello.search import LEAVES, OthelloSearch, OutOfBudget, SearchResult
from engine.games.base import GameState
from engine.games.othello import PASS, OthelloState
from engine.games.othkernels import legal_mask

_CORNERS = np.uint64(0x8100000000000081)
DEFAULT_DEPTH = 3
"""The depth searched when the budget sets no limit at all."""
ENDGAME_EMPTIES = 14
"""Default for the agents: try the exact solve from this many empties when a time or node
budget bounds the move (the solve is abandoned, for the midgame move, if it cannot finish).
20 plays more endgames exactly but spends up to the whole second on moves of 15-20 empties,
which made the chaos run's restarts (one engine worker, many matches) converge late."""
UNBOUNDED_SOLVE_EMPTIES = 14
"""With no budget at all, the exact solve runs (unbounded) from this many empties at most."""
SAFETY_SECONDS = 0.06
"""With a time budget the search stops this much (at most a tenth of the budget) before its end:
the last chunk, the move's bookkeeping and the process's other threads fit in it, and a move
of a one-second level is in before 0.95 s on a loaded machine."""
ASPIRATION = 120
"""Half-width of the midgame aspiration window around the last iteration's score (centidiscs)."""
NEXT_ITERATION = 0.4
"""With a time budget, no new midgame iteration starts after this share of it: the next one
would take several times longer and be thrown away unfinished."""


def _othello(state: GameState) -> OthelloState:
    if not isinstance(state, OthelloState):
        raise TypeError("this agent plays Othello only")
    return state


def _check_eval(name: str) -> str:
    if name not in EVALS:
        raise ValueError(f"unknown Othello eval {name!r}: choose one of {', '.join(EVALS)}")
    return name


def minimax_search(
    search: OthelloSearch, state: OthelloState, budget: Budget, endgame_empties: int
) -> SearchResult:
    """Iterative deepening (and an exact endgame solve when it fits) under `budget`."""
    moves = require_moves(state)
    start = time.perf_counter()
    deadline = budget.deadline(start)
    if deadline is not None and budget.time is not None:
        deadline -= min(SAFETY_SECONDS, 0.1 * budget.time)
    search.reset(deadline, budget.nodes)
    me, opp = state.me, state.opp
    empties = 64 - (me | opp).bit_count()
    if moves == [PASS]:
        return SearchResult(PASS, 0.0, 0, 0, False, True)
    limited = budget.time is not None or budget.nodes is not None
    max_depth = budget.depth if budget.depth is not None else (60 if limited else DEFAULT_DEPTH)
    # The exact solve runs when something bounds it (a time or node budget: it is abandoned if
    # it cannot finish) or the depth cap reaches the end anyway; a bare depth cap (a weakened
    # level) keeps it off. With no budget at all it runs unbounded, to UNBOUNDED_SOLVE_EMPTIES.
    if limited:
        endgame = empties <= endgame_empties
    elif budget.depth is None:
        endgame = empties <= min(endgame_empties, UNBOUNDED_SOLVE_EMPTIES)
    else:
        endgame = empties <= endgame_empties and budget.depth >= empties
    # In the endgame keep the midgame pass short: the exact solve is what counts.
    if endgame:
        max_depth = min(max_depth, 4)
    budget_time = budget.time
    result = SearchResult(moves[0], 0.0, 0, 0, False, False)
    score = 0
    for depth in range(1, max_depth + 1):
        search.stats[LEAVES] = 0
        try:
            score, move = _aspiration(search, me, opp, depth, score if depth > 2 else None)
        except OutOfBudget:
            break
        result = SearchResult(move, float(score), depth, search.nodes, False, True)
        if search.stats[LEAVES] == 0:  # every leaf was a finished game: the score is exact
            result.exact = True
            result.score = float(_to_discs(score))
            return result
        if budget_time is not None:
            spent = time.perf_counter() - start
            if spent > (0.15 if endgame else NEXT_ITERATION) * budget_time:
                break
    if endgame:
        try:
            score, move = search.solve(me, opp, hint=result.move)
        except OutOfBudget:
            result.completed = False
            partial = search.partial_move()
            if partial >= 0 and partial != result.move:
                # proven better than the midgame move, which the solve searched first
                result.move = partial
        else:
            result = SearchResult(move, float(score), empties, search.nodes, True, True)
    result.nodes = search.nodes
    return result


def _aspiration(
    search: OthelloSearch, me: int, opp: int, depth: int, guess: int | None
) -> tuple[int, int]:
    """One midgame iteration: a window of +-ASPIRATION around `guess` (the last iteration's
    score), widened on the side that fails until the score falls inside."""
    if guess is None or abs(guess) >= EVAL_BOUND:
        return search.negamax(me, opp, depth)
    alpha, beta = guess - ASPIRATION, guess + ASPIRATION
    for _ in range(2):
        score, move = search.negamax(me, opp, depth, alpha=alpha, beta=beta)
        if alpha < score < beta:
            return score, move
        if score <= alpha:
            alpha = score - 4 * ASPIRATION
        else:
            beta = score + 4 * ASPIRATION
    return search.negamax(me, opp, depth)


def _to_discs(score: int) -> int:
    """Disc difference of a proven midgame-search score (+-(WIN + discs) or 0)."""
    if score > 0:
        return score - WIN
    if score < 0:
        return score + WIN
    return 0


class OthelloMinimax(Agent):
    """Negamax alpha-beta with iterative deepening, TT and an exact endgame.

    Decision.score is in evaluation units (centidiscs; +-(100000 + discs) for a proven result)
    unless info["exact"] is true, when it is the exact final disc difference.
    """

    def __init__(
        self, eval: str = "standard", endgame_empties: int = ENDGAME_EMPTIES, tt_bits: int = 19
    ) -> None:
        self.eval = _check_eval(eval)
        if not 0 <= endgame_empties <= 30:
            raise ValueError(f"endgame_empties must be in 0..30, got {endgame_empties}")
        self.endgame_empties = endgame_empties
        self.search = OthelloSearch(tt_bits, eval=self.eval)

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        t0 = time.perf_counter()
        res = minimax_search(self.search, _othello(state), budget, self.endgame_empties)
        return Decision(
            move=res.move,
            score=res.score,
            depth=res.depth,
            nodes=res.nodes,
            seconds=time.perf_counter() - t0,
            info={"exact": res.exact, "eval": self.eval},
        )


def decisive(state: OthelloState, minimax: SearchResult) -> str | None:
    """Why the expectiminimax agent must play deterministically here, or None.

    Minimax is played when 'the player or his opponent is winning in the next move'. The
    Othello analogues: the game's result is proven within the horizon (or the endgame is solved
    exactly); a corner is available to the side to move (the 'win at hand'); or the opponent
    could take a corner if it were on move now (the 'block at hand': a random move must not
    leave it there).
    """
    if minimax.exact:
        return "solved"
    if abs(minimax.score) >= WIN:
        return "proven"
    if state.legal_mask() & int(_CORNERS):
        return "corner"
    if int(legal_mask(np.uint64(state.opp), np.uint64(state.me))) & int(_CORNERS):
        return "corner threat"
    return None


class OthelloExpectiminimax(Agent):
    """Expectiminimax for Othello, compared with plain minimax on the same board.

    Same shape as the Connect Four agent (`connect4/minimax.py`): the root is a max node
    over our moves, the next `chance_plies` plies below it are chance layers (the mean over every
    legal move, equal weights), deeper plies are negamax; `depth` counts every ply. The chance
    line is taken only when its value is strictly better than plain minimax at the same depth
    and no decisive line is at hand (see `decisive`); then Decision.info["line"] = "chance" and
    info["force_random_reply"] = True (the opponent is to reply at random, the rule for
    bot-vs-bot matches). Otherwise info["line"] = "minimax". With a time budget, half goes to
    minimax (iterative deepening) and the expectation is searched to the depth minimax
    completed, within the rest; if it cannot finish, the minimax move is played.
    """

    def __init__(
        self,
        eval: str = "standard",
        chance_plies: int = 2,
        endgame_empties: int = ENDGAME_EMPTIES,
        tt_bits: int = 19,
    ) -> None:
        self.eval = _check_eval(eval)
        if not 0 <= chance_plies <= 4:
            raise ValueError(f"chance_plies must be in 0..4, got {chance_plies}")
        if not 0 <= endgame_empties <= 30:
            raise ValueError(f"endgame_empties must be in 0..30, got {endgame_empties}")
        self.chance_plies = chance_plies
        self.endgame_empties = endgame_empties
        self.search = OthelloSearch(tt_bits, eval=self.eval)

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        t0 = time.perf_counter()
        board = _othello(state)
        moves = require_moves(board)
        half = (
            budget if budget.time is None else Budget(budget.time / 2, budget.nodes, budget.depth)
        )
        mm = minimax_search(self.search, board, half, self.endgame_empties)
        nodes = mm.nodes
        info: dict[str, Any] = {
            "line": "minimax",
            "eval": self.eval,
            "chance_plies": self.chance_plies,
            "exact": mm.exact,
        }
        reason = decisive(board, mm) if len(moves) > 1 else "only move"
        move, score = mm.move, mm.score
        if reason is None and self.chance_plies > 0:
            depth = max(mm.depth, 1)
            deadline = None if budget.time is None else t0 + budget.time
            self.search.reset(deadline, budget.nodes)
            try:
                value, chance_move = self.search.expectimax(
                    board.me, board.opp, self.chance_plies, depth
                )
            except OutOfBudget:
                reason = "out of time"
            else:
                info["expectation"] = value
                if value > mm.score:
                    move, score = chance_move, value
                    info["line"] = "chance"
                    info["force_random_reply"] = True
            nodes += self.search.nodes
        info["decisive"] = reason
        info["minimax"] = mm.score
        return Decision(
            move=move,
            score=score,
            depth=mm.depth,
            nodes=nodes,
            seconds=time.perf_counter() - t0,
            info=info,
        )
