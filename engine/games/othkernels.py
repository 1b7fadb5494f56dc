"""Numba kernels for Othello bitboards: move generation, flips, perft and random playouts.

Everything here works on `np.uint64` bitboards from the point of view of the side to move:
`me` holds the mover's discs, `opp` the opponent's. Square index = file + 8 * rank, so a1 = 0,
h1 = 7, a8 = 56, h8 = 63; shifting left by 1 moves east, by 8 north.

The functions are plain module-level `engine.games.bits.kernel` functions rather than methods so
that search agents compiled with numba can call them directly from their own kernels (the
midgame search, the exact endgame solver, the evaluations, the playouts all use these two
generators); the `OthelloState` class in `othello.py` is only a thin immutable wrapper around
them.

Wrap-around: an east/west or diagonal shift would carry a disc from the h file onto the a file of
the next rank (or back). Move generation therefore only lets the *flanked* discs live on files
b..g (`_INNER`): a line that flips discs on a horizontal or diagonal never has them on the a or
h file, and the one step past the run is computed from a b..g square, so it cannot wrap. The
flips read precomputed rays (`RAYS`), which stop at the board's edge.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.core import cgutils, config
from numba.extending import intrinsic

from engine.games.bits import (
    ONE,
    ZERO,
    inline_kernel,
    kernel,
    lsb_index,
    popcnt,
    xorshift,
)

U64Array = npt.NDArray[np.uint64]
_JIT_OFF = bool(getattr(config, "DISABLE_JIT", False))

_INNER = np.uint64(0x7E7E7E7E7E7E7E7E)  # files b..g


def _rays() -> U64Array:
    """RAYS[sq, d]: the squares from sq (excluded) to the edge in direction d; d < 4 go up the
    square indices (E, N, NE, NW), d >= 4 down (W, S, SW, SE)."""
    steps = [(1, 0), (0, 1), (1, 1), (-1, 1), (-1, 0), (0, -1), (-1, -1), (1, -1)]
    out = np.zeros((64, 8), dtype=np.uint64)
    for sq in range(64):
        for d, (df, dr) in enumerate(steps):
            f, r = sq % 8 + df, sq // 8 + dr
            m = 0
            while 0 <= f < 8 and 0 <= r < 8:
                m |= 1 << (f + 8 * r)
                f, r = f + df, r + dr
            out[sq, d] = m
    return out


RAYS = _rays()


def _moves_dir(me: np.uint64, mask: np.uint64, s: np.uint64, s2: np.uint64) -> np.uint64:
    """Squares one step past a run of `mask` discs next to `me`, both ways along one axis.

    The run is filled as a parallel prefix (Kogge-Stone): two single steps, then two steps of
    two squares over pairs of `mask` discs, which covers the longest run (six discs) in four
    steps instead of six.
    """
    fl = mask & (me << s)
    fl |= mask & (fl << s)
    pre = mask & (mask << s)
    fl |= pre & (fl << s2)
    fl |= pre & (fl << s2)
    fr = mask & (me >> s)
    fr |= mask & (fr >> s)
    pre = mask & (mask >> s)
    fr |= pre & (fr >> s2)
    fr |= pre & (fr >> s2)
    return (fl << s) | (fr >> s)


def _scalar_legal_mask(me: np.uint64, opp: np.uint64) -> np.uint64:
    """`inline_legal_mask` one axis after the other (plain Python, numba's JIT off)."""
    inner = opp & _INNER
    m = _moves_dir(me, inner, np.uint64(1), np.uint64(2))
    m |= _moves_dir(me, opp, np.uint64(8), np.uint64(16))
    m |= _moves_dir(me, inner, np.uint64(7), np.uint64(14))
    m |= _moves_dir(me, inner, np.uint64(9), np.uint64(18))
    return m & ~(me | opp)


# -- the legal moves in vectors ---------------------------------------------------------------
# The fill of `_moves_dir` along the four axes at once, one axis a lane of an LLVM vector
# (per-lane shifts: one instruction a step where the CPU has AVX2), and for `legal_masks` both
# sides at once in eight lanes: a quarter of the instructions of the axes one by one.

_AXES = (1, 8, 7, 9)
_ALL = (1 << 64) - 1
_AXIS_MASK = tuple(_ALL if s == 8 else int(_INNER) for s in _AXES)


def _vector_fill(builder: Any, me: Any, opp: Any, lanes: int) -> Any:
    """Per lane, the squares one step past a run of `opp` discs next to `me` along the lane's
    axis, both ways (`me`, `opp`: vectors of `lanes` lanes, the axes `_AXES` in each four)."""
    vec = ir.VectorType(ir.IntType(64), lanes)
    step = ir.Constant(vec, [_AXES[k % 4] for k in range(lanes)])
    step2 = ir.Constant(vec, [2 * _AXES[k % 4] for k in range(lanes)])
    mask = builder.and_(opp, ir.Constant(vec, [_AXIS_MASK[k % 4] for k in range(lanes)]))
    pre_l = builder.and_(mask, builder.shl(mask, step))
    pre_r = builder.and_(mask, builder.lshr(mask, step))
    out = None
    for shift, pre in ((builder.shl, pre_l), (builder.lshr, pre_r)):
        f = builder.and_(mask, shift(me, step))
        f = builder.or_(f, builder.and_(mask, shift(f, step)))
        f = builder.or_(f, builder.and_(pre, shift(f, step2)))
        f = builder.or_(f, builder.and_(pre, shift(f, step2)))
        f = shift(f, step)
        out = f if out is None else builder.or_(out, f)
    return out


def _lanes(builder: Any, values: list[Any]) -> Any:
    """A vector of the scalars `values`, each repeated over four lanes."""
    vec = ir.VectorType(values[0].type, 4 * len(values))
    out = ir.Constant(vec, None)
    for k in range(4 * len(values)):
        out = builder.insert_element(out, values[k // 4], ir.IntType(32)(k))
    return out


def _or_lanes(builder: Any, v: Any, first: int) -> Any:
    """The OR of lanes first .. first + 3 of `v`."""
    out = builder.extract_element(v, ir.IntType(32)(first))
    for k in range(first + 1, first + 4):
        out = builder.or_(out, builder.extract_element(v, ir.IntType(32)(k)))
    return out


def _is_u64(*args: Any) -> bool:
    return all(isinstance(t, types.Integer) and getattr(t, "bitwidth", 0) == 64 for t in args)


def _legal_mask_impl(typingctx: Any, me: Any, opp: Any) -> Any:
    if not _is_u64(me, opp):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a, b = args
        fill = _vector_fill(builder, _lanes(builder, [a]), _lanes(builder, [b]), 4)
        return builder.and_(_or_lanes(builder, fill, 0), builder.not_(builder.or_(a, b)))

    return types.uint64(me, opp), codegen


def _legal_masks_impl(typingctx: Any, me: Any, opp: Any) -> Any:
    if not _is_u64(me, opp):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a, b = args
        fill = _vector_fill(builder, _lanes(builder, [a, b]), _lanes(builder, [b, a]), 8)
        empty = builder.not_(builder.or_(a, b))
        mine = builder.and_(_or_lanes(builder, fill, 0), empty)
        theirs = builder.and_(_or_lanes(builder, fill, 4), empty)
        return context.make_tuple(builder, signature.return_type, [mine, theirs])

    pair = types.UniTuple(types.uint64, 2)  # type: ignore[no-untyped-call]
    return pair(me, opp), codegen


def _scalar_legal_masks(me: np.uint64, opp: np.uint64) -> tuple[np.uint64, np.uint64]:
    return _scalar_legal_mask(me, opp), _scalar_legal_mask(opp, me)


_vector_legal_mask: Any = _scalar_legal_mask if _JIT_OFF else intrinsic(_legal_mask_impl)
_vector_legal_masks: Any = _scalar_legal_masks if _JIT_OFF else intrinsic(_legal_masks_impl)


@inline_kernel
def inline_legal_mask(me: np.uint64, opp: np.uint64) -> np.uint64:
    """`legal_mask` inlined by numba into its caller: the midgame search's hot paths use it
    (every other caller calls `legal_mask`, which compiles far faster than a copy at each
    call site)."""
    m: np.uint64 = _vector_legal_mask(me, opp)
    return m


@inline_kernel
def legal_masks(me: np.uint64, opp: np.uint64) -> tuple[np.uint64, np.uint64]:
    """(`legal_mask(me, opp)`, `legal_mask(opp, me)`) in one fill of both sides, inlined."""
    both: tuple[np.uint64, np.uint64] = _vector_legal_masks(me, opp)
    return both


@kernel
def legal_mask(me: np.uint64, opp: np.uint64) -> np.uint64:
    """Bitboard of the empty squares where the side to move flips at least one disc."""
    return inline_legal_mask(me, opp)


def _flips_impl(typingctx: Any, me: Any, opp: Any, sq: Any, rays: Any) -> Any:
    """LLVM's code for `inline_flips`: the four rays up the square indices in one vector of
    four lanes, the four down in another (the highest bit of each lane by one `vplzcntq`
    where the CPU has AVX-512), then the OR of the eight lanes."""
    if not _is_u64(me, opp) or not isinstance(sq, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a, b, square = args[0], args[1], args[2]
        rays_t = signature.args[3]
        table = context.make_array(rays_t)(context, builder, args[3])
        i64 = ir.IntType(64)
        vec = ir.VectorType(i64, 4)
        square = context.cast(builder, square, signature.args[2], types.int64)
        item = (context, builder, rays_t, table, [square, i64(0)])
        ptr = cgutils.get_item_pointer(*item)  # type: ignore[no-untyped-call]
        ptr = builder.bitcast(ptr, vec.as_pointer())
        up = builder.load(ptr, align=8)
        down = builder.load(builder.gep(ptr, [ir.IntType(32)(1)]), align=8)
        mine = _lanes(builder, [a])
        theirs = builder.not_(_lanes(builder, [b]))
        zero = ir.Constant(vec, [0] * 4)
        # up: the lowest square of each ray that is not theirs; the run below it flips if it
        # is ours
        x = builder.and_(up, theirs)
        m = builder.and_(builder.and_(x, builder.sub(zero, x)), mine)
        some = builder.sext(builder.icmp_unsigned("!=", m, zero), vec)
        f = builder.and_(up, builder.add(m, some))
        # down: the highest such square (each ray's lowest bit set, so never 0)
        x = builder.or_(builder.and_(down, theirs), ir.Constant(vec, [1] * 4))
        lead = builder.call(
            cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
                builder.module, ir.FunctionType(vec, [vec, ir.IntType(1)]), "llvm.ctlz.v4i64"
            ),
            [x, ir.IntType(1)(0)],
        )
        top = builder.lshr(ir.Constant(vec, [1 << 63] * 4), lead)
        m = builder.and_(builder.and_(top, mine), down)
        f = builder.or_(
            f, builder.and_(down, builder.sub(zero, builder.shl(m, ir.Constant(vec, [1] * 4))))
        )
        return _or_lanes(builder, f, 0)

    return types.uint64(me, opp, sq, rays), codegen


_vector_flips: Any = intrinsic(_flips_impl)


@inline_kernel
def inline_flips(me: np.uint64, opp: np.uint64, sq: int) -> np.uint64:
    """`flips` inlined by numba into its caller (the midgame search's, as `inline_legal_mask`).

    Bitboard of the opponent discs that a disc on the empty square `sq` flips (0 if the move
    is illegal). Occupancy of `sq` is not checked here.

    Branch-free: along each ray the first square that is not an opponent disc is found (the
    lowest set bit going up the square indices, the highest going down); if it holds a disc of
    `me`, the opponent discs before it flip. The eight rays are eight lanes of two LLVM
    vectors (`_flips_impl`).
    """
    f: np.uint64 = _vector_flips(me, opp, sq, RAYS)
    return f


@kernel
def flips(me: np.uint64, opp: np.uint64, sq: int) -> np.uint64:
    """Bitboard of the opponent discs that a disc on the empty square `sq` flips (0 if the move
    is illegal; `inline_flips`)."""
    return inline_flips(me, opp, sq)


def _flips_python(me: np.uint64, opp: np.uint64, sq: int) -> np.uint64:
    """`flips` in plain Python ints, for numba's JIT off (numpy warns when a uint64 wraps)."""
    m, o = int(me), int(opp)
    f = 0
    for d in range(8):
        r = int(RAYS[sq, d])
        x = r & ~o
        if not x:
            continue
        if d < 4:
            near = x & -x
            run = r & (near - 1)
        else:
            near = 1 << (x.bit_length() - 1)
            run = r & ~((near << 1) - 1)
        if near & m:
            f |= run
    return np.uint64(f)


if _JIT_OFF:
    flips = inline_flips = _flips_python


@kernel
def bit_index(bit: np.uint64) -> int:
    """Square index of a one-bit board."""
    return lsb_index(bit)


@kernel
def _perft(me: np.uint64, opp: np.uint64, depth: int) -> int:
    """Leaves below a position with `depth` >= 1 plies to go.

    The last ply is bulk-counted: a position with moves contributes one leaf per move, one
    without moves contributes exactly one leaf (a pass, or a finished game).
    """
    moves = legal_mask(me, opp)
    if moves == ZERO:
        if depth == 1 or legal_mask(opp, me) == ZERO:
            return 1  # a finished game is one leaf however much depth remains
        return _perft(opp, me, depth - 1)
    if depth == 1:
        return popcnt(moves)
    total = 0
    while moves:
        bit = moves & (~moves + ONE)
        f = flips(me, opp, bit_index(bit))
        total += _perft(opp ^ f, me | f | bit, depth - 1)
        moves ^= bit
    return total


@kernel
def perft(me: np.uint64, opp: np.uint64, depth: int) -> int:
    """Number of leaf paths `depth` plies deep; a pass is a ply, a finished game one leaf."""
    if depth <= 0:
        return 1
    return _perft(me, opp, depth)


@kernel
def _nth_bit(x: np.uint64, n: int) -> np.uint64:
    """The `n`-th lowest set bit of `x` (0-based) as a one-bit board."""
    for _ in range(n):
        x &= x - ONE
    return x & (~x + ONE)


@kernel
def _seed_state(seed: int) -> np.uint64:
    """A nonzero xorshift state from any integer seed (splitmix-style scrambling)."""
    s = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x6A09E667F3BCC909)
    s ^= s >> np.uint64(31)
    return s if s != ZERO else np.uint64(0x2545F4914F6CDD1D)


@kernel
def _playout(me: np.uint64, opp: np.uint64, rng: np.uint64) -> tuple[int, np.uint64]:
    """Play uniformly random moves to the end; (result for the starting mover, new rng state)."""
    sign = 1
    passed = False
    while True:
        moves = legal_mask(me, opp)
        if moves == ZERO:
            if passed:
                break
            passed = True
        else:
            passed = False
            rng = xorshift(rng)
            bit = _nth_bit(moves, int(rng % np.uint64(popcnt(moves))))
            f = flips(me, opp, bit_index(bit))
            me, opp = me | f | bit, opp ^ f
        me, opp = opp, me
        sign = -sign
    diff = popcnt(me) - popcnt(opp)
    if diff == 0:
        return 0, rng
    return (sign if diff > 0 else -sign), rng


@kernel
def random_playout(me: np.uint64, opp: np.uint64, seed: int) -> int:
    """Result of one uniformly random game for the side to move: 1 win, 0 draw, -1 loss."""
    return _playout(me, opp, _seed_state(seed))[0]


@kernel
def playouts(me: np.uint64, opp: np.uint64, n: int, seed: int) -> int:
    """Sum of `n` random playout results for the side to move (wins minus losses).

    One RNG stream runs through all games, so this measures raw playout speed without
    reseeding costs; agents use it as a cheap Monte Carlo evaluation.
    """
    rng = _seed_state(seed)
    total = 0
    for _ in range(n):
        r, rng = _playout(me, opp, rng)
        total += r
    return total
