"""A pattern evaluation for Othello in the style of Logistello and Edax (Buro's linear pattern
evaluation): the position's value is a sum of weights, one per pattern instance, looked up by
the configuration (empty, mine, theirs) of that instance's squares, plus a mobility and a
constant term, with one set of weights per game phase. The weights are fitted from games
(`engine/agents/othello/pattern_fit.py`, ``python -m tools othello-eval``) and shipped as
compressed numpy (`data/othello_patterns.npz`). Values are disc differences for the side to
move, returned in hundredths (the search's units).

The patterns: the corner 3x3, the corner 2x5 (both ways), the edge with its two X-squares,
rows 2-4, and the diagonals of 4-8 squares; each in all its positions on the board, the
positions of one pattern sharing one table (so a position and its mirror images evaluate
alike).

`pattern_value` reads each instance's table index from byte lookups (a row, file or diagonal
of each board read as one byte; see "the fast evaluation" below): 3-5 times faster than reading
the squares one by one, which `features` still does for the fit. tests/engine/test_patterns.py
checks the values against the square-by-square reading
(tests/reference/othello_patterns_reference.py).
The search does not read the patterns at its leaves: it keeps the indices of the position it
stands on and updates them with each move's flips (`play_indices`, "the incremental evaluation"
below), so a leaf only adds up its weights (`indexed_value`, the same value:
tests/engine/test_patterns_incremental.py). Speeds: `python -m benchmarks.speed.othello_nodes`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engine.agents.othello.evals import EVAL_BOUND
from engine.agents.othello.patvector import GATHER, gather_sum, play_words
from engine.games.bits import inline_kernel, kernel, popcnt, popcount
from engine.games.othkernels import inline_legal_mask, legal_mask, legal_masks

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
    played = popcnt(me | opp) - 4
    p = played // 6
    return p if p < PHASES else PHASES - 1


@kernel
def features(
    me: np.uint64, opp: np.uint64, sq: npt.NDArray[np.int64], ln: npt.NDArray[np.int64],
    off: npt.NDArray[np.int64], out: npt.NDArray[np.int64],
) -> int:  # fmt: skip
    """The table index of each instance into `out`; returns the mobility difference. Square by
    square: the fit's reading (`pattern_fit.py`), not the search's."""
    for i in range(sq.shape[0]):
        idx = 0
        for k in range(ln[i]):
            bit = np.uint64(1) << np.uint64(sq[i, k])
            idx = idx * 3 + (1 if me & bit else 2 if opp & bit else 0)
        out[i] = off[i] + idx
    return popcount(legal_mask(me, opp)) - popcount(legal_mask(opp, me))


# -- the fast evaluation ------------------------------------------------------------------------
# An instance's table index is sum(3**place * (1 for mine, 2 for theirs)) over its squares. Its
# squares lie on one to three lines of the board (rows, files or one diagonal); each such line
# is read as a byte of `me` and a byte of `opp` by one formula, (((board >> shift) & mask) * mul)
# >> 56:
#   a row:       shift 8 * rank, mask 0xFF, mul 2**56 (the row byte moved to the top);
#   a file:      shift file, mask one bit a rank, mul 0x8040201008040201 (rank r to bit 7 - r);
#   a diagonal:  shift 0, mask its squares, mul 0x0101010101010101 (each square to its file's
#                bit; a diagonal has one square a file, so the partial products never carry).
# A 256-entry table per (instance, line) part then gives that part's share of the index for a
# byte of mine; theirs count twice. The 66 parts need only 24 different tables (mirror images
# read alike), 12 kB that stay in the first-level cache. Everything is built and checked below.

_ROW_MUL = 1 << 56
_FILE_MASK = 0x0101010101010101
_FILE_MUL = 0x8040201008040201
_DIAG_MUL = 0x0101010101010101
_M64 = (1 << 64) - 1


def _extract(board: int, shift: int, mask: int, mul: int) -> int:
    """The kernel's line read, in Python: the byte a board gives for one line."""
    return ((((board >> shift) & mask) * mul) & _M64) >> 56


