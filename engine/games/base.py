"""The small state protocol that both games follow.

Generic agents and the lobby only talk to a game through it, so they work on Connect Four and
Othello alike. States are immutable values (`play` returns a new state): picklable for the
engine pool and safe to share between coroutines. Players are 0 (moves first) and 1; moves are
plain ints whose meaning is the game's own. More: docs/games.md.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

Move = int
Player = int  # 0 or 1


class IllegalMoveError(ValueError):
    """A move that is not legal in the position (the state is left unchanged)."""


class NotationError(ValueError):
    """A move or position string that cannot be parsed."""


class Termination(enum.Enum):
    """How a game ended on the board (resignations and clocks live in the lobby)."""

    CONNECT = "connect"  # k in a row
    BOARD_FULL = "board_full"  # Connect Four: no column left, a draw
    NO_MOVES = "no_moves"  # Othello: neither side can move


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of a finished game.

    `winner` is None for a draw. `score` is the game's own measure from player 0's point of view
    (Othello: final disc counts with empties credited to the winner, as (discs0, discs1)).
    `cells` lists the cells that won (Connect Four's winning line, for highlighting), if any.
    """

    termination: Termination
    winner: Player | None
    score: tuple[int, int] | None = None
    cells: tuple[int, ...] = ()

    def result_for(self, player: Player) -> float:
        """1 for a win, 0.5 for a draw, 0 for a loss, from `player`'s point of view."""
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == player else 0.0


@runtime_checkable
class GameState(Protocol):
    """What every game state offers. Implementations are frozen, hashable-keyed values."""

    @property
    def game(self) -> str:
        """The game's registry name: 'connect4' or 'othello'."""
        ...

    @property
    def variant(self) -> str:
        """A short variant name, e.g. '7x6k4' for Connect Four, '8x8' for Othello."""
        ...

    @property
    def ply(self) -> int:
        """Moves played so far (a pass counts)."""
        ...

    def to_move(self) -> Player:
        """The player whose turn it is (meaningless once the game is over)."""
        ...

    def legal_moves(self) -> list[Move]:
        """Legal moves in a fixed order; empty exactly when the game is over."""
        ...

    def play(self, move: Move) -> Self:
        """The state after `move`; raises IllegalMoveError and leaves self unchanged."""
        ...

    def is_over(self) -> bool: ...

    def outcome(self) -> Outcome | None:
        """None while the game goes on."""
        ...

    def key(self) -> Hashable:
        """A hashable key identifying the position (not the path to it)."""
        ...

    def move_to_str(self, move: Move) -> str: ...

    def parse_move(self, text: str) -> Move:
        """Parse a move in this game's notation; raises NotationError (not legality)."""
        ...

    def to_notation(self) -> str:
        """The position as the engine protocol writes it (docs/architecture.md)."""
        ...

    def render_text(self) -> str:
        """A plain ASCII board for terminals and logs."""
        ...

    def render_emoji(self, *, last: Move | None = None, show_legal: bool = True) -> str:
        """An emoji board for Discord and the console, within Discord's limits."""
        ...
