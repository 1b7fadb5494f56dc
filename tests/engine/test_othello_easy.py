"""The Othello easy level: its moves are better than a random mover's, it takes corners, and its
games vary. Seeded positions from random games, every legal move valued alike by a search."""

from __future__ import annotations

import random
import statistics

import numpy as np

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.othello.analysis import discs
from engine.agents.othello.evals import final_score
from engine.agents.othello.minimax import minimax_search
from engine.agents.othello.search import OthelloSearch
from engine.agents.othello.weightgrid import DEFAULT_GRID, weight_capture_move
from engine.games.othello import PASS, OthelloState

#: Positions with a choice, taken from seeded random games, and how deep each move is valued
#: (the standard evaluation; exact in the last moves).
POSITIONS, DEPTH = 60, 4


def positions(seed: int, count: int) -> list[OthelloState]:
    """`count` positions with two or more legal moves, between 12 and 50 empties, one from each
    of `count` seeded random games."""
    rng = random.Random(seed)
    found: list[OthelloState] = []
    while len(found) < count:
        state, stop = OthelloState.new(), rng.randrange(12, 51)
        while not state.is_over() and 64 - sum(state.disc_counts()) > stop:
            state = state.play(rng.choice(state.legal_moves()))
        if len(state.legal_moves()) > 1:
            found.append(state)
    return found


def values(search: OthelloSearch, state: OthelloState) -> dict[int, float]:
    """Every legal move's value in discs for the side to move (a search `DEPTH` plies deep from
    the position after it, the end of the game exactly)."""
    out = {}
    for move in state.legal_moves():
        after, side = state.play(move), -1.0
        if not after.is_over() and after.legal_moves() == [PASS]:
            after, side = after.play(PASS), 1.0
        if after.is_over():
            out[move] = side * float(final_score(np.uint64(after.me), np.uint64(after.opp)))
        else:
            out[move] = side * discs(minimax_search(search, after, Budget(depth=DEPTH), 0))
    return out


def test_easy_loses_fewer_discs_a_move_than_a_random_mover() -> None:
    spec, budget = registry.resolve("easy", "othello")
    easy = registry.build(spec, "othello")
    search, rng = OthelloSearch(eval="standard", tt_bits=12), random.Random(1)
    easy_loss, random_loss = [], []
    for state in positions(7, POSITIONS):
        valued = values(search, state)
        best = max(valued.values())
        random_loss.append(best - statistics.fmean(valued.values()))  # a random move on average
        easy_loss.append(best - valued[easy.choose(state, budget, rng).move])
    # The mean disc loss of a random move in these positions is about 10; the level's is well
    # under that (a player flipping the most discs loses more than a random move).
    assert statistics.fmean(easy_loss) < 0.7 * statistics.fmean(random_loss)


def test_easy_takes_a_corner_over_many_discs() -> None:
    # White to move: a1 (a corner) flips b2 only; f5 would flip three discs in the middle.
    sq = OthelloState.new()
    black = sum(1 << sq.parse_move(s) for s in ["b2", "c5", "d5", "e5"])
    white = sum(1 << sq.parse_move(s) for s in ["c3", "b5"])
    state = OthelloState(black, white, 1, 0)
    flips = {state.move_to_str(m): state.flips(m).bit_count() for m in state.legal_moves()}
    assert flips["a1"] == 1 and max(flips.values()) == 3
    spec, budget = registry.resolve("easy", "othello")
    easy = registry.build(spec, "othello")
    assert state.move_to_str(easy.choose(state, budget, random.Random(0)).move) == "a1"


def test_easy_draws_among_equal_moves() -> None:
    start = OthelloState.new()  # the four first moves are worth the same on any symmetric grid
    assert len({weight_capture_move(start, DEFAULT_GRID, "move")[1]}) == 1
    spec, budget = registry.resolve("easy", "othello")
    easy = registry.build(spec, "othello")
    seen = {easy.choose(start, budget, random.Random(seed)).move for seed in range(40)}
    assert seen == set(start.legal_moves())
    assert weight_capture_move(start, DEFAULT_GRID, "move")[0] == min(start.legal_moves())
