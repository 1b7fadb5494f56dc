"""Connect Four (any size up to 64 bitboard bits, k in a row) as an immutable GameState.

Two bitboards in Pascal Pons' layout (see `c4kernels`); the state also keeps its move history,
which is its notation ("4453": 1-based columns, letters past 9). The layout, the notation and
the emoji board: docs/games.md.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self, SupportsIndex

import numpy as np
import numpy.typing as npt

from engine.games import c4kernels as kern
from engine.games.base import IllegalMoveError, Move, NotationError, Outcome, Player, Termination

_EMPTY, _RED, _YELLOW = "⚫", "🔴", "🟡"
_RED_MARK, _YELLOW_MARK = "🟥", "🟨"
_FULL_COLUMN = "⬛"
_KEYCAPS = [f"{d}\ufe0f\u20e3" for d in "123456789"] + ["🔟"]
_ZWSP = "\u200b"


def check_size(rows: int, cols: int, k: int) -> None:
    """Raise ValueError unless the variant fits a 64-bit board with a winnable k >= 2."""
    if rows < 1 or cols < 1 or (rows + 1) * cols > 64:
        raise ValueError(f"a {cols}x{rows} board needs (rows + 1) * cols <= 64 bitboard bits")
    if not 2 <= k <= max(rows, cols):
        raise ValueError(f"k={k} must be between 2 and {max(rows, cols)} on a {cols}x{rows} board")


def _column_char(col: int) -> str:
    """The notation character of a 0-based column."""
    return str(col + 1) if col < 9 else chr(ord("a") + col - 9)


def _char_column(ch: str) -> int | None:
    """The 0-based column of a notation character, or None if it names no column at all."""
    if "1" <= ch <= "9":
        return ord(ch) - ord("1")
    if ch.isascii() and "a" <= ch.lower() <= "z":
        return ord(ch.lower()) - ord("a") + 9
    return None


@dataclass(frozen=True, slots=True)
class Connect4State:
    """An immutable Connect Four position; `play` returns a new one.

    `current` holds the discs of the side to move and `mask` all discs (bitboards as above);
    `moves` is the history of 0-based columns. Build states with `new` or `from_moves`.
    """

    rows: int
    cols: int
    k: int
    current: int
    mask: int
    moves: tuple[int, ...]

    def __post_init__(self) -> None:
        check_size(self.rows, self.cols, self.k)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def new(cls, rows: int = 6, cols: int = 7, k: int = 4) -> Self:
        """The empty board."""
        return cls(rows, cols, k, 0, 0, ())

    @classmethod
    def from_moves(
        cls, moves: str | Iterable[int], rows: int = 6, cols: int = 7, k: int = 4
    ) -> Self:
        """The position after a notation string ("4453") or a sequence of 0-based columns.

        Raises NotationError for a character that names no column of this board and
        IllegalMoveError for a move into a full column or after the game ended; both messages
        name the offending move by its 1-based number.
        """
        state = cls.new(rows, cols, k)
        items: Iterable[object] = moves.strip() if isinstance(moves, str) else moves
        for i, item in enumerate(items):
            if isinstance(item, str):
                col = state._column_of_char(item, f"move {i + 1}: ")
            elif isinstance(item, SupportsIndex):
                col = operator.index(item)
            else:
                raise NotationError(f"move {i + 1}: {item!r} is not a column")
            try:
                state = state.play(col)
            except IllegalMoveError as exc:
                raise IllegalMoveError(f"move {i + 1}: {exc}") from None
        return state

    # -- protocol -----------------------------------------------------------------------------

    @property
    def game(self) -> str:
        return "connect4"

    @property
    def variant(self) -> str:
        """Columns x rows and k, e.g. '7x6k4'."""
        return f"{self.cols}x{self.rows}k{self.k}"

    @property
    def ply(self) -> int:
        return len(self.moves)

    def to_move(self) -> Player:
        return self.ply % 2

    def legal_moves(self) -> list[Move]:
        """Playable columns in ascending order; empty once the game is over."""
        if self._won():
            return []
        h = self.rows + 1
        top = 1 << (self.rows - 1)
        return [c for c in range(self.cols) if not (self.mask >> (c * h)) & top]

    def play(self, move: Move) -> Self:
        if not 0 <= move < self.cols:
            raise IllegalMoveError(f"column {move + 1} is not on a {self.cols}-column board")
        if self.is_over():
            raise IllegalMoveError(f"column {move + 1}: the game is already over")
        shift = move * (self.rows + 1)
        col_bits = ((1 << self.rows) - 1) << shift
        bit = (self.mask + (1 << shift)) & col_bits
        if not bit:
            raise IllegalMoveError(f"column {move + 1} is full")
        return type(self)(
            self.rows,
            self.cols,
            self.k,
            self.current ^ self.mask,
            self.mask | bit,
            (*self.moves, move),
        )

    def is_over(self) -> bool:
        return self._won() or self.mask == self._board_mask()

    def outcome(self) -> Outcome | None:
        """CONNECT with the winner and every disc of the winning line(s), or a BOARD_FULL draw."""
        if self._won():
            cells_bb = int(kern.winning_cells(np.uint64(self.opponent), self.rows, self.k))
            cells = tuple(i for i in range(cells_bb.bit_length()) if cells_bb >> i & 1)
            return Outcome(Termination.CONNECT, 1 - self.to_move(), cells=cells)
        if self.mask == self._board_mask():
            return Outcome(Termination.BOARD_FULL, None)
        return None

    def key(self) -> tuple[int, int, int, int, int]:
        """(rows, cols, k, current, mask): the position whatever move order reached it."""
        return (self.rows, self.cols, self.k, self.current, self.mask)

    def move_to_str(self, move: Move) -> str:
        return _column_char(move)

    def parse_move(self, text: str) -> Move:
        """A column from its notation character or decimal number ('a' or '10' for column 10)."""
        text = text.strip()
        if text.isdecimal() and text.isascii() and len(text) > 1:
            if len(text) > 3:  # no board has a thousand columns (and int() has a size limit)
                raise NotationError(f"there is no column {text[:8]}... on this board")
            col = int(text) - 1
            if not 0 <= col < self.cols:
                raise NotationError(f"there is no column {text} on a {self.cols}-column board")
            return col
        if len(text) != 1:
            raise NotationError(f"{text!r} is not a column")
        return self._column_of_char(text, "")

    def to_notation(self) -> str:
        return "".join(_column_char(c) for c in self.moves)

    def render_text(self) -> str:
        """Column characters over the board, X for player 0, O for player 1, '.' empty."""
        symbols = ".XO"
        lines = [" ".join(_column_char(c) for c in range(self.cols))]
        lines += [" ".join(symbols[v] for v in row) for row in self.board()]
        return "\n".join(lines)

    def render_emoji(self, *, last: Move | None = None, show_legal: bool = True) -> str:
        """The emoji board described in the module docstring.

        `last` is the column whose top disc is marked (default: the last move played).
        """
        if last is None and self.moves:
            last = self.moves[-1]
        marked = set(self.outcome_cells())
        heights = self.heights
        if last is not None and 0 <= last < self.cols and heights[last]:
            marked.add(last * (self.rows + 1) + heights[last] - 1)
        full: set[int] = set()
        if show_legal and not self.is_over():
            full = set(range(self.cols)) - set(self.legal_moves())
        header = []
        for c in range(self.cols):
            if c in full:
                header.append(_FULL_COLUMN)
            elif c < len(_KEYCAPS):
                header.append(_KEYCAPS[c])
            else:  # regional indicator letters; a zero-width space keeps them from pairing
                header.append(_ZWSP + chr(0x1F1E6 + c - 9))
        lines = ["".join(header)]
        grid = self.board()
        for r in range(self.rows):
            row = self.rows - 1 - r
            cells = []
            for c in range(self.cols):
                v = int(grid[r, c])
                bit = c * (self.rows + 1) + row
                if v == 0:
                    cells.append(_EMPTY)
                elif bit in marked:
                    cells.append(_RED_MARK if v == 1 else _YELLOW_MARK)
                else:
                    cells.append(_RED if v == 1 else _YELLOW)
            lines.append("".join(cells))
        return "\n".join(lines)

    # -- helpers for agents and renderers -----------------------------------------------------

    @property
    def opponent(self) -> int:
        """The discs of the side that just moved."""
        return self.current ^ self.mask

    @property
    def heights(self) -> tuple[int, ...]:
        """Number of discs in each column."""
        h = self.rows + 1
        col = (1 << h) - 1
        return tuple(((self.mask >> (c * h)) & col).bit_count() for c in range(self.cols))

    def can_win_now(self, col: Move) -> bool:
        """Whether dropping a disc in `col` wins on the spot (False if it is not legal)."""
        return col in self.winning_moves()

    def winning_moves(self) -> list[Move]:
        """Columns that win immediately for the side to move, ascending."""
        if self.is_over():
            return []
        wins = int(
            kern.winning_moves_mask(
                np.uint64(self.current), np.uint64(self.mask), self.rows, self.cols, self.k
            )
        )
        h = self.rows + 1
        col = (1 << h) - 1
        return [c for c in range(self.cols) if (wins >> (c * h)) & col]

    def mirror_key(self) -> tuple[int, int, int, int, int]:
        """`key()` of the left-right mirror image (column c becomes cols-1-c)."""
        cur = int(kern.mirror(np.uint64(self.current), self.rows, self.cols))
        mask = int(kern.mirror(np.uint64(self.mask), self.rows, self.cols))
        return (self.rows, self.cols, self.k, cur, mask)

    def cell_of(self, bit: int) -> tuple[int, int]:
        """(col, row) of a bitboard index, row 0 at the bottom (as in `Outcome.cells`)."""
        return divmod(bit, self.rows + 1)

    def outcome_cells(self) -> tuple[int, ...]:
        """Bit indices of the winning line(s), empty unless the game was won."""
        outcome = self.outcome()
        return outcome.cells if outcome is not None else ()

    def board(self) -> npt.NDArray[np.int8]:
        """rows x cols int8 grid, row 0 at the TOP: 1 player 0's disc, 2 player 1's, 0 empty."""
        first = self.current if self.to_move() == 0 else self.opponent
        grid = np.zeros((self.rows, self.cols), dtype=np.int8)
        h = self.rows + 1
        for c in range(self.cols):
            for row in range(self.rows):
                bit = 1 << (c * h + row)
                if self.mask & bit:
                    grid[self.rows - 1 - row, c] = 1 if first & bit else 2
        return grid

    def perft(self, depth: int) -> int:
        """Move paths of length `depth` from here (`c4kernels.perft`: finished games are leaves)."""
        return int(
            kern.perft(
                np.uint64(self.current), np.uint64(self.mask), self.rows, self.cols, self.k, depth
            )
        )

    # -- internals ----------------------------------------------------------------------------

    def _won(self) -> bool:
        """Whether the side that just moved has a line (only it can: the game stops there)."""
        return bool(kern.is_win(np.uint64(self.opponent), self.rows, self.k))

    def _board_mask(self) -> int:
        return int(kern.board_mask(self.rows, self.cols))

    def _column_of_char(self, ch: str, where: str) -> int:
        col = _char_column(ch)
        if col is None or not 0 <= col < self.cols:
            raise NotationError(f"{where}{ch!r} is not a column of a {self.cols}-column board")
        return col
