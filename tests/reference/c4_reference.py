"""A deliberately naive Connect Four used only as a test oracle for the bitboard engine.

It shares no code or tricks with `engine.games.connect4`: the board is a list of columns of
player numbers, bottom first, and a win is found by scanning every cell in every direction for
k equal discs. Slow, but easy to check by eye.
"""

from __future__ import annotations

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))  # (dcol, drow): vertical, horizontal, diagonals


class RefBoard:
    """A mutable board; `play` / `undo` keep the move stack."""

    def __init__(self, rows: int = 6, cols: int = 7, k: int = 4) -> None:
        self.rows, self.cols, self.k = rows, cols, k
        self.columns: list[list[int]] = [[] for _ in range(cols)]
        self.moves: list[int] = []

    def to_move(self) -> int:
        return len(self.moves) % 2

    def cell(self, col: int, row: int) -> int | None:
        """The player whose disc is at (col, row), None if empty or off the board."""
        if 0 <= col < self.cols and 0 <= row < len(self.columns[col]):
            return self.columns[col][row]
        return None

    def winning_cells(self) -> set[tuple[int, int]]:
        """All (col, row) cells lying in some line of k equal discs."""
        found: set[tuple[int, int]] = set()
        for col in range(self.cols):
            for row in range(len(self.columns[col])):
                player = self.columns[col][row]
                for dc, dr in DIRECTIONS:
                    line = [(col + i * dc, row + i * dr) for i in range(self.k)]
                    if all(self.cell(c, r) == player for c, r in line):
                        found.update(line)
        return found

    def winner(self) -> int | None:
        """The player owning a line of k (the first found; a legal game has only one)."""
        for col in range(self.cols):
            for row, player in enumerate(self.columns[col]):
                for dc, dr in DIRECTIONS:
                    if all(self.cell(col + i * dc, row + i * dr) == player for i in range(self.k)):
                        return player
        return None

    def is_full(self) -> bool:
        return all(len(column) == self.rows for column in self.columns)

    def is_over(self) -> bool:
        return self.winner() is not None or self.is_full()

    def legal_moves(self) -> list[int]:
        if self.winner() is not None:
            return []
        return [c for c in range(self.cols) if len(self.columns[c]) < self.rows]

    def play(self, col: int) -> None:
        assert col in self.legal_moves(), f"illegal move {col}"
        self.columns[col].append(self.to_move())
        self.moves.append(col)

    def undo(self) -> None:
        self.columns[self.moves.pop()].pop()

    def perft(self, depth: int) -> int:
        """Move paths of length `depth`; a finished game is a leaf counting 1."""
        if depth == 0 or self.is_over():
            return 1
        moves = [c for c in range(self.cols) if len(self.columns[c]) < self.rows]
        if depth == 1:  # every child is a leaf, finished or not: no need to look at it
            return len(moves)
        total = 0
        for col in moves:
            self.columns[col].append(self.to_move())
            self.moves.append(col)
            total += self.perft(depth - 1)
            self.undo()
        return total
