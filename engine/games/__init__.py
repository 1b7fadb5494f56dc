"""The games: a factory from names and notation to states that follow `base.GameState`; the
facts about each game are in `catalog`."""

from __future__ import annotations

from engine.games.base import GameState, IllegalMoveError, NotationError, Outcome, Termination
from engine.games.catalog import GAMES, game_info, parse_c4_variant

__all__ = [
    "GAMES",
    "GameState",
    "IllegalMoveError",
    "NotationError",
    "Outcome",
    "Termination",
    "new_game",
    "parse_c4_variant",
    "parse_position",
]


def new_game(game: str, variant: str | None = None) -> GameState:
    """The start position of `game`; Connect Four variants are written like '7x6k4'."""
    return game_info(game).new(variant)


def parse_position(game: str, text: str, variant: str | None = None) -> GameState:
    """A position in the engine protocol's notation (docs/architecture.md, docs/games.md)."""
    return game_info(game).parse(text, variant)
