"""The static evaluations of Connect Four positions for the minimax search (numba): "checkers"
(discs each side still needs for a line), "opportunities" (open lines through each disc) and
"window" (lines of four and three), all on the k-cell windows of `engine.games.c4windows`.
What each counts exactly: docs/agents.md.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from engine.games.bits import kernel, popcount
from engine.games.c4windows import DIRECTIONS, bit, window_cells

#: Evaluation names and the ids the numba kernels dispatch on.
EVALS: tuple[str, ...] = ("checkers", "opportunities", "window")
CHECKERS, OPPORTUNITIES, WINDOW = 0, 1, 2

#: The opportunities evaluation's value of a won (lost) board.
WON_BOARD = 10_000


def eval_id(name: str) -> int:
    """The kernel id of an evaluation name; ValueError naming the choices otherwise."""
    if name not in EVALS:
        raise ValueError(f"unknown connect4 eval {name!r}: choose one of {', '.join(EVALS)}")
    return EVALS.index(name)


def no_window(k: int) -> int:
    """The remaining-checkers value of a direction in which no window can be completed."""
    return 2 * k


Tables = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.int64]]


@lru_cache(maxsize=64)
def tables(rows: int, cols: int, k: int) -> Tables:
    """(window masks, below masks, direction bounds) for a board.

    The windows come grouped by direction in `DIRECTIONS` order; direction d owns the windows
    ``bounds[d]:bounds[d + 1]`` (5 bounds).
    """
    masks, below, dirs = [], [], []
    for cells in window_cells(rows, cols, k):
        dc, dr = cells[1][0] - cells[0][0], cells[1][1] - cells[0][1]
        wmask = sum(1 << bit(c, r, rows) for c, r in cells)
        under = 0
        for c, r in cells:
            for rr in range(r):
                under |= 1 << bit(c, rr, rows)
        masks.append(wmask)
        below.append(under & ~wmask)
        dirs.append(DIRECTIONS.index((dc, dr)))
    bounds = [dirs.index(d) if d in dirs else len(dirs) for d in range(len(DIRECTIONS))]
    for d in range(len(DIRECTIONS) - 2, -1, -1):  # a direction without windows is empty
        bounds[d] = min(bounds[d], bounds[d + 1])
    if dirs != sorted(dirs):
        raise AssertionError("c4windows must list the windows grouped by direction")
    return (
        np.array(masks, dtype=np.uint64),
        np.array(below, dtype=np.uint64),
        np.array([*bounds, len(dirs)], dtype=np.int64),
    )


@kernel
def _remaining(
    own: np.uint64,
    opp: np.uint64,
    empty: np.uint64,
    k: int,
    lo: int,
    hi: int,
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
) -> int:
    """The fewest checkers `own` needs (filler included) over windows lo..hi-1, capped at 2k."""
    best = 2 * k
    for i in range(lo, hi):
        w = wmask[i]
        if w & opp:
            continue
        need = k - popcount(w & own)
        if need == 0 or need >= best:
            continue
        need += popcount(wbelow[i] & empty)
        if need < best:
            best = need
    return best


@kernel
def remaining_by_direction(
    own: np.uint64,
    opp: np.uint64,
    empty: np.uint64,
    k: int,
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
) -> tuple[int, int, int, int]:
    """The remaining checkers of `own` in each direction (vertical, horizontal, up, down)."""
    return (
        _remaining(own, opp, empty, k, wdir[0], wdir[1], wmask, wbelow),
        _remaining(own, opp, empty, k, wdir[1], wdir[2], wmask, wbelow),
        _remaining(own, opp, empty, k, wdir[2], wdir[3], wmask, wbelow),
        _remaining(own, opp, empty, k, wdir[3], wdir[4], wmask, wbelow),
    )


@kernel
def checkers_score(
    cur: np.uint64,
    opp: np.uint64,
    empty: np.uint64,
    k: int,
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
) -> int:
    """Sum over directions of (opponent remaining - my remaining): higher is better for `cur`."""
    s = 0
    for d in range(4):
        s += _remaining(opp, cur, empty, k, wdir[d], wdir[d + 1], wmask, wbelow)
        s -= _remaining(cur, opp, empty, k, wdir[d], wdir[d + 1], wmask, wbelow)
    return s


@kernel
def opportunities_score(cur: np.uint64, opp: np.uint64, wmask: npt.NDArray[np.uint64]) -> int:
    """Own open-window discs minus the opponent's (the won-board term aside)."""
    s = 0
    for i in range(wmask.shape[0]):
        w = wmask[i]
        a = w & cur
        b = w & opp
        if a and not b:
            s += popcount(a)
        elif b and not a:
            s -= popcount(b)
    return s


@kernel
def window_counts(
    own: np.uint64, opp: np.uint64, k: int, wmask: npt.NDArray[np.uint64]
) -> tuple[int, int, int]:
    """(own fours, own threes, opponent threes): k own discs; k-1 own discs and an empty cell."""
    fours = threes = othrees = 0
    for i in range(wmask.shape[0]):
        w = wmask[i]
        a = w & own
        b = w & opp
        if not b:
            n = popcount(a)
            if n == k:
                fours += 1
            elif n == k - 1:
                threes += 1
        elif not a and popcount(b) == k - 1:
            othrees += 1
    return fours, threes, othrees


@kernel
def evaluate(
    kind: int,
    cur: np.uint64,
    mask: np.uint64,
    board: np.uint64,
    k: int,
    ply: int,
    wmask: npt.NDArray[np.uint64],
    wbelow: npt.NDArray[np.uint64],
    wdir: npt.NDArray[np.int64],
) -> int:
    """The static value for the side to move of an unfinished position.

    `ply` counts plies from the search root; only the "window" evaluation uses it, to score from
    the root player's point of view (even ply: the root player is to move).
    """
    opp = cur ^ mask
    if kind == CHECKERS:
        return checkers_score(cur, opp, board & ~mask, k, wmask, wbelow, wdir)
    if kind == OPPORTUNITIES:
        return opportunities_score(cur, opp, wmask)
    if ply % 2 == 0:
        fours, threes, othrees = window_counts(cur, opp, k, wmask)
        return fours * 1_000_000 + threes - 1000 * othrees
    fours, threes, othrees = window_counts(opp, cur, k, wmask)
    return -(fours * 1_000_000 + threes - 1000 * othrees)
