"""Othello analysis by player type: the accuracy the coach gives each kind of player (it must rise
with strength, a random mover low), and the time an analysis takes.

    python -m benchmarks.strength.othello_accuracy [--games 20] [--opponent NAME]
        [--move-seconds 1] [--budget SECONDS] [--workers 2] [--seed 1]

Six player types (random, greedy-first, easy, medium, hard, expert) each play `--games` games.
By default every type meets every type: game i pairs type i % 6 with type (i % 6 + i // 6) % 6
(itself too), and every game counts for both players (so 3 x `--games` games). With
`--opponent` each type plays its games against that one player, colours alternating, and only
the type's side counts (6 x `--games` games). A second table counts only the games against
medium, hard and expert: games between the weakest players stay close for longer, and there
a move costs more win chance. Two random opening plies (counted for the player who moves then), each
move at most `--move-seconds` (a level keeps its depth cap and its own time if shorter). Each
game is analysed as /analyse does, with the analysis budget unless `--budget` says otherwise,
in `--workers` processes; the load average is printed with the times.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.measure import load, percentile
from engine.analysis import analyse
from tools.pool import as_done, pool
from tools.winfit import play

TYPES = ("random", "greedy-first", "easy", "medium", "hard", "expert")
#: The second table counts only the games against these (the levels that search).
STRONG = ("medium", "hard", "expert")


def job(
    names: tuple[str, str], seed: int, move_seconds: float, budget: float | None
) -> tuple[tuple[str, str], list[float | None], float, int, int]:
    """One game played and analysed: the names, each seat's accuracy, the analysis seconds,
    its unsure moves and its moves."""
    moves = play(names, seed, move_seconds)
    t0 = time.perf_counter()
    a = analyse("othello", moves, budget=budget)
    seconds = time.perf_counter() - t0
    return names, [s.accuracy for s in a.players], seconds, a.unsure, len(moves)


def warm() -> None:
    """Load the kernels before the first timed analysis (a pool worker has done so)."""
    analyse("othello", play(("random", "random"), 0, 0.01)[:30], budget=1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=20, help="games per player type")
    parser.add_argument("--opponent", help="one opponent for every type (default: each other)")
    parser.add_argument("--move-seconds", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.opponent:
        pairs = [
            (name, args.opponent) if i % 2 == 0 else (args.opponent, name)
            for i in range(args.games)
            for name in TYPES
        ]
    else:
        pairs = [
            (TYPES[i % 6], TYPES[(i % 6 + i // 6) % 6]) for i in range(len(TYPES) * args.games // 2)
        ]
    count = len(pairs)
    jobs = [
        (names, args.seed * 100_000 + i, args.move_seconds, args.budget)
        for i, names in enumerate(pairs)
    ]
    accuracy: dict[str, list[float]] = {t: [] for t in TYPES}
    strong: dict[str, list[float]] = {t: [] for t in TYPES}
    times: list[float] = []
    unsure = moves = 0
    against = f"against {args.opponent}" if args.opponent else "between the types"
    print(f"{count} games {against}, {args.workers} workers; start: {load()}", flush=True)
    executor = pool(args.workers, warm)
    try:
        for n, (names, accs, seconds, u, m) in enumerate(as_done(executor, job, jobs), 1):
            for seat in _counted(names, args.opponent):
                acc = accs[seat]
                if acc is not None:
                    accuracy[names[seat]].append(acc)
                    if names[1 - seat] in STRONG:
                        strong[names[seat]].append(acc)
            times.append(seconds)
            unsure, moves = unsure + u, moves + m
            shown = " ".join("-" if a is None else f"{100 * a:.0f}%" for a in accs)
            print(
                f"game {n}/{count}: {names[0]} v {names[1]}: {shown}, {seconds:.1f} s", flush=True
            )
    finally:
        executor.shutdown(cancel_futures=True)
    _table("all games", accuracy)
    _table(f"games against {', '.join(STRONG)} only", strong)
    print(
        f"\nanalysis time: mean {statistics.mean(times):.2f} s, "
        f"p95 {percentile(times, 0.95):.2f} s, "
        f"max {max(times):.2f} s over {len(times)} games; unsure {unsure} of {moves} moves"
    )
    print(f"end: {load()}")


def _table(title: str, accuracy: dict[str, list[float]]) -> None:
    print(
        f"\n{title}:\n| player | games | accuracy mean | median | min | max |\n"
        "| --- | --- | --- | --- | --- | --- |"
    )
    for name in TYPES:
        got = [100 * a for a in accuracy[name]]
        if got:
            print(
                f"| {name} | {len(got)} | {statistics.mean(got):.1f}% | "
                f"{statistics.median(got):.1f}% | {min(got):.0f}% | {max(got):.0f}% |"
            )


def _counted(names: tuple[str, str], opponent: str | None) -> list[int]:
    """The seats whose accuracy counts: both, or the type's against the one opponent (in a
    game of the opponent against itself, the first)."""
    if not opponent:
        return [0, 1]
    return [0 if names[1] == opponent else 1]


if __name__ == "__main__":
    main()
