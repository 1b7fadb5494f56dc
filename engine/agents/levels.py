"""The difficulty levels: easy, medium, hard and expert of each game, each an agent with a budget,
ordered so each beats the one below (docs/ladder.md proves it; docs/agents.md says what each
level plays). Budgets are depths or node counts where that keeps the ladder reproducible;
the experts of both games think by the clock.
"""

from __future__ import annotations

from engine.agents.base import AgentSpec, Budget, Level

_C4, _OTH = "connect4", "othello"
_CHECKERS = AgentSpec("minimax", {"eval": "checkers"})
_STANDARD = AgentSpec("minimax", {"eval": "standard"})
#: A fixed table of square values on every move, the square played counted with the discs
#: flipped, equal moves drawn at random so games vary (docs/ladder.md).
_GRID = AgentSpec(
    "weightgrid",
    {"capture_share": 1.0, "grid": "default", "score": "move", "tie_break": "random"},
)
#: The whole second a move (no depth cap) and the solve from 20 empties: 94% over hard, a best
#: move in 99.3% of endgame positions, p95 under 1 s (docs/ladder.md).
_PATTERNS = AgentSpec("minimax", {"eval": "patterns", "endgame_empties": 20})

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
          "perfect: solves every position exactly, never lets a win or a draw slip"),
    Level(_OTH, "easy", _GRID, Budget(),
          "plays the move whose square and flipped discs are worth most on a fixed table of "
          "square values (corners high, the squares next to them low), and looks no further "
          "than its own move (a beginner)"),
    Level(_OTH, "medium", _STANDARD, Budget(depth=2),
          "looks 2 moves ahead, valuing mobility, corners and stable discs (a casual player)"),
    Level(_OTH, "hard", _STANDARD, Budget(depth=8, time=1.0),
          "looks up to 8 moves ahead, valuing mobility, corners and stable discs, and plays "
          "the last 14 moves perfectly (a club player)"),
    Level(_OTH, "expert", _PATTERNS, Budget(time=1.0),
          "thinks about a second a move, as deep as it gets, with an evaluation learned from "
          "thousands of games, and plays the last 20 moves perfectly when it can work them "
          "out in time (a strong player)"),
]  # fmt: skip
