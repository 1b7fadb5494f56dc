"""What each game provides beyond its rules, in one module of the game's own folder: its kit,
`engine/agents/<game>/kit.py`, found by the game's name.

A kit holds what the shared code asks a game for: the searches behind `minimax` and
`expectiminimax`, the iterations of `mcts`, the analysis of a finished game, what a solver
proves for a hint, the picture of a position and what a learner is measured against while it
trains. Each shared module says what it needs as a protocol of its own
(`engine.analysis.AnalysisKit`, `engine.agents.minimax.SearchKit`,
`engine.agents.mcts.MctsKit`, `engine.hints.HintKit`, `engine.picture.PictureKit`,
`tools.training.evals.EvalKit`) and never names a game. So a third game is its rules (in
`engine/games/`), its folder (agents and kit) and its entry in the catalog
(`engine.games.catalog`); nothing shared changes.

Kits are imported when first asked for, so naming a game compiles nothing.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from engine.games.catalog import game_info


def kit_name(game: str) -> str:
    """The module of `game`'s kit (ValueError for a game the catalog does not hold)."""
    return f"engine.agents.{game_info(game).name}.kit"


def kit(game: str) -> ModuleType:
    """The kit of `game`; each caller reads it through its own protocol."""
    return importlib.import_module(kit_name(game))


def kit_file(game: str) -> Path:
    """The kit's source file: the warm-up's notes cover what it imports (every kernel the
    game's shared agents reach through it)."""
    return Path(str(kit(game).__file__))
