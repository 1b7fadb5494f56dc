"""The games: a factory from names and notation to states that follow `base.GameState`."""

from __future__ import annotations

from engine.games.base import GameState, IllegalMoveError, NotationError, Outcome, Termination

GAMES = ("connect4", "othello")

__all__ = [
    "GAMES",
    "GameState",
    "IllegalMoveError",
    "NotationError",
    "Outcome",
    "Termination",
    "new_game",
    "parse_position",
]


def _check_game(game: str) -> None:
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}: choose one of {', '.join(GAMES)}")


def new_game(game: str, variant: str | None = None) -> GameState:
    """The start position of `game`; Connect Four variants are written like '7x6k4'."""
    _check_game(game)
    if game == "connect4":
        from engine.games.connect4 import Connect4State

        cols, rows, k = parse_c4_variant(variant or "7x6k4")
        return Connect4State.new(rows=rows, cols=cols, k=k)
    from engine.games.othello import OthelloState

    if variant not in (None, "8x8"):
        raise ValueError(f"unknown othello variant {variant!r}: only 8x8")
    return OthelloState.new()


def parse_position(game: str, text: str, variant: str | None = None) -> GameState:
    """A position in the engine protocol's notation (docs/architecture.md, docs/games.md)."""
    _check_game(game)
    if game == "connect4":
        from engine.games.connect4 import Connect4State

        cols, rows, k = parse_c4_variant(variant or "7x6k4")
        return Connect4State.from_moves(text.strip(), rows=rows, cols=cols, k=k)
    from engine.games.othello import OthelloState

    return OthelloState.from_notation(text)


def parse_c4_variant(text: str) -> tuple[int, int, int]:
    """'7x6k4' -> (cols, rows, k); '7x6' means k=4."""
    body, _, k_text = text.lower().partition("k")
    cols_text, sep, rows_text = body.partition("x")
    try:
        if not sep:
            raise ValueError
        return int(cols_text), int(rows_text), int(k_text) if k_text else 4
    except ValueError:
        raise NotationError(
            f"bad Connect Four variant {text!r}: write COLSxROWS or COLSxROWSkK, e.g. 7x6k4"
        ) from None