def _lines(squares: tuple[int, ...]) -> list[tuple[tuple[int, int, int], list[int]]]:
    """An instance's squares split into lines: [((shift, mask, mul), its squares on the line)].
    One diagonal if they all lie on one, else by ranks or by files, whichever needs fewer."""
    files = {sq % 8 for sq in squares}
    ranks = {sq // 8 for sq in squares}
    if len(squares) > 1 and len(files) == len(ranks) == len(squares):
        diag = {sq % 8 - sq // 8 for sq in squares}
        anti = {sq % 8 + sq // 8 for sq in squares}
        if len(diag) == 1 or len(anti) == 1:
            return [((0, sum(1 << sq for sq in squares), _DIAG_MUL), list(squares))]
    if len(ranks) <= len(files):
        return [
            ((8 * r, 0xFF, _ROW_MUL), [sq for sq in squares if sq // 8 == r]) for r in sorted(ranks)
        ]
    return [
        ((f, _FILE_MASK, _FILE_MUL), [sq for sq in squares if sq % 8 == f]) for f in sorted(files)
    ]


def _part_tables() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint16], list[int]]:
    """The parts of every instance in instance order, (shift, mask, mul, table) each; the
    tables (byte -> share of the index); the number of parts of each instance."""
    parts: list[tuple[int, int, int, int]] = []
    tables: list[list[int]] = []
    counts: list[int] = []
    for _name, squares in INSTANCES:
        place = {sq: 3 ** (len(squares) - 1 - k) for k, sq in enumerate(squares)}
        lines = _lines(squares)
        for read, on_line in lines:
            # Which bit of the byte each square of the line lands on: one bit each, all
            # different, and additive (no carries) over the whole line.
            bit_of = {sq: _extract(1 << sq, *read) for sq in on_line}
            assert all(b and b & (b - 1) == 0 for b in bit_of.values())
            assert len(set(bit_of.values())) == len(on_line)
            assert _extract(sum(1 << sq for sq in on_line), *read) == sum(bit_of.values())
            table = [sum(place[sq] for sq in on_line if byte & bit_of[sq]) for byte in range(256)]
            if table not in tables:
                tables.append(table)
            parts.append((*read, tables.index(table)))
        counts.append(len(lines))
    return np.array(parts, dtype=np.uint64), np.array(tables, dtype=np.uint16), counts


#: PART[j] = (shift, mask, mul, table) of part j, the parts in instance order; PART_TABLE[t,
#: byte] a part's share of its instance's index for a byte of mine (twice it for theirs).
PART, PART_TABLE, _COUNTS = _part_tables()


def _groups() -> tuple[tuple[int, int, int, int], ...]:
    """Per pattern (INSTANCES holds each pattern's instances together, in NAMES order): its
    first instance, how many it has, the parts each has, and its first part."""
    out = []
    part = 0
    for name in NAMES:
        first = next(i for i, (n, _) in enumerate(INSTANCES) if n == name)
        count = sum(1 for n, _ in INSTANCES if n == name)
        assert all(n == name for n, _ in INSTANCES[first : first + count])
        assert len(set(_COUNTS[first : first + count])) == 1
        out.append((first, count, _COUNTS[first], part))
        part += count * _COUNTS[first]
    return tuple(out)


GROUPS = _groups()
assert len(GROUPS) == 11  # pattern_value sums one group a pattern, in this order
_TOP = np.uint64(56)


@inline_kernel
def mobility(me: np.uint64, opp: np.uint64) -> int:
    """The number of legal moves of `me`."""
    return popcnt(inline_legal_mask(me, opp))


@inline_kernel
def _share(me: np.uint64, opp: np.uint64, j: int) -> int:
    """Part j's share of its instance's table index."""
    s, mask, mul, t = PART[j, 0], PART[j, 1], PART[j, 2], PART[j, 3]
    mine: int = PART_TABLE[t, (((me >> s) & mask) * mul) >> _TOP]
    theirs: int = PART_TABLE[t, (((opp >> s) & mask) * mul) >> _TOP]
    return mine + 2 * theirs


@inline_kernel
def _add_group(
    me: np.uint64, opp: np.uint64, w: npt.NDArray[np.float32], p: int, total: float,
    group: tuple[int, int, int, int],
) -> float:  # fmt: skip
    """`total` plus the weights of one pattern's instances, in instance order."""
    first, count, parts, j = group
    for i in range(first, first + count):
        idx = INST_OFF[i]
        for _ in range(parts):
            idx += _share(me, opp, j)
            j += 1
        total += w[p, idx]
    return total


@kernel
def pattern_value(me: np.uint64, opp: np.uint64, w: npt.NDArray[np.float32]) -> int:
    """The fitted value for the side to move, in hundredths of a disc.

    The weights are summed in instance order, in float64, as the straightforward reading of
    the squares did: reordering float additions could change a rounding, and the value must
    stay the one the weights were fitted and measured with.

    One call a pattern, its group's numbers constants: numba inlines each call and LLVM then
    unrolls its loops and folds PART and PART_TABLE's rows into the code (a single loop over
    all 46 instances, reading the parts at run time, took twice as long).
    """
    p = phase_of(me, opp)
    total = 0.0
    total = _add_group(me, opp, w, p, total, GROUPS[0])
    total = _add_group(me, opp, w, p, total, GROUPS[1])
    total = _add_group(me, opp, w, p, total, GROUPS[2])
    total = _add_group(me, opp, w, p, total, GROUPS[3])
    total = _add_group(me, opp, w, p, total, GROUPS[4])
    total = _add_group(me, opp, w, p, total, GROUPS[5])
    total = _add_group(me, opp, w, p, total, GROUPS[6])
    total = _add_group(me, opp, w, p, total, GROUPS[7])
    total = _add_group(me, opp, w, p, total, GROUPS[8])
    total = _add_group(me, opp, w, p, total, GROUPS[9])
    total = _add_group(me, opp, w, p, total, GROUPS[10])
    mob = mobility(me, opp) - mobility(opp, me)
    total += w[p, TABLE] * mob + w[p, TABLE + 1]
    score: int = round(100.0 * total)
    return min(max(score, -EVAL_BOUND), EVAL_BOUND)  # far below a proven result


# -- the incremental evaluation -----------------------------------------------------------------
# The search keeps the table index of every instance, without its table's offset, for the
# position it stands on (`Indices`: rows of uint16, one a ply) and updates them with each move's
# placed disc and flips, so that a leaf only adds up its weights. The indices are read from one
# side for the whole search: digit 1 is the side to move at the even plies, 2 the other side; a
# leaf at an odd ply reads the weights with the two digits swapped (the second half of
# `search_weights`), so it gets the value for its own side to move.
#
# The search reads the table weights as int16 counts of a unit of 2**-k discs (k per phase,
# `quantize`): half the memory of float32 (a phase's tables take 330 kB), and a sum of integers
# is exact in any order, so a leaf adds its 46 weights in vectors (`patvector.gather_sum`) and
# in any order the compiler likes, with no conversion to float64 until the total. The engine's
# weights are those rounded ones everywhere (`load`), so a leaf's value is the one
# `pattern_value` gives.

N_INST = len(INSTANCES)
ROW = 48
"""The width of a row of indices: the 46 instances and two unused columns."""
WORDS = ROW // 4
"""A row of indices read as uint64 words, four indices a word (`play_indices`)."""
Indices = npt.NDArray[np.uint16]
Words = npt.NDArray[np.uint64]


def _square_deltas() -> npt.NDArray[np.uint64]:
    """SQ_DELTA[sq]: the place value (3**place) of square `sq` in each instance, 0 where the
    instance does not hold it, as a row of indices read four a word (uint64, shape (65,
    WORDS)); row 64 all zeros (`patvector.play_words` reads it for a flip that is not
    there)."""
    out = np.zeros((65, ROW), dtype=np.uint16)
    for i, (_name, squares) in enumerate(INSTANCES):
        for k, sq in enumerate(squares):
            out[sq, i] = 3 ** (len(squares) - 1 - k)
    return out.view(np.uint64)


SQ_DELTA = _square_deltas()
INT16_MAX = 32767


class SearchWeights(NamedTuple):
    """The weights as the incremental evaluation reads them (`search_weights`)."""

    tables: npt.NDArray[np.int16]
    """(2 * PHASES, TABLE + 1): per phase its tables in units (column 0 unused: a leaf reads
    each weight as the high half of 32 bits); the phases again with the digits 1 and 2 of every
    table index swapped."""
    terms: npt.NDArray[np.float64]
    """(PHASES, 3): per phase the mobility weight, the constant and the tables' unit."""


def _unit_bits(tables: npt.NDArray[np.float32]) -> int:
    """The largest k (at most 30) with every weight of one phase's tables within int16 in
    units of 2**-k."""
    largest = float(np.abs(tables).max())
    return 30 if largest == 0 else min(30, int(np.floor(np.log2(INT16_MAX / largest))))


def quantize(w: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The weights with each phase's tables rounded to multiples of its unit 2**-k
    (`_unit_bits`), mobility and constant as they are (read-only). The rounding moves a weight
    by at most 2**-(k+1) (k = 11 to 13 for the shipped weights: at most 0.025 hundredths of a
    disc) and leaves rounded weights as they are."""
    out = w.copy()
    for p in range(PHASES):
        unit = 2.0 ** _unit_bits(w[p, :TABLE])
        out[p, :TABLE] = np.round(w[p, :TABLE].astype(np.float64) * unit) / unit
    out.setflags(write=False)
    return out


def _swapped(w: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """`w` with the digits 1 and 2 of every table index swapped."""
    out = w.copy()
    for c, name in enumerate(NAMES):
        size = len(BASE[name])
        raw = np.arange(3**size, dtype=np.int64)
        digits = (raw[:, None] // 3 ** np.arange(size)) % 3
        other = (np.where(digits == 0, 0, 3 - digits) * 3 ** np.arange(size)).sum(axis=1)
        off = OFFSETS[c]
        out[:, off + raw] = w[:, off + other]
    return out


def search_weights(w: npt.NDArray[np.float32]) -> SearchWeights:
    """`quantize(w)` as the search reads it (read-only arrays): `SearchWeights`."""
    q = quantize(w)
    bits = np.array([_unit_bits(q[p, :TABLE]) for p in range(PHASES)], dtype=np.float64)
    both = np.concatenate([q, _swapped(q)])[:, :TABLE].astype(np.float64)
    counts = np.round(both * 2.0 ** np.concatenate([bits, bits])[:, None])
    tables = np.zeros((2 * PHASES, TABLE + 1), dtype=np.int16)
    tables[:, 1:] = counts.astype(np.int16)
    terms = np.stack([q[:, MOBILITY], q[:, BIAS], 2.0**-bits], axis=1).astype(np.float64)
    tables.setflags(write=False)
    terms.setflags(write=False)
    return SearchWeights(tables, terms)


@kernel
def set_indices(me: np.uint64, opp: np.uint64, ply: int, idx: Indices) -> None:
    """Row `ply` of `idx`: every instance's table index for the position, `me` to move at `ply`
    (digit 1 for the side to move at even plies)."""
    one, two = (me, opp) if ply % 2 == 0 else (opp, me)
    for i in range(N_INST):
        v = 0
        for k in range(INST_LEN[i]):
            bit = np.uint64(1) << np.uint64(INST_SQ[i, k])
            v = v * 3 + (1 if one & bit else 2 if two & bit else 0)
        idx[ply, i] = v


@inline_kernel
def play_indices(words: Words, ply: int, sq: int, f: np.uint64) -> None:
    """Row ply + 1 of the indices from row `ply` (`words`: the rows read four indices a
    uint64 word): the side to move at `ply` puts a disc on `sq` and flips `f` (its digit is 1
    at even plies, 2 at odd ones).

    Four indices are added a word at a time: each index stays in 0 .. 3**10 - 1 after every
    step (a placed digit goes 0 -> mover, a flipped one 2 -> 1 or 1 -> 2), so no sum carries
    into the next index. The flipped squares' place values are summed in registers first,
    four words a vector (`patvector.play_words`), then the row is written once.
    """
    play_words(words, ply, sq, f, SQ_DELTA)


@inline_kernel
def pass_indices(words: Words, ply: int) -> None:
    """Row ply + 1 of the indices after a pass at `ply`: the same discs, the same indices."""
    for k in range(WORDS):
        words[ply + 1, k] = words[ply, k]


@inline_kernel
def _table_sum(idx: Indices, ply: int, w: npt.NDArray[np.int16], row: int) -> int:
    """The table weights of row `ply` of `idx`, in units (integers: any order gives the sum)."""
    total = 0
    for i in range(N_INST):
        total += int(w[row, 1 + INST_OFF[i] + idx[ply, i]])
    return total


GATHERED = 32
"""How many instances (the first) a leaf reads by gathers where the CPU has AVX-512; it reads
the others one by one. A gather costs about as much with few lanes as with sixteen: two gathers
and 14 loads cost the search less than three gathers (or one and 30 loads)."""
_gathered_sum: Any = gather_sum(tuple(int(o) for o in INST_OFF[:GATHERED]))


@inline_kernel
def _split_sum(idx: Indices, ply: int, w: npt.NDArray[np.int16], row: int) -> int:
    """`_table_sum` by gathers for the first GATHERED instances, one by one for the others."""
    total: int = _gathered_sum(idx, ply, w, row)
    for i in range(GATHERED, N_INST):
        total += int(w[row, 1 + INST_OFF[i] + idx[ply, i]])
    return total


#: The sum of the table weights: `_split_sum` where the CPU has AVX-512, else `_table_sum`.
_sum: Any = _split_sum if GATHER else _table_sum


@inline_kernel
def indexed_value(
    me: np.uint64, opp: np.uint64, idx: Indices, ply: int, w: npt.NDArray[np.int16],
    terms: npt.NDArray[np.float64],
) -> int:  # fmt: skip
    """`pattern_value` of the position at row `ply` of `idx` with the weights `quantize` gives,
    (`w`, `terms`) from `search_weights`."""
    p = phase_of(me, opp)
    row = p + PHASES * (ply & 1)
    total = _sum(idx, ply, w, row) * terms[p, 2]  # exact: a count times a power of two
    mine, theirs = legal_masks(me, opp)
    mob = popcnt(mine) - popcnt(theirs)
    total += terms[p, 0] * mob + terms[p, 1]
    score: int = round(100.0 * total)
    return min(max(score, -EVAL_BOUND), EVAL_BOUND)


@lru_cache(maxsize=2)
def load(path: Path = DATA) -> npt.NDArray[np.float32]:
    """The shipped weights, shape (PHASES, WEIGHTS), their tables rounded as the search reads
    them (`quantize`); ValueError if the file does not fit."""
    try:
        with np.load(path) as data:
            w = np.asarray(data["weights"], dtype=np.float32)
    except (OSError, KeyError) as exc:
        raise ValueError(f"cannot read pattern weights {path}: {exc}") from None
    if w.shape != (PHASES, WEIGHTS) or not np.isfinite(w).all():
        raise ValueError(f"pattern weights {path}: shape {w.shape}, want {(PHASES, WEIGHTS)}")
    return quantize(w)


@lru_cache(maxsize=2)
def load_search(path: Path = DATA) -> SearchWeights:
    """`search_weights` of the shipped weights (`load`)."""
    return search_weights(load(path))


def evaluate(me: int, opp: int, w: npt.NDArray[np.float32] | None = None) -> int:
    """Python entry point: the pattern value of a position (hundredths of a disc)."""
    weights = load() if w is None else w
    return int(pattern_value(np.uint64(me), np.uint64(opp), weights))
