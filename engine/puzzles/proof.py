"""What a solver proves about a puzzle's position, the reasons a position is turned down, and
the puzzle made of it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engine.games.base import GameState
from engine.puzzles.pool import KINDS, PREFIXES, Puzzle

# Why a position is not a puzzle (the generator counts them).
OVER = "over"  # the game is over
OUT_OF_RANGE = "out-of-range"  # Connect Four: no win in 3..15 plies; Othello: not 10..16 empties
NO_CHOICE = "no-choice"  # Othello: a pass or a single legal move
NOT_UNIQUE = "not-unique"  # two winning moves, or two moves of the same best value
BUDGET = "budget"  # the solver's node budget ran out first
REASONS = (OVER, OUT_OF_RANGE, NO_CHOICE, NOT_UNIQUE, BUDGET)


@dataclass(frozen=True)
class Proof:
    """The solver's answer for one position (the fields of `Puzzle` that depend on it)."""

    answer: str
    plies: int
    value: int
    line: tuple[str, ...]
    rating: float


def puzzle_id(state: GameState, key: object) -> str:
    """The game's prefix and a hash of the position `key` (the same position found again, by
    any order of moves, keeps its id)."""
    digest = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
    return f"{PREFIXES[state.game]}-{digest}"


def make_puzzle(pid: str, state: GameState, moves: tuple[str, ...], proof: Proof) -> Puzzle:
    """The puzzle of the position after `moves` (which is `state`)."""
    return Puzzle(
        pid, state.game, moves, proof.answer, KINDS[state.game], proof.plies, proof.value,
        proof.line, proof.rating,
    )  # fmt: skip


def clamp_rating(mu: float) -> float:
    """A starting rating kept in 10..40 and rounded to hundredths (as the files store it)."""
    return round(min(40.0, max(10.0, mu)), 2)
