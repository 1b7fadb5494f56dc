"""What every numba kernel of both games shares: the `kernel` decorators, popcount, the uint64
constants, the xorshift step and its seeding, and the clock.

Every kernel is compiled with the same options, `KERNEL_OPTIONS`: `cache=True` (numba keeps
the machine code in the user's cache folder, so it is compiled once per machine and version of
the code: `engine/kernelcache.py`, which importing this module sets up) and `nogil=True` (a
kernel run in a thread, as the lobby does for in-process moves and warm-ups, lets the event
loop run meanwhile; the cost is one GIL release per call from Python, nothing between
kernels). The one exception is `now`, which reads the clock in Python and so holds the GIL.
Each kernel compiles on its first call, none at import, so a process compiles only what it
runs.

With numba's JIT off (NUMBA_DISABLE_JIT=1) every kernel is its plain Python function, the
hardware bit counts included: the engine pool answers first moves that way while a cold
worker compiles (`lobby/pool.py`).

Bitboards are np.uint64 everywhere: a Python int or an int64 would be typed signed by numba
and mix badly with these constants (or silently promote to float64).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from llvmlite import ir
from numba import njit, objmode, types
from numba.core import config
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

from engine import kernelcache

_JIT_OFF = bool(getattr(config, "DISABLE_JIT", False))

kernelcache.install()  # before any kernel is made: where their machine code is kept

_F = TypeVar("_F", bound=Callable[..., Any])

KERNEL_OPTIONS: dict[str, Any] = {"cache": True, "nogil": True}

ZERO = np.uint64(0)
ONE = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


def kernel(fn: _F) -> _F:
    """A numba kernel (`KERNEL_OPTIONS`), compiled on its first call; mypy keeps the signature."""
    return cast(_F, njit(**KERNEL_OPTIONS)(fn))


def inline_kernel(fn: _F) -> _F:
    """A kernel numba inlines into its callers (a small helper on a hot path)."""
    return cast(_F, njit(inline="always", **KERNEL_OPTIONS)(fn))


NO_REFCOUNTS: dict[str, Any] = {"_nrt": False}
"""The option of a search kernel: numba counts no references to the arrays it is handed.

numba adds one to an array's reference count when a kernel receives it and takes one away when
the kernel returns: two atomic operations (a call and a locked instruction each) per array
argument and call, which a recursive search handed its tables pays at every node. Without the
runtime such a kernel must make no array (no np.empty, no copy): its caller owns every array it
reads and writes."""


def search_kernel(fn: _F) -> _F:
    """A kernel (`KERNEL_OPTIONS`) without reference counts (`NO_REFCOUNTS`)."""
    return cast(_F, njit(**NO_REFCOUNTS, **KERNEL_OPTIONS)(fn))


class _OneSignature(CPUDispatcher):
    """A dispatcher that compiles (or loads) exactly one signature, on its first use: called
    from Python, or met while another kernel is compiled."""

    signature: Any = None

    def _only(self) -> None:
        if self._can_compile:  # type: ignore[attr-defined]
            self.compile(self.signature)
            self.disable_compile()

    def get_call_template(self, args: Any, kws: Any) -> Any:
        self._only()
        return super().get_call_template(args, kws)

    def _compile_for_args(self, *args: Any, **kws: Any) -> Any:
        self._only()
        return self  # numba calls it again: the one compiled version now (or a TypeError)


def typed_kernel(signature: Any, refcounts: bool = True) -> Callable[[_F], _F]:
    """A kernel compiled for exactly one signature, on its first use (never at import: a
    process compiles only the kernels it runs).

    Recursive kernels that other kernels call need this: numba's cache mislinks a recursive
    function compiled again as another kernel's dependency (numba issues #6061, #6713), so
    there must be exactly one compiled version, which every caller links against.
    `refcounts=False`: a search kernel (`NO_REFCOUNTS`).
    """

    def wrap(fn: _F) -> _F:
        if _JIT_OFF:
            return fn
        options = {k: v for k, v in KERNEL_OPTIONS.items() if k != "cache"}
        if not refcounts:
            options.update(NO_REFCOUNTS)
        disp = _OneSignature(py_func=fn, locals={}, targetoptions={"nopython": True, **options})
        disp.signature = signature
        if KERNEL_OPTIONS["cache"]:
            disp.enable_caching()
        return cast(_F, disp)

    return wrap


@kernel
def popcount(x: np.uint64) -> int:
    """Number of set bits, in constant time (SWAR: numba has no portable uint64 popcount).

    Typed int64 on purpose: numba's `int()` keeps a uint64 unsigned, and a uint64 count mixed
    with signed numbers turns the arithmetic into float64 (or wraps below zero).
    """
    x = x - ((x >> ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))  # type: ignore[return-value]


@njit(cache=True)  # no nogil: the objmode block needs the GIL (numba warns otherwise)
def now() -> float:
    """`time.perf_counter()` from inside numba code (an objmode block, about a microsecond)."""
    with objmode(t="float64"):
        t = time.perf_counter()
    return t


@kernel
def xorshift(state: np.uint64) -> np.uint64:
    """One xorshift64 step (state non-zero): the next state, which is also the number drawn."""
    state ^= state << np.uint64(13)
    state ^= state >> np.uint64(7)
    state ^= state << np.uint64(17)
    return state


@kernel
def seed_rng(seed: int) -> np.uint64:
    """A non-zero xorshift state from any integer seed (one splitmix64 step spreads it)."""
    z = np.uint64(seed & 0x7FFFFFFFFFFFFFFF) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    if z == ZERO:
        z = np.uint64(0x9E3779B97F4A7C15)
    return z


# -- hardware bit counts ----------------------------------------------------------------------
# LLVM's ctpop / cttz / ctlz: one instruction each where the CPU has it (popcnt, tzcnt, lzcnt),
# LLVM's own portable expansion where it does not. The endgame solver's hot loops use them.


def _ctpop64_impl(typingctx: Any, x: Any) -> Any:
    if not isinstance(x, types.Integer) or getattr(x, "bitwidth", 0) != 64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])

    return types.int64(x), codegen


def _cttz64_impl(typingctx: Any, x: Any) -> Any:
    if not isinstance(x, types.Integer) or getattr(x, "bitwidth", 0) != 64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


def _ctlz64_impl(typingctx: Any, x: Any) -> Any:
    if not isinstance(x, types.Integer) or getattr(x, "bitwidth", 0) != 64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


_ctpop64: Any = intrinsic(_ctpop64_impl)
_cttz64: Any = intrinsic(_cttz64_impl)
_ctlz64: Any = intrinsic(_ctlz64_impl)
if _JIT_OFF:  # the same counts in plain Python (an intrinsic runs only compiled)

    def _ctpop64(x: Any) -> np.int64:
        return np.int64(int(x).bit_count())

    def _cttz64(x: Any) -> np.int64:
        v = int(x)
        return np.int64((v & -v).bit_length() - 1 if v else 64)

    def _ctlz64(x: Any) -> np.int64:
        return np.int64(64 - int(x).bit_length())


@inline_kernel
def popcnt(x: np.uint64) -> int:
    """Number of set bits (int64), one `popcnt` instruction where the CPU has one."""
    n: int = _ctpop64(x)
    return n


@inline_kernel
def lsb_index(x: np.uint64) -> int:
    """Index of the lowest set bit (64 for x == 0)."""
    n: int = _cttz64(x)
    return n


@inline_kernel
def msb_index(x: np.uint64) -> int:
    """Index of the highest set bit (-1 for x == 0)."""
    n: int = _ctlz64(x)
    return 63 - n
