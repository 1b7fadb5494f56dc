"""Difficulty levels: each is an agent with a budget, ordered so each beats the one below.

The ladder is proven by `python -m engine arena` (see docs/ladder.md for the tables):

Connect Four
  easy    seed 002's MCTS with only 400 simulations: it sees immediate wins and threats most of
          the time but blunders now and then, so a beginner can beat it.
  medium  seed 002's minimax at its own default depth 3 with the "remaining checkers"
          evaluation: it never misses a one-move win or block, but falls for deeper traps, so a
          club player beats it.
  hard    the same minimax searching 0.25 s a move (about 10-12 plies here).
  expert  near-perfect play: exact solving of each move within 0.9 s, a deep heuristic search
          where a move cannot be solved in time.

Othello
  easy    seed 001's greedy-random policy: maximise discs flipped, a random tie-break each move.
  medium  minimax at depth 2 with the standard evaluation (mobility, corners, stability).
  hard    minimax at depth 4.
  expert  minimax for 0.8 s a move with exact endgame solving from 14 empties.

Budgets are depths or node counts where that keeps the ladder reproducible, and times only where
strength needs the clock (the expert levels); `time` always bounds a move.
"""

from __future__ import annotations

from engine.agents.base import AgentSpec, Budget, Level

LEVELS = [
    Level(
        "connect4",
        "easy",
        AgentSpec("mcts"),
        Budget(nodes=400),
        "MCTS with 400 simulations: sees most threats, blunders sometimes",
    ),
    Level(
        "connect4",
        "medium",
        AgentSpec("minimax", {"eval": "checkers"}),
        Budget(depth=3),
        "seed 002 minimax, depth 3, remaining-checkers evaluation",
    ),
    Level(
        "connect4",
        "hard",
        AgentSpec("minimax", {"eval": "checkers"}),
        Budget(time=0.25),
        "minimax searching 0.25 s a move (about 10-12 plies)",
    ),
    Level(
        "connect4",
        "expert",
        AgentSpec("perfect"),
        Budget(time=0.9),
        "near-perfect: exact solving within 0.9 s a move",
    ),
    Level(
        "othello",
        "easy",
        AgentSpec("greedy-random", {"tie_break": "random"}),
        Budget(),
        "seed 001 greedy: most discs flipped, random tie-breaks",
    ),
    Level(
        "othello",
        "medium",
        AgentSpec("minimax", {"eval": "standard"}),
        Budget(depth=2),
        "minimax depth 2: mobility, corners, stability",
    ),
    Level(
        "othello",
        "hard",
        AgentSpec("minimax", {"eval": "standard"}),
        Budget(depth=4),
        "minimax depth 4",
    ),
    Level(
        "othello",
        "expert",
        AgentSpec("minimax", {"eval": "standard"}),
        Budget(time=0.8),
        "minimax 0.8 s a move, exact endgame from 14 empties",
    ),
]
