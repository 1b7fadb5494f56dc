"""The Othello pattern evaluation read square by square: the straightforward kernel that
`engine.agents.othello.patterns.evaluate_patterns` replaced, kept as the tests' oracle (its
values are the ones the shipped weights were fitted and measured with)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from engine.agents.othello.evals import EVAL_BOUND
from engine.agents.othello.patterns import INST_LEN, INST_OFF, INST_SQ, TABLE, phase_of
from engine.games.bits import popcount
from engine.games.othkernels import legal_mask


# Not cached: numba's cache would keep patterns.py's tables as they were when it was written.
@njit(cache=False)
def slow_evaluate(
    me: np.uint64, opp: np.uint64, w: npt.NDArray[np.float32], sq: npt.NDArray[np.int64],
    ln: npt.NDArray[np.int64], off: npt.NDArray[np.int64],
) -> int:  # fmt: skip
    """The fitted value for the side to move, in hundredths of a disc: each instance's index
    built digit by digit from its squares, weights summed in instance order."""
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
    return min(max(score, -EVAL_BOUND), EVAL_BOUND)


@njit(cache=False)
def slow_values(
    me: npt.NDArray[np.uint64], opp: npt.NDArray[np.uint64], w: npt.NDArray[np.float32]
) -> npt.NDArray[np.int64]:
    """`slow_evaluate` of every position (me[i], opp[i])."""
    out = np.empty(me.shape[0], dtype=np.int64)
    for i in range(me.shape[0]):
        out[i] = slow_evaluate(me[i], opp[i], w, INST_SQ, INST_LEN, INST_OFF)
    return out
