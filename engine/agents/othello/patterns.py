"""A pattern evaluation for Othello in the style of Logistello and Edax (Buro's linear pattern
evaluation): the position's value is a sum of weights, one per pattern instance, looked up by
the configuration (empty, mine, theirs) of that instance's squares, plus a mobility and a
constant term, with one set of weights per game phase. The weights are fitted from games
(`engine/agents/othello/pattern_fit.py`, ``python -m engine othello-eval``) and shipped as
compressed numpy (`data/othello_patterns.npz`). Values are disc differences for the side to
move, returned in hundredths (the search's units).

The patterns: the corner 3x3, the corner 2x5 (both ways), the edge with its two X-squares,
rows 2-4, and the diagonals of 4-8 squares; each in all its positions on the board, the
positions of one pattern sharing one table (so a position and its mirror images evaluate
alike).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.agents.othello.evals import EVAL_BOUND
from engine.games.bits import kernel, popcount
from engine.games.othkernels import legal_mask

DATA = Path(__file__).parent.parent / "data" / "othello_patterns.npz"
PHASES = 10  # by plies played: 6 plies a phase, the last phase from 54 on
MAX_LEN = 10


def _sq(name: str) -> int:
    return (ord(name[0]) - 97) + 8 * (int(name[1]) - 1)


#: Each pattern in one position, its squares in order (base-3 digits, first the most
#: significant).
BASE: dict[str, list[str]] = {
    "corner3x3": ["a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"],
    "corner2x5": ["a1", "b1", "c1", "d1", "e1", "a2", "b2", "c2", "d2", "e2"],
    "edge2x": ["a1", "b1", "c1", "d1", "e1", "f1", "g1", "h1", "b2", "g2"],
    "row2": ["a2", "b2", "c2", "d2", "e2", "f2", "g2", "h2"],
    "row3": ["a3", "b3", "c3", "d3", "e3", "f3", "g3", "h3"],
    "row4": ["a4", "b4", "c4", "d4", "e4", "f4", "g4", "h4"],
    "diag8": ["a1", "b2", "c3", "d4", "e5", "f6", "g7", "h8"],
    "diag7": ["b1", "c2", "d3", "e4", "f5", "g6", "h7"],
    "diag6": ["c1", "d2", "e3", "f4", "g5", "h6"],
    "diag5": ["d1", "e2", "f3", "g4", "h5"],
    "diag4": ["e1", "f2", "g3", "h4"],
}


def _symmetries(sq: int) -> list[int]:
    """The square's images under the 8 symmetries of the board."""
    f, r = sq % 8, sq // 8
    out = []
    for ff, rr in ((f, r), (r, f)):  # the identity and the a1-h8 diagonal
        for a, b in ((ff, rr), (7 - ff, rr), (ff, 7 - rr), (7 - ff, 7 - rr)):
            out.append(a + 8 * b)
    return out


