"""The pattern evaluation's code written in LLVM vectors (numba intrinsics), for
`patterns.py`: a move's update of a row of pattern indices, and the int16 weights' sum by
gathers on a CPU with AVX-512. Each has its plain equivalent (numba's JIT off, or a CPU
without AVX-512); tests/engine/test_patterns_incremental.py checks they agree.
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding as ll
import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.core import cgutils, config
from numba.extending import intrinsic

_JIT_OFF = bool(getattr(config, "DISABLE_JIT", False))
FIRST_FLIPS = 4
"""How many of a move's flips `play_words` adds up without a branch (`_play_words_impl`)."""
Words = npt.NDArray[np.uint64]
#: Whether `gather_sum` can be used: compiled code on a CPU with AVX-512.
GATHER = not _JIT_OFF and bool(ll.get_host_cpu_features().get("avx512f", False))


def _play_words_impl(typingctx: Any, words: Any, ply: Any, sq: Any, f: Any, delta: Any) -> Any:
    """LLVM's code for `play_indices`: the twelve words of a row as three vectors of four (the
    compiler would unroll a loop over them into twelve scalar steps), the flipped squares' rows
    of `delta` summed in registers, the new row written once.

    The first FIRST_FLIPS flipped squares are added without a branch (`delta` has a row of
    zeros at 64, where a count of trailing zeros points once no flip is left), the rest by a
    loop: a loop over every flip mispredicts its exit at most moves (1 to 4 flips, 2 on
    average), and the update then cost the search twice as much."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        words_t, delta_t = signature.args[0], signature.args[4]
        w = context.make_array(words_t)(context, builder, args[0])
        d = context.make_array(delta_t)(context, builder, args[4])
        ply_v, sq_v, f_v = args[1], args[2], args[3]
        i64 = ir.IntType(64)
        vec = ir.VectorType(i64, 4)

        def row(ary_t: Any, ary: Any, r: Any) -> Any:
            item = (context, builder, ary_t, ary, [r, i64(0)])
            ptr = cgutils.get_item_pointer(*item)  # type: ignore[no-untyped-call]
            return builder.bitcast(ptr, vec.as_pointer())

        def load3(ptr: Any) -> list[Any]:
            return [builder.load(builder.gep(ptr, [ir.IntType(32)(k)]), align=8) for k in range(3)]

        none = ir.Constant(vec, [0, 0, 0, 0])
        first = f_v
        firsts = [none] * 3
        for _ in range(FIRST_FLIPS):
            s = builder.cttz(first, ir.IntType(1)(0))  # 64 (a row of zeros) once none is left
            got = load3(row(delta_t, d, s))
            firsts = [builder.add(a, v) for a, v in zip(firsts, got, strict=True)]
            first = builder.and_(first, builder.sub(first, i64(1)))
        start = builder.basic_block
        head = builder.append_basic_block("flips.head")
        body = builder.append_basic_block("flips.body")
        done = builder.append_basic_block("flips.done")
        builder.branch(head)
        builder.position_at_end(head)
        bits = builder.phi(i64)
        sums = [builder.phi(vec) for _ in range(3)]
        bits.add_incoming(first, start)
        for acc, v in zip(sums, firsts, strict=True):
            acc.add_incoming(v, start)
        builder.cbranch(builder.icmp_unsigned("!=", bits, i64(0)), body, done)
        builder.position_at_end(body)
        s = builder.cttz(bits, ir.IntType(1)(0))
        more = [builder.add(a, v) for a, v in zip(sums, load3(row(delta_t, d, s)), strict=True)]
        bits.add_incoming(builder.and_(bits, builder.sub(bits, i64(1))), body)
        for acc, v in zip(sums, more, strict=True):
            acc.add_incoming(v, body)
        builder.branch(head)
        builder.position_at_end(done)
        odd = builder.trunc(ply_v, ir.IntType(1))
        src = load3(row(words_t, w, ply_v))
        placed = load3(row(delta_t, d, sq_v))
        dst = row(words_t, w, builder.add(ply_v, i64(1)))
        for k in range(3):
            # odd plies: digit 2 placed, flipped 1 -> 2; even plies: digit 1, flipped 2 -> 1
            put = builder.select(odd, builder.add(placed[k], placed[k]), placed[k])
            flip = builder.select(odd, sums[k], builder.sub(none, sums[k]))
            value = builder.add(builder.add(src[k], put), flip)
            builder.store(value, builder.gep(dst, [ir.IntType(32)(k)]), align=8)
        return context.get_dummy_value()

    return types.void(words, ply, sq, f, delta), codegen


def _play_words_python(words: Words, ply: int, sq: int, f: np.uint64, delta: Words) -> None:
    """`_play_words` in plain Python (numba's JIT off), with Python ints (no uint64 warnings)."""
    width = delta.shape[1]
    flipped = [0] * width
    bits = int(f)
    while bits:
        s = (bits & -bits).bit_length() - 1
        bits &= bits - 1
        for k in range(width):
            flipped[k] += int(delta[s, k])
    for k in range(width):
        if ply & 1:
            v = int(words[ply, k]) + 2 * int(delta[sq, k]) + flipped[k]
        else:
            v = int(words[ply, k]) + int(delta[sq, k]) - flipped[k]
        words[ply + 1, k] = v & _MASK64


_MASK64 = (1 << 64) - 1
#: words[ply + 1] = words[ply] plus a move's digits (rows of twelve words, `play_indices`).
play_words: Any = _play_words_python if _JIT_OFF else intrinsic(_play_words_impl)


def gather_sum(offsets: tuple[int, ...]) -> Any:
    """An intrinsic (idx, ply, w, row) -> the sum of w[row, 1 + offsets[i] + idx[ply, i]] over
    the first len(offsets) instances i (w int16, its column 0 unused), for a CPU with AVX-512
    (`GATHER`): one 16-lane gather (`vpgatherdd`) a sixteen instances, of the 32 bits that end
    with each weight, shifted down to it, added as integers in vectors."""
    count = len(offsets)
    assert count <= 48

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        idx_t, w_t = signature.args[0], signature.args[2]
        i32, i64 = ir.IntType(32), ir.IntType(64)
        ia = context.make_array(idx_t)(context, builder, args[0])
        wa = context.make_array(w_t)(context, builder, args[2])
        item = (context, builder, idx_t, ia, [args[1], i64(0)])
        iptr = cgutils.get_item_pointer(*item)  # type: ignore[no-untyped-call]
        item = (context, builder, w_t, wa, [args[3], i64(0)])
        wptr = cgutils.get_item_pointer(*item)  # type: ignore[no-untyped-call]
        v16h = ir.VectorType(ir.IntType(16), 16)
        v16i = ir.VectorType(i32, 16)
        v16b = ir.VectorType(ir.IntType(1), 16)
        byte_ptr = ir.IntType(8).as_pointer()
        kind = ir.FunctionType(v16i, [v16i, byte_ptr, v16i, v16b, i32])
        gather = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
            builder.module, kind, "llvm.x86.avx512.mask.gather.dpi.512"
        )
        reduce = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
            builder.module, ir.FunctionType(i32, [v16i]), "llvm.vector.reduce.add.v16i32"
        )
        base = builder.bitcast(wptr, byte_ptr)
        rows = builder.bitcast(iptr, v16h.as_pointer())
        sixteen = ir.Constant(v16i, [16] * 16)
        acc = None
        for k in range((count + 15) // 16):
            raw = builder.load(builder.gep(rows, [i32(k)]), align=2)
            lanes = [offsets[i] if i < count else 0 for i in range(16 * k, 16 * k + 16)]
            ind = builder.add(builder.zext(raw, v16i), ir.Constant(v16i, lanes))
            mask = ir.Constant(v16b, [16 * k + j < count for j in range(16)])
            # 32 bits at byte 2 * (offset + index): the weight before (or column 0), then ours
            got = builder.call(gather, [ir.Constant(v16i, [0] * 16), base, ind, mask, i32(2)])
            got = builder.ashr(got, sixteen)
            acc = got if acc is None else builder.add(acc, got)
        return builder.sext(builder.call(reduce, [acc]), i64)

    def impl(typingctx: Any, idx: Any, ply: Any, w: Any, row: Any) -> Any:
        return types.int64(idx, ply, w, row), codegen

    return intrinsic(impl)
