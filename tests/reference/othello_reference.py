"""A deliberately naive Othello used only to cross-check the bitboard engine in tests.

An 8x8 list of lists, walking the 8 directions square by square: no shifts, no masks, nothing
shared with `engine.games.othkernels`, so a wrap-around or off-by-one bug in the bitboards cannot
hide in both. Cells are "X", "O" or "."; grid[rank][file], rank 0 = rank 1; players 0 = X, 1 = O.
"""

from __future__ import annotations

from dataclasses import dataclass

PASS = 64
DIRECTIONS = [(df, dr) for df in (-1, 0, 1) for dr in (-1, 0, 1) if (df, dr) != (0, 0)]
PIECES = ("X", "O")


@dataclass(frozen=True)
class RefBoard:
    grid: tuple[tuple[str, ...], ...]
    side: int

    @classmethod
    def from_bitboards(cls, black: int, white: int, side: int) -> RefBoard:
        rows = []
        for rank in range(8):
            row = []
            for file in range(8):
                sq = file + 8 * rank
                row.append("X" if black >> sq & 1 else "O" if white >> sq & 1 else ".")
            rows.append(tuple(row))
        return cls(tuple(rows), side)

    @classmethod
    def start(cls) -> RefBoard:
        return cls.from_bitboards((1 << 28) | (1 << 35), (1 << 27) | (1 << 36), 0)

    def flipped(self, file: int, rank: int, side: int) -> list[tuple[int, int]]:
        """Cells a disc of `side` on (file, rank) would flip."""
        if self.grid[rank][file] != ".":
            return []
        me, them = PIECES[side], PIECES[1 - side]
        out = []
        for df, dr in DIRECTIONS:
            run = []
            f, r = file + df, rank + dr
            while 0 <= f < 8 and 0 <= r < 8 and self.grid[r][f] == them:
                run.append((f, r))
                f, r = f + df, r + dr
            if run and 0 <= f < 8 and 0 <= r < 8 and self.grid[r][f] == me:
                out.extend(run)
        return out

    def squares_for(self, side: int) -> list[int]:
        return [
            file + 8 * rank
            for rank in range(8)
            for file in range(8)
            if self.flipped(file, rank, side)
        ]

    def legal_moves(self) -> list[int]:
        mine = self.squares_for(self.side)
        if mine:
            return mine
        return [PASS] if self.squares_for(1 - self.side) else []

    def play(self, move: int) -> RefBoard:
        if move == PASS:
            assert self.legal_moves() == [PASS]
            return RefBoard(self.grid, 1 - self.side)
        file, rank = move % 8, move // 8
        flips = self.flipped(file, rank, self.side)
        assert flips, "illegal move given to the reference"
        grid = [list(row) for row in self.grid]
        for f, r in [*flips, (file, rank)]:
            grid[r][f] = PIECES[self.side]
        return RefBoard(tuple(tuple(row) for row in grid), 1 - self.side)

    def count(self, piece: str) -> int:
        return sum(row.count(piece) for row in self.grid)

    def result(self) -> tuple[int | None, tuple[int, int]] | None:
        """(winner, (black score, white score)) with empties to the winner, or None if going on."""
        if self.legal_moves():
            return None
        x, o = self.count("X"), self.count("O")
        empty = 64 - x - o
        if x > o:
            return 0, (x + empty, o)
        if o > x:
            return 1, (x, o + empty)
        return None, (x + empty // 2, o + empty // 2)

    def perft(self, depth: int) -> int:
        if depth == 0:
            return 1
        moves = self.legal_moves()
        if not moves:
            return 1
        return sum(self.play(m).perft(depth - 1) for m in moves)
