"""Fitting the Othello pattern evaluation (`patterns.py`) from self-play games: the games and
the fit; `tools/patternfit.py` runs them (`python -m tools othello-eval`).

Games: the first plies at random, then a two-ply search on the standard evaluation with a few
random moves, until `SOLVE_AT` empty squares; from there the exact solver plays on and
labels every position with its exact final disc difference. Earlier positions are labelled
with the exact value of the game's first solved position (seen from their own side to move).
Then one ridge least-squares fit per phase (conjugate gradients on the sparse pattern
features, numpy only) gives the weights.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from engine.agents.othello import patterns as pt
from engine.agents.othello.evals import evaluate, final_score
from engine.games.bits import kernel, popcount, xorshift
from engine.games.othkernels import _nth_bit, bit_index, flips, legal_mask

SOLVE_AT = 14  # empties from which the solver plays on and labels exactly
RANDOM_PLIES = 8
EPSILON = 0.02
RIDGE = 100.0  # measured on phases 4 and 6: held-out error falls from 2 to 100


@kernel
def _pick(moves: np.uint64, n: int) -> int:
    """The square of the n-th set bit of `moves`."""
    return bit_index(_nth_bit(moves, n))


@kernel
def _reply_value(me: np.uint64, opp: np.uint64) -> int:
    """The value for the side that just moved (`opp` here) after the best reply of `me`, by
    the standard evaluation: a two-ply search, so the games the fit learns from are sound."""
    moves = legal_mask(me, opp)
    if moves == np.uint64(0):
        return -evaluate(me, opp)  # no reply: a pass
    worst = 1 << 40
    for i in range(popcount(moves)):
        s = _pick(moves, i)
        f = flips(me, opp, s)
        bit = np.uint64(1) << np.uint64(s)
        v = evaluate(opp ^ f, me | f | bit)  # the mover's view after the reply
        if v < worst:
            worst = v
    return worst


@kernel
def _opening(
    seed: int, random_plies: int, eps_per_mille: int, stop_empties: int,
    out_me: npt.NDArray[np.uint64], out_opp: npt.NDArray[np.uint64],
    out_side: npt.NDArray[np.int64],
) -> tuple[int, np.uint64, np.uint64, int]:  # fmt: skip
    """Play from the start until `stop_empties`; record each position with a move. Returns
    (positions recorded, me, opp and side to move where it stopped)."""
    rng = np.uint64(seed * 2654435761 + 12345) | np.uint64(1)
    me = np.uint64(0x0000000810000000)  # black: d5 e4
    opp = np.uint64(0x0000001008000000)  # white: d4 e5
    side, n, ply = 0, 0, 0
    while popcount(me | opp) < 64 - stop_empties:
        moves = legal_mask(me, opp)
        if moves == np.uint64(0):
            if legal_mask(opp, me) == np.uint64(0):
                break
            me, opp, side = opp, me, 1 - side
            continue
        out_me[n], out_opp[n], out_side[n] = me, opp, side
        n += 1
        count = popcount(moves)
        rng = xorshift(rng)
        explore = ply < random_plies or int(rng % np.uint64(1000)) < eps_per_mille
        if explore:
            rng = xorshift(rng)
            sq = _pick(moves, int(rng % np.uint64(count)))
        else:
            best, sq = -(1 << 40), -1
            for i in range(count):
                s = _pick(moves, i)
                f = flips(me, opp, s)
                bit = np.uint64(1) << np.uint64(s)
                v = _reply_value(opp ^ f, me | f | bit)
                if v > best:
                    best, sq = v, s
        f = flips(me, opp, sq)
        bit = np.uint64(1) << np.uint64(sq)
        me, opp = opp ^ f, me | f | bit
        side, ply = 1 - side, ply + 1
    return n, me, opp, side


def play_game(
    seed: int,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
    """One labelled game: (mover's discs, opponent's discs, exact-based label) per position."""
    from engine.agents.othello.search import OthelloSearch

    me_buf = np.zeros(64, dtype=np.uint64)
    opp_buf = np.zeros(64, dtype=np.uint64)
    side_buf = np.zeros(64, dtype=np.int64)
    n, me, opp, side = _opening(
        seed, RANDOM_PLIES, int(EPSILON * 1000), SOLVE_AT, me_buf, opp_buf, side_buf
    )
    mes, opps, labels = list(me_buf[:n]), list(opp_buf[:n]), []
    search = OthelloSearch(tt_bits=18)
    search.reset(None, None)
    exact: list[tuple[int, int, int, int]] = []  # (me, opp, side, score)
    m, o, s = int(me), int(opp), int(side)
    while True:
        if not int(legal_mask(np.uint64(m), np.uint64(o))):
            if not int(legal_mask(np.uint64(o), np.uint64(m))):
                break
            m, o, s = o, m, 1 - s
            continue
        score, sq = search.solve(m, o)
        exact.append((m, o, s, score))
        f = int(flips(np.uint64(m), np.uint64(o), sq))
        m, o, s = o ^ f, m | f | (1 << sq), 1 - s
    if exact:
        anchor_side, anchor = exact[0][2], exact[0][3]
    else:  # the game ended before the solver's zone
        final = int(final_score(np.uint64(m), np.uint64(o)))
        anchor_side, anchor = s, final
    for i in range(n):
        labels.append(anchor if side_buf[i] == anchor_side else -anchor)
    for m, o, _, score in exact:
        mes.append(m)
        opps.append(o)
        labels.append(score)
    return (
        np.array(mes, dtype=np.uint64),
        np.array(opps, dtype=np.uint64),
        np.array(labels, dtype=np.float32),
    )


@kernel
def _phases(me: npt.NDArray[np.uint64], opp: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    out = np.empty(me.shape[0], dtype=np.int64)
    for i in range(me.shape[0]):
        out[i] = pt.phase_of(me[i], opp[i])
    return out


@kernel
def _all_features(
    me: npt.NDArray[np.uint64], opp: npt.NDArray[np.uint64], sq: npt.NDArray[np.int64],
    ln: npt.NDArray[np.int64], off: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:  # fmt: skip
    idx = np.empty((me.shape[0], sq.shape[0]), dtype=np.int32)
    mob = np.empty(me.shape[0], dtype=np.float64)
    row = np.empty(sq.shape[0], dtype=np.int64)
    for i in range(me.shape[0]):
        mob[i] = pt.features(me[i], opp[i], sq, ln, off, row)
        for j in range(sq.shape[0]):
            idx[i, j] = row[j]
    return idx, mob


def fit_phase(
    idx: npt.NDArray[np.int32], mob: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
    ridge: float = RIDGE, iterations: int = 200,
) -> npt.NDArray[np.float32]:  # fmt: skip
    """Ridge least squares by conjugate gradients on the normal equations."""
    n, k = idx.shape
    flat = idx.ravel()

    def xw(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = w[idx].sum(axis=1) + mob * w[pt.MOBILITY] + w[pt.BIAS]
        return out

    def xtr(r: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        g = np.zeros(pt.WEIGHTS)
        g[: pt.TABLE] = np.bincount(flat, weights=np.repeat(r, k), minlength=pt.TABLE)
        g[pt.MOBILITY] = mob @ r
        g[pt.BIAS] = r.sum()
        return g

    penalty = np.full(pt.WEIGHTS, ridge)
    penalty[pt.MOBILITY] = penalty[pt.BIAS] = 1e-6  # the global terms are not shrunk

    def a(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return xtr(xw(w)) + penalty * w

    w = np.zeros(pt.WEIGHTS)
    r = xtr(y) - a(w)
    p = r.copy()
    rs = float(r @ r)
    for _ in range(iterations):
        ap = a(p)
        alpha = rs / max(float(p @ ap), 1e-12)
        w += alpha * p
        r -= alpha * ap
        new = float(r @ r)
        if new <= 1e-10 * n:  # converged (or nothing to fit: a phase with no positions)
            break
        p = r + (new / rs) * p
        rs = new
    return w.astype(np.float32)


def _predict(
    w: npt.NDArray[np.float32], idx: npt.NDArray[np.int32], mob: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    v = w.astype(np.float64)
    out: npt.NDArray[np.float64] = v[idx].sum(axis=1) + mob * v[pt.MOBILITY] + v[pt.BIAS]
    return out


def fit(
    me: npt.NDArray[np.uint64], opp: npt.NDArray[np.uint64], label: npt.NDArray[np.float32],
    held_out: npt.NDArray[np.bool_], progress: Callable[[str], None] | None = None,
) -> tuple[npt.NDArray[np.float32], list[float]]:  # fmt: skip
    """Weights for every phase, fitted on the positions not `held_out`, and each phase's
    root-mean-square error (discs) on the held-out ones (NaN for a phase with none: no
    measure, rather than a perfect one)."""
    phases = _phases(me, opp)
    weights = np.zeros((pt.PHASES, pt.WEIGHTS), dtype=np.float32)
    errors = []
    for p in range(pt.PHASES):
        sel = phases == p
        idx, mob = _all_features(me[sel], opp[sel], pt.INST_SQ, pt.INST_LEN, pt.INST_OFF)
        idx = pt.CANONICAL[idx].astype(np.int32)  # mirror images share their weight
        y, test = label[sel].astype(np.float64), held_out[sel]
        weights[p] = fit_phase(idx[~test], mob[~test], y[~test])
        weights[p, : pt.TABLE] = weights[p, pt.CANONICAL]  # every reading of it holds it
        err = _predict(weights[p], idx[test], mob[test]) - y[test]
        errors.append(float(np.sqrt(np.mean(err**2))) if len(err) else float("nan"))
        if progress:
            measured = (
                f"error on {len(err)} held out {errors[-1]:.1f} discs"
                if len(err)
                else "no held-out position to measure it on"
            )
            progress(f"phase {p}: {int((~test).sum())} positions fitted, {measured}")
    return weights, errors
