"""The exact solver's transposition table: its memory, the slot of a position, and prefetching.

One 8-byte entry per slot: the key's low 56 bits << 8 | the value (0: an empty slot). The key
is Pons' `cur + mask`; the slot is key % a prime above 2^8, so slot and stored bits together
tell every key apart (the Chinese remainder theorem, as in Pons' solver). A probe is a read
from a random place of 32 MB, so its cost is memory latency: the table lives on huge pages
where Linux allows it (one TLB entry per 2 MB), and the search asks for the entries of a
node's children while it orders them (`prefetch`), so they load together.
"""

from __future__ import annotations

import contextlib
import mmap
from typing import Any

import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic

from engine.games.bits import inline_kernel

U64 = npt.NDArray[np.uint64]

#: The usual number of slots, a prime: 4M entries of 8 bytes, 32 MB.
PRIME = 4194301


def allocate(size: int) -> U64:
    """A zeroed table of `size` slots, on transparent huge pages where the system has them."""
    advise = getattr(mmap, "MADV_HUGEPAGE", None)
    if advise is None:
        return np.zeros(size, dtype=np.uint64)
    buf = mmap.mmap(-1, size * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(OSError):  # huge pages turned off: ordinary pages
        buf.madvise(advise)
    return np.frombuffer(buf, dtype=np.uint64)  # zero-filled; the array keeps the mapping


@inline_kernel
def slot_of(key: np.uint64, size: np.uint64) -> np.uint64:
    """The slot of a key in a table of `size` slots.

    A plain division: neither a multiplication by the prime's inverse nor a multiplicative hash
    measured faster, since a probe waits on memory."""
    return key % size


def _prefetch_fn(typingctx: Any, table: Any, slot: Any) -> Any:
    if not isinstance(table, types.Array) or not isinstance(slot, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = builder.module.globals.get("llvm.prefetch.p0")
        if fn is None:
            fn = ir.Function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])  # a read, kept in every cache level
        return context.get_dummy_value()

    return types.void(table, slot), codegen


prefetch: Any = intrinsic(_prefetch_fn)
"""prefetch(table, slot): start loading an entry into the caches (one instruction, no wait)."""
if getattr(config, "DISABLE_JIT", False):  # plain Python: nothing to load ahead

    def prefetch(table: U64, slot: np.uint64) -> None:
        """prefetch(table, slot): nothing without numba's JIT."""
