"""Difficulty levels: each is an agent with a budget, ordered so each beats the one below.

The ladder is proven by `python -m engine arena` (see docs/ladder.md for the tables):

Connect Four
  easy    seed 003's one-step lookahead: it takes a win and blocks a threat it can see, but looks
          no further, so it walks into double threats and plays under its opponent's winning
          cells: a beginner who has learned to build two threats at once beats it.
  medium  seed 002's minimax at its own default depth 3 with the "remaining checkers"
          evaluation: it never misses a one-move win or block, but falls for deeper traps, so a
          club player beats it.
  hard    the same minimax searching 8 plies (a few milliseconds a move here).
  expert  near-perfect play: an exact opening book for the first 4 discs, then exact solving of
          each move within 0.9 s, a deep heuristic search where a move cannot be solved in time.

Othello
  easy    seed 001's greedy-random policy: maximise discs flipped, a random tie-break each move.
  medium  minimax at depth 2 with the standard evaluation (mobility, corners, stability).
  hard    minimax at depth 4.
  expert  minimax at depth 8 with exact endgame solving from 14 empties.

Budgets are depths or node counts where that keeps the ladder reproducible (and independent of
machine load); Connect Four's expert needs the clock. A `time` cap bounds every deep level's move.
"""

from __future__ import annotations

from engine.agents.base import AgentSpec, Budget, Level

_C4, _OTH = "connect4", "othello"
_CHECKERS = AgentSpec("minimax", {"eval": "checkers"})
_STANDARD = AgentSpec("minimax", {"eval": "standard"})

LEVELS = [
    Level(_C4, "easy", AgentSpec("onestep"), Budget(),
          "looks one move ahead: takes a win and blocks a threat, but falls for any trap "
          "two moves deep (a beginner)"),
    Level(_C4, "medium", _CHECKERS, Budget(depth=3),
          "looks 3 moves ahead: never misses a win or a block in one, falls for deeper traps "
          "(a casual player)"),
    Level(_C4, "hard", _CHECKERS, Budget(depth=8, time=1.0),
          "looks 8 moves ahead: sees most traps and sets its own (a club player)"),
    Level(_C4, "expert", AgentSpec("perfect"), Budget(time=0.9),
          "near-perfect: knows the openings and solves most positions exactly (rarely beaten)"),
    Level(_OTH, "easy", AgentSpec("greedy-random", {"tie_break": "random"}), Budget(),
          "flips as many discs as it can each move, blind to corners and mobility "
          "(a beginner)"),
    Level(_OTH, "medium", _STANDARD, Budget(depth=2),
          "looks 2 moves ahead, valuing mobility, corners and stable discs (a casual player)"),
    Level(_OTH, "hard", _STANDARD, Budget(depth=4, time=1.0),
          "looks 4 moves ahead, valuing mobility, corners and stable discs (a club player)"),
    Level(_OTH, "expert", _STANDARD, Budget(depth=8, time=1.0),
          "looks up to 8 moves ahead and plays the last 14 moves perfectly (a strong player)"),
]  # fmt: skip
