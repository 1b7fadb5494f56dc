"""How often the Othello expert plays a best move in the endgame, and how long its moves take.

Run with `python -m benchmarks.strength.othello_endgame [--n 300] [--seed 2026]` from the
repository root. Positions come from seeded uniformly random games stopped at 4-20 empty squares
(the number of empties drawn uniformly; games that are over or where the side to move must pass
are skipped). The expert level (`registry.LEVELS["othello"]["expert"]`, its own budget) chooses a
move in each; the oracle is the repository's exact solver without a time limit: the position's
exact score, then the score of the expert's move (a move is best when they are equal).

Prints the best-move rate (overall and by empties), how many moves were solved exactly inside the
budget, the move times (median, p95, max; one position at a time, in this one process) and the
agent's nodes per second.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from types import SimpleNamespace

from benchmarks.measure import load, percentile
from engine.agents import registry
from engine.agents.othello.search import OthelloSearch
from engine.games.othello import PASS, OthelloState


def positions(n: int, seed: int, lo: int = 4, hi: int = 20) -> list[OthelloState]:
    rng = random.Random(seed)
    out: list[OthelloState] = []
    while len(out) < n:
        target = rng.randint(lo, hi)
        state = OthelloState.new()
        while not state.is_over() and 64 - sum(state.disc_counts()) > target:
            state = state.play(rng.choice(state.legal_moves()))
        if state.is_over() or 64 - sum(state.disc_counts()) != target:
            continue
        if state.legal_moves() == [PASS]:
            continue
        out.append(state)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--level", default="expert", help="a level, or any agent spec (expert:depth=12)"
    )
    parser.add_argument(
        "--endgame-empties", type=int, default=None, help="try the exact solve from this many"
    )
    args = parser.parse_args()

    spec, budget = registry.resolve(args.level, "othello")
    level = SimpleNamespace(spec=spec, budget=budget)
    agent = registry.build(level.spec, "othello")
    if args.endgame_empties is not None:
        agent.endgame_empties = args.endgame_empties  # type: ignore[attr-defined]
    oracle = OthelloSearch(tt_bits=12, eg_bits=22)
    states = positions(args.n, args.seed)
    # warm up: load (or compile) every kernel outside the timed moves
    agent.choose(states[0], level.budget, random.Random(0))

    by_empties: dict[int, list[int]] = {}
    times: list[float] = []
    exact = 0
    nodes = 0
    worst: list[tuple[float, str]] = []
    for i, state in enumerate(states):
        empties = 64 - sum(state.disc_counts())
        t0 = time.perf_counter()
        d = agent.choose(state, level.budget, random.Random(i))
        dt = time.perf_counter() - t0
        times.append(dt)
        nodes += d.nodes
        exact += bool(d.info.get("exact"))
        oracle.reset(None, None)
        best, _ = oracle.solve(state.me, state.opp)
        child = state.play(d.move)
        if child.is_over():
            a, b = child.disc_counts()
            got = (a - b) if state.side == 0 else (b - a)
            got += (64 - a - b) * (1 if got > 0 else -1 if got < 0 else 0)
        else:
            oracle.reset(None, None)
            score, _ = oracle.solve(child.me, child.opp)
            got = -score  # the opponent is to move in `child` (a pass is a move)
        ok = got == best
        by_empties.setdefault(empties, []).append(ok)
        worst.append((dt, state.to_notation()))
        if not ok:
            print(
                f"  not best: {state.to_notation()} played {state.move_to_str(d.move)} "
                f"({got:+d}, best {best:+d}, exact={d.info.get('exact')}, {dt:.2f} s)",
                flush=True,
            )
    total = sum(len(v) for v in by_empties.values())
    good = sum(sum(v) for v in by_empties.values())
    print(f"{args.level}: best move in {good}/{total} = {100 * good / total:.1f}%")
    print(
        "  by empties: "
        + ", ".join(f"{e}: {sum(v)}/{len(v)}" for e, v in sorted(by_empties.items()) if len(v) > 0)
    )
    print(f"  solved exactly within the budget: {exact}/{total}")
    print(
        f"  move time: median {statistics.median(times):.3f} s, p95 {percentile(times, 0.95):.3f}"
        f" s, max {max(times):.3f} s (budget {level.budget.time} s)"
    )
    print(f"  agent speed: {nodes / sum(times) / 1e6:.2f} M nodes/s over {sum(times):.1f} s")
    worst.sort(reverse=True)
    for dt, notation in worst[:3]:
        print(f"  slowest: {dt:.3f} s {notation}")
    print(load())


if __name__ == "__main__":
    main()
