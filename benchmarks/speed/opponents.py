"""Move times of every curated opponent (`engine.agents.opponents`) in both games.

    python -m benchmarks.speed.opponents [--positions N] [--seed S]

Each opponent is built once, in this process, and plays its real budget on the same N random
positions of its game (random playouts of various lengths, finished games excluded) after the
kernels are warmed (`engine.warm.warm_up`). Prints mean, p95 and max per opponent; exits 1 if
any p95 exceeds 1.0 s or any max exceeds 1.5 s (the promise the curated budgets make).
Run it on an otherwise idle machine: the figures are wall-clock times.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from benchmarks.measure import load, percentile
from engine.agents import opponents, registry
from engine.agents.base import Budget
from engine.games import new_game
from engine.games.base import GameState
from engine.warm import warm_up

P95_MAX, MAX_MAX = 1.0, 1.5
#: The longest random playout before a measured position (a full board is 42 / 60 moves).
MAX_PLIES = {"connect4": 36, "othello": 56}


def positions(game: str, n: int, seed: int) -> list[GameState]:
    """n positions from random playouts of 0..MAX_PLIES plies, spread evenly over the lengths."""
    rng = random.Random(f"opponent-speed:{game}:{seed}")
    out: list[GameState] = []
    for i in range(n):
        plies = round(i * MAX_PLIES[game] / max(1, n - 1))
        state = new_game(game)
        for _ in range(plies):
            nxt = state.play(rng.choice(state.legal_moves()))
            if nxt.is_over():
                break
            state = nxt
        out.append(state)
    return out


def budget_text(b: Budget) -> str:
    parts = []
    if b.depth is not None:
        parts.append(f"depth {b.depth}")
    if b.nodes is not None:
        parts.append(f"{b.nodes:,} nodes")
    if b.time is not None:
        parts.append(f"{b.time:g} s")
    return ", ".join(parts) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--positions", type=int, default=40, help="positions per game")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warm_up()
    failed: list[str] = []
    header = f"{'game':<9} {'opponent':<15} {'spec':<32} {'budget':<20} "
    print(header + f"{'mean ms':>8} {'p95 ms':>8} {'max ms':>8}")
    print("-" * (len(header) + 26))
    for game in registry.GAMES:
        states = positions(game, args.positions, args.seed)
        for o in opponents.opponents(game):
            agent = registry.build(o.spec, game)
            agent.choose(states[-1], o.budget, random.Random(0))  # this agent's own first call
            times: list[float] = []
            for i, state in enumerate(states):
                t0 = time.perf_counter()
                agent.choose(state, o.budget, random.Random(f"{args.seed}:{i}"))
                times.append(time.perf_counter() - t0)
            mean, q95, top = sum(times) / len(times), percentile(times, 0.95), max(times)
            flag = ""
            if q95 > P95_MAX or top > MAX_MAX:
                failed.append(f"{game} {o.name}")
                flag = "  <-- too slow"
            print(
                f"{game:<9} {o.name:<15} {o.spec.label():<32} {budget_text(o.budget):<20} "
                f"{1e3 * mean:>8.1f} {1e3 * q95:>8.1f} {1e3 * top:>8.1f}{flag}",
                flush=True,
            )
    print(f"\nmilliseconds per move over {args.positions} positions per game (seed {args.seed})")
    print(load())
    if failed:
        print(f"too slow (p95 > {P95_MAX} s or max > {MAX_MAX} s): {', '.join(failed)}")
        return 1
    print(f"every opponent: p95 <= {P95_MAX} s and max <= {MAX_MAX} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