def instances() -> list[tuple[str, tuple[int, ...]]]:
    """Every position of every pattern: (pattern name, its squares in order), each square set
    once (a pattern that maps onto itself under a symmetry keeps one ordering)."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for name, squares in BASE.items():
        images = [_symmetries(_sq(s)) for s in squares]
        seen: set[frozenset[int]] = set()
        for k in range(8):
            inst = tuple(img[k] for img in images)
            if frozenset(inst) not in seen:
                seen.add(frozenset(inst))
                out.append((name, inst))
    return out


INSTANCES = instances()
NAMES = list(BASE)
SIZES = np.array([3 ** len(BASE[n]) for n in NAMES], dtype=np.int64)
OFFSETS = np.concatenate([[0], np.cumsum(SIZES)[:-1]]).astype(np.int64)
TABLE = int(SIZES.sum())  # weights of one phase's tables
#: Per instance: its squares (padded with -1), how many, and where its table starts.
INST_SQ = np.full((len(INSTANCES), MAX_LEN), -1, dtype=np.int64)
INST_LEN = np.zeros(len(INSTANCES), dtype=np.int64)
INST_OFF = np.zeros(len(INSTANCES), dtype=np.int64)
for _i, (_name, _squares) in enumerate(INSTANCES):
    INST_SQ[_i, : len(_squares)] = _squares
    INST_LEN[_i] = len(_squares)
    INST_OFF[_i] = OFFSETS[NAMES.index(_name)]


def _self_symmetries(squares: tuple[int, ...]) -> list[list[int]]:
    """The orderings of a pattern's squares that a symmetry mapping the set onto itself gives
    (the identity first), as permutations of positions."""
    where = {sq: k for k, sq in enumerate(squares)}
    perms = []
    for g in range(8):
        image = [_symmetries(sq)[g] for sq in squares]
        if set(image) == set(squares):
            perm = [where[sq] for sq in image]
            if perm not in perms:
                perms.append(perm)
    return perms


def canonical_table() -> npt.NDArray[np.int64]:
    """For every table index, the index all its mirror images share (the smallest): a pattern
    that maps onto itself reads the same configuration in more than one order."""
    out = np.arange(TABLE, dtype=np.int64)
    for c, name in enumerate(NAMES):
        squares = next(inst for n, inst in INSTANCES if n == name)
        size = len(squares)
        raw = np.arange(3**size, dtype=np.int64)
        digits = (raw[:, None] // 3 ** np.arange(size - 1, -1, -1)) % 3  # most significant first
        best = raw.copy()
        for perm in _self_symmetries(squares)[1:]:
            moved = np.zeros_like(digits)
            moved[:, perm] = digits  # the digit at position k goes to position perm[k]
            best = np.minimum(best, moved @ (3 ** np.arange(size - 1, -1, -1)))
        out[OFFSETS[c] : OFFSETS[c] + 3**size] = OFFSETS[c] + best
    return out


#: Weights of one phase: the tables, then mobility, then the constant.
MOBILITY, BIAS = TABLE, TABLE + 1
WEIGHTS = TABLE + 2
CANONICAL = canonical_table()


@kernel
def phase_of(me: np.uint64, opp: np.uint64) -> int:
    played = popcount(me | opp) - 4
    p = played // 6
    return p if p < PHASES else PHASES - 1


@kernel
def features(
    me: np.uint64, opp: np.uint64, sq: npt.NDArray[np.int64], ln: npt.NDArray[np.int64],
    off: npt.NDArray[np.int64], out: npt.NDArray[np.int64],
) -> int:  # fmt: skip
    """The table index of each instance into `out`; returns the mobility difference."""
    for i in range(sq.shape[0]):
        idx = 0
        for k in range(ln[i]):
            bit = np.uint64(1) << np.uint64(sq[i, k])
            idx = idx * 3 + (1 if me & bit else 2 if opp & bit else 0)
        out[i] = off[i] + idx
    return popcount(legal_mask(me, opp)) - popcount(legal_mask(opp, me))


@kernel
def evaluate_patterns(
    me: np.uint64, opp: np.uint64, w: npt.NDArray[np.float32], sq: npt.NDArray[np.int64],
    ln: npt.NDArray[np.int64], off: npt.NDArray[np.int64],
) -> int:  # fmt: skip
    """The fitted value for the side to move, in hundredths of a disc."""
    p = phase_of(me, opp)
    total = 0.0
    for i in range(sq.shape[0]):
        idx = 0
        for k in range(ln[i]):
            bit = np.uint64(1) << np.uint64(sq[i, k])
            idx = idx * 3 + (1 if me & bit else 2 if opp & bit else 0)
        total += w[p, off[i] + idx]
    mob = popcount(legal_mask(me, opp)) - popcount(legal_mask(opp, me))
    total += w[p, TABLE] * mob + w[p, TABLE + 1]
    score: int = round(100.0 * total)
    return min(max(score, -EVAL_BOUND), EVAL_BOUND)  # far below a proven result


@kernel
def pattern_value(me: np.uint64, opp: np.uint64, w: npt.NDArray[np.float32]) -> int:
    """`evaluate_patterns` over this module's pattern tables (for the search kernels)."""
    return evaluate_patterns(me, opp, w, INST_SQ, INST_LEN, INST_OFF)


@lru_cache(maxsize=2)
def load(path: Path = DATA) -> npt.NDArray[np.float32]:
    """The shipped weights, shape (PHASES, WEIGHTS); ValueError if the file does not fit."""
    try:
        with np.load(path) as data:
            w = np.asarray(data["weights"], dtype=np.float32)
    except (OSError, KeyError) as exc:
        raise ValueError(f"cannot read pattern weights {path}: {exc}") from None
    if w.shape != (PHASES, WEIGHTS) or not np.isfinite(w).all():
        raise ValueError(f"pattern weights {path}: shape {w.shape}, want {(PHASES, WEIGHTS)}")
    w.setflags(write=False)
    return w


def evaluate(me: int, opp: int, w: npt.NDArray[np.float32] | None = None) -> int:
    """Python entry point: the pattern value of a position (hundredths of a disc)."""
    weights = load() if w is None else w
    return int(
        evaluate_patterns(np.uint64(me), np.uint64(opp), weights, INST_SQ, INST_LEN, INST_OFF)
    )
