"""How often does a Connect Four agent keep the game-theoretic outcome? (the `expert` target)

Positions: N random playouts of 4-30 plies from the empty 7x6 board (seeded; finished games are
skipped). Oracle: the exact score of every move, from the PyPI package `bitbully` (a C++ solver
with an opening book, AGPL: run as a separate process of the Python given by --oracle, through
`oracle_bitbully.py`; never imported) or, without --oracle, our own solver.

A move "keeps the outcome" when the sign of its exact score equals the sign of the best move's.
Reported: the share over all positions, the share excluding lost positions where every move
keeps the loss (they cannot be got wrong), per ply bucket, the share of moves of the best exact
score (the fastest win, the longest defence), and the agent's p50/p95/max time.

    python -m benchmarks.strength.c4_expert --n 1000 --oracle /tmp/bbenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.measure import load, percentile, sign
from engine.agents import registry
from engine.agents.connect4 import solver as c4solver
from engine.games.connect4 import Connect4State

HERE = Path(__file__).parent


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


def oracle_scores(states: list[Connect4State], python: str | None) -> list[dict[int, int]]:
    """Exact score of each legal move of each position, from the mover's point of view: by
    bitbully in a separate process of `python` (`oracle_bitbully.py`), else by our solver."""
    if python is not None:
        done = subprocess.run(
            [python, str(HERE / "oracle_bitbully.py")],
            input="".join(f"{s.to_notation()}\n" for s in states),
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        return [{int(c) - 1: int(v) for c, v in row["scores"].items()} for row in rows]
    out = []
    for state in states:
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
        out.append(scores)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--agent", default="perfect")
    ap.add_argument("--time", type=float, default=0.9)
    ap.add_argument("--oracle", help="a Python with bitbully installed (else our solver)")
    args = ap.parse_args()
    oracle = "bitbully" if args.oracle else "solver"

    spec, budget = registry.resolve(f"{args.agent}:time={args.time}", "connect4")
    agent = registry.build(spec, "connect4")
    rng = random.Random(args.seed)
    warm = Connect4State.from_moves("4444")
    agent.choose(warm, budget, rng)  # compile / load the numba cache outside the timings

    states = positions(args.n, args.seed)
    all_scores = oracle_scores(states, args.oracle)
    kept = relevant = kept_relevant = fastest = 0
    times: list[float] = []
    buckets: dict[str, list[int]] = {}
    misses: list[str] = []
    for i, (state, scores) in enumerate(zip(states, all_scores, strict=True)):
        best = max(scores.values())
        t0 = time.perf_counter()
        decision = agent.choose(state, budget, rng)
        times.append(time.perf_counter() - t0)
        ok = sign(scores[decision.move]) == sign(best)
        kept += ok
        fastest += scores[decision.move] == best
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
    lost_all = sum(1 for scores in all_scores if max(scores.values()) < 0)
    times.sort()
    print(f"agent {args.agent} time={args.time}  oracle={oracle}  positions={n} seed={args.seed}")
    print(f"keeps the outcome: {kept}/{n} = {kept / n:.1%} (all positions)")
    excl = n - lost_all
    kept_excl = kept - lost_all  # every move of a lost position keeps the loss
    print(f"  excluding {lost_all} lost positions: {kept_excl}/{excl} = {kept_excl / excl:.1%}")
    print(f"plays the best score (fastest win, longest defence): {fastest}/{n} = {fastest / n:.1%}")
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
