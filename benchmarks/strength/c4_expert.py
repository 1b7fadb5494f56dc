"""How often does a Connect Four agent keep the game-theoretic outcome? (the `expert` target)

Positions: N random playouts of 4-30 plies from the empty 7x6 board (seeded; finished games are
skipped). Oracle: the exact score of every move, from the PyPI package `bitbully` (a C++ solver
with an opening book; used here as an oracle only, never by engine/) or, with --oracle solver or
when bitbully is missing, our own `c4solver.best_moves` without a time limit (slow early on).

A move "keeps the outcome" when the sign of its exact score equals the sign of the best move's.
Reported: the share over all positions, the share excluding lost positions where every move
keeps the loss (they cannot be got wrong), per ply bucket, and the agent's p50/p95/max time.

    python -m benchmarks.strength.c4_expert --n 300 --agent perfect --time 0.9
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from benchmarks.measure import load, percentile, sign
from engine.agents import registry
from engine.agents.connect4 import solver as c4solver
from engine.games.connect4 import Connect4State


def positions(n: int, seed: int) -> list[Connect4State]:
    rng = random.Random(seed)
    out: list[Connect4State] = []
    while len(out) < n:
        plies = rng.randint(4, 30)
        state = Connect4State.new()
        for _ in range(plies):
            state = state.play(rng.choice(state.legal_moves()))
            if state.is_over():
                break
        if not state.is_over():
            out.append(state)
    return out


def oracle_scores(state: Connect4State, kind: str) -> dict[int, int]:
    """Exact score of each legal move, from the mover's point of view."""
    if kind == "bitbully":
        import bitbully

        agent = oracle_scores.__dict__.setdefault("agent", bitbully.BitBully())
        board = bitbully.Board.from_moves(list(state.moves))
        return {int(c): int(v) for c, v in agent.score_all_moves(board).items()}
    scores = {}
    cells = state.rows * state.cols
    for col in state.legal_moves():
        child = state.play(col)
        if child.is_over():
            outcome = child.outcome()
            scores[col] = 0 if outcome is None or outcome.winner is None else (
                (cells + 1 - state.ply) // 2)  # fmt: skip
        else:
            scores[col] = -c4solver.solve(child)
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--agent", default="perfect")
    ap.add_argument("--time", type=float, default=0.9)
    ap.add_argument("--oracle", choices=("bitbully", "solver"), default="bitbully")
    args = ap.parse_args()
    oracle = args.oracle
    if oracle == "bitbully":
        try:
            import bitbully  # noqa: F401
        except ImportError:
            print("bitbully missing: using our own solver as the oracle", file=sys.stderr)
            oracle = "solver"

    spec, budget = registry.resolve(f"{args.agent}:time={args.time}", "connect4")
    agent = registry.build(spec, "connect4")
    rng = random.Random(args.seed)
    warm = Connect4State.from_moves("4444")
    agent.choose(warm, budget, rng)  # compile / load the numba cache outside the timings

    states = positions(args.n, args.seed)
    kept = relevant = kept_relevant = 0
    times: list[float] = []
    buckets: dict[str, list[int]] = {}
    misses: list[str] = []
    for i, state in enumerate(states):
        scores = oracle_scores(state, oracle)
        best = max(scores.values())
        t0 = time.perf_counter()
        decision = agent.choose(state, budget, rng)
        times.append(time.perf_counter() - t0)
        ok = sign(scores[decision.move]) == sign(best)
        kept += ok
        trivial = best < 0 or all(sign(v) == sign(best) for v in scores.values())
        if not trivial:
            relevant += 1
            kept_relevant += ok
        lo = (state.ply - 4) // 5 * 5 + 4
        b = buckets.setdefault(f"{lo:2d}-{min(lo + 4, 30):2d}", [0, 0])
        b[0] += ok
        b[1] += 1
        if not ok:
            misses.append(
                f"{state.to_notation()} best={best} played={decision.move + 1} "
                f"({scores[decision.move]}) info={decision.info.get('reason')}"
            )
        if (i + 1) % 50 == 0:
            print(f"... {i + 1}/{len(states)}: kept {kept}/{i + 1}", file=sys.stderr)

    n = len(states)
    lost_all = sum(
        1 for s in states if max(oracle_scores(s, oracle).values()) < 0
    ) if oracle == "bitbully" else None  # fmt: skip
    times.sort()
    print(f"agent {args.agent} time={args.time}  oracle={oracle}  positions={n} seed={args.seed}")
    print(f"keeps the outcome: {kept}/{n} = {kept / n:.1%} (all positions)")
    if lost_all is not None:
        excl = n - lost_all
        kept_excl = kept - lost_all  # every move of a lost position keeps the loss
        print(f"  excluding {lost_all} lost positions: {kept_excl}/{excl} = {kept_excl / excl:.1%}")
    print(
        f"  positions where a move could lose the outcome: {kept_relevant}/{relevant} = "
        f"{kept_relevant / max(relevant, 1):.1%}"
    )
    for key in sorted(buckets):
        ok_b, n_b = buckets[key]
        print(f"  plies {key}: {ok_b}/{n_b} = {ok_b / n_b:.1%}")
    p50 = statistics.median(times)
    p95 = percentile(times, 0.95)
    print(f"move time: p50 {p50:.3f} s, p95 {p95:.3f} s, max {times[-1]:.3f} s")
    for line in misses[:20]:
        print("  miss:", line)
    print(load())


if __name__ == "__main__":
    main()
