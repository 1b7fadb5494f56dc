"""Othello (8x8) as an immutable `GameState` over two 64-bit bitboards.

Squares are file + 8 * rank (a1 = 0, h8 = 63). The move generation lives in the numba kernels
of `othkernels`, shared with the agents' compiled search; this class adds validation, notation
and rendering. The rules as implemented (passes, the final score), the notation and the emoji
board: docs/games.md.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import ClassVar, Self

import numpy as np

from engine.games import othkernels as k
from engine.games.base import IllegalMoveError, Move, NotationError, Outcome, Player, Termination

PASS = 64
"""The pass move: legal exactly when the side to move has no other move but the game goes on."""

FILES = "abcdefgh"
_START_BLACK = (1 << 28) | (1 << 35)  # e4, d5
_START_WHITE = (1 << 27) | (1 << 36)  # d4, e5

_EMPTY_CHARS = frozenset("-.")
_SIDE_NAMES = ("X", "O")

_E_BLACK = "⚫"
_E_WHITE = "⚪"
_E_EMPTY = "🟩"
_E_LEGAL = "🟢"
_E_LAST = ("🖤", "🤍")
_E_CORNER = "⬛"
_ZWSP = "\u200b"
_E_FILES = [chr(0x1F1E6 + i) for i in range(8)]  # regional indicators A..H
_E_RANKS = [f"{r}\ufe0f\u20e3" for r in range(1, 9)]  # keycaps 1..8


def square_name(sq: int) -> str:
    """'a1'..'h8' for 0..63."""
    return f"{FILES[sq % 8]}{sq // 8 + 1}"


def _bits(board: int) -> list[int]:
    """The set squares of a bitboard in ascending order."""
    out = []
    while board:
        low = board & -board
        out.append(low.bit_length() - 1)
        board ^= low
    return out


@dataclass(frozen=True, slots=True)
class OthelloState:
    """An Othello position: disc bitboards, side to move (0 = black X) and plies played."""

    black: int
    white: int
    side: Player = 0
    ply: int = 0

    game: ClassVar[str] = "othello"
    variant: ClassVar[str] = "8x8"

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def new(cls) -> Self:
        """The standard start, black to move."""
        return cls(_START_BLACK, _START_WHITE, 0, 0)

    @classmethod
    def from_notation(cls, text: str) -> Self:
        """Parse `<64 cells a1..h8> <X|O>`; see the module docstring. Raises NotationError."""
        compact = "".join(text.split())
        if len(compact) != 65:
            raise NotationError(
                "an Othello position is 64 cells (X, O or -) followed by the side to move "
                f"(X or O), 65 characters without spaces; got {len(compact)}"
            )
        black = white = 0
        for sq, ch in enumerate(compact[:64]):
            c = ch.upper()
            if c == "X":
                black |= 1 << sq
            elif c == "O":
                white |= 1 << sq
            elif c not in _EMPTY_CHARS:
                raise NotationError(
                    f"bad cell {ch!r} at {square_name(sq)} (character {sq + 1}): use X, O, - or ."
                )
        side_char = compact[64].upper()
        if side_char not in _SIDE_NAMES:
            raise NotationError(f"bad side to move {compact[64]!r}: use X or O")
        discs = (black | white).bit_count()
        return cls(black, white, _SIDE_NAMES.index(side_char), max(discs - 4, 0))

    def to_notation(self) -> str:
        """The canonical position string: X/O/- cells a1..h8, a space, the side to move."""
        cells = "".join(self._cell_char(sq, "-") for sq in range(64))
        return f"{cells} {_SIDE_NAMES[self.side]}"

    # -- bitboard helpers for agents ----------------------------------------------------------

    @property
    def me(self) -> int:
        """Discs of the side to move."""
        return self.white if self.side else self.black

    @property
    def opp(self) -> int:
        """Discs of the opponent of the side to move."""
        return self.black if self.side else self.white

    def legal_mask(self) -> int:
        """Bitboard of the squares the side to move can play (0 when it must pass or it's over)."""
        return int(k.legal_mask(np.uint64(self.me), np.uint64(self.opp)))

    def flips(self, move: Move) -> int:
        """Bitboard of the discs `move` would flip; 0 for an illegal move (including PASS)."""
        if not 0 <= move < 64 or not (self.legal_mask() >> move) & 1:
            return 0
        return int(k.flips(np.uint64(self.me), np.uint64(self.opp), move))

    def disc_counts(self) -> tuple[int, int]:
        """(black discs, white discs)."""
        return self.black.bit_count(), self.white.bit_count()

    def perft(self, depth: int) -> int:
        """Leaf count `depth` plies deep: a pass is a ply, a finished game one leaf."""
        return int(k.perft(np.uint64(self.me), np.uint64(self.opp), depth))

    # -- the GameState protocol ---------------------------------------------------------------

    def to_move(self) -> Player:
        return self.side

    def legal_moves(self) -> list[Move]:
        """Squares in ascending order; [PASS] if only the opponent can move; [] when over."""
        mask = self.legal_mask()
        if mask:
            return _bits(mask)
        if k.legal_mask(np.uint64(self.opp), np.uint64(self.me)):
            return [PASS]
        return []

    def play(self, move: Move) -> Self:
        """The state after `move`; IllegalMoveError (self unchanged) if it is not legal."""
        mask = self.legal_mask()
        if move == PASS:
            if mask:
                raise IllegalMoveError(
                    "cannot pass: you have legal moves "
                    f"({', '.join(square_name(s) for s in _bits(mask))})"
                )
            if self.is_over():
                raise IllegalMoveError("cannot pass: the game is over")
            return type(self)(self.black, self.white, 1 - self.side, self.ply + 1)
        try:
            move = operator.index(move)  # agents may hand over numpy integers
        except TypeError:
            raise IllegalMoveError(f"not a move: {move!r} (moves are 0..63 or PASS)") from None
        if not 0 <= move < 64:
            raise IllegalMoveError(f"no such square: {move} (moves are 0..63 or PASS)")
        name = square_name(move)
        if ((self.black | self.white) >> move) & 1:
            raise IllegalMoveError(f"{name} is already occupied")
        if not (mask >> move) & 1:
            if not mask:
                why = "the game is over" if self.is_over() else "you must pass"
                raise IllegalMoveError(f"{name} is not legal: {why}")
            raise IllegalMoveError(f"{name} is not legal: it flips no discs")
        f = int(k.flips(np.uint64(self.me), np.uint64(self.opp), move))
        me = self.me | f | (1 << move)
        opp = self.opp & ~f
        black, white = (opp, me) if self.side else (me, opp)
        return type(self)(black, white, 1 - self.side, self.ply + 1)

    def is_over(self) -> bool:
        me, opp = np.uint64(self.me), np.uint64(self.opp)
        return not k.legal_mask(me, opp) and not k.legal_mask(opp, me)

    def outcome(self) -> Outcome | None:
        """None while either side can move; else the disc-count result (see module docstring)."""
        if not self.is_over():
            return None
        b, w = self.disc_counts()
        empties = 64 - b - w
        if b > w:
            return Outcome(Termination.NO_MOVES, 0, (b + empties, w))
        if w > b:
            return Outcome(Termination.NO_MOVES, 1, (b, w + empties))
        return Outcome(Termination.NO_MOVES, None, (b + empties // 2, w + empties // 2))

    def key(self) -> tuple[int, int, int]:
        return (self.black, self.white, self.side)

    def move_to_str(self, move: Move) -> str:
        """'d3' style, or 'pass'."""
        if move == PASS:
            return "pass"
        if not 0 <= move < 64:
            raise NotationError(f"no such Othello move: {move!r}")
        return square_name(move)

    def parse_move(self, text: str) -> Move:
        """'d3' / 'D3' -> square, 'pass' -> PASS (case-insensitive); legality is not checked."""
        t = text.strip().lower()
        if t == "pass":
            return PASS
        if len(t) == 2 and t[0] in FILES and t[1] in "12345678":
            return FILES.index(t[0]) + 8 * (int(t[1]) - 1)
        raise NotationError(f"bad Othello move {text!r}: write a square like d3, or pass")

    # -- rendering ----------------------------------------------------------------------------

    def _cell_char(self, sq: int, empty: str) -> str:
        if (self.black >> sq) & 1:
            return "X"
        if (self.white >> sq) & 1:
            return "O"
        return empty

    def render_text(self) -> str:
        """ASCII board, rank 8 on top, with a status line (who moves, disc counts, result)."""
        header = "  " + " ".join(FILES)
        lines = [header]
        for rank in range(7, -1, -1):
            cells = " ".join(self._cell_char(8 * rank + f, ".") for f in range(8))
            lines.append(f"{rank + 1} {cells} {rank + 1}")
        lines.append(header)
        b, w = self.disc_counts()
        result = self.outcome()
        if result is None:
            status = f"{_SIDE_NAMES[self.side]} to move"
        elif result.winner is None:
            status = "game over: draw"
        else:
            status = f"game over: {_SIDE_NAMES[result.winner]} wins"
        if result is not None and result.score is not None:
            b, w = result.score  # the final score: empty squares go to the winner
        lines.append(f"{status} (X {b}, O {w})")
        return "\n".join(lines)

    def render_emoji(self, *, last: Move | None = None, show_legal: bool = True) -> str:
        """Emoji board for Discord (legend in the module docstring); about 400 characters."""
        legal = self.legal_mask() if show_legal else 0
        rows = [_E_CORNER + _ZWSP + _ZWSP.join(_E_FILES)]
        for rank in range(7, -1, -1):
            cells = [_E_RANKS[rank]]
            for f in range(8):
                sq = 8 * rank + f
                if (self.black >> sq) & 1:
                    cells.append(_E_LAST[0] if sq == last else _E_BLACK)
                elif (self.white >> sq) & 1:
                    cells.append(_E_LAST[1] if sq == last else _E_WHITE)
                else:
                    cells.append(_E_LEGAL if (legal >> sq) & 1 else _E_EMPTY)
            rows.append("".join(cells))
        return "\n".join(rows)
