"""Every shipped puzzle proven again by the solvers, and what the pool holds.

Run with `python -m benchmarks.strength.puzzles [--game G] [--log F.log ...]` from the
repository root. Each puzzle of the shipped pool (`engine/puzzles/data/`) is rebuilt from its
moves and proven afresh (`engine.puzzles.verify`: the same id, answer, plies and value, and a
line that ends the game as stored), with no node budget; the share proven must be 100%. Prints,
per game, the distribution of N (Connect Four's plies to the win) or of the empty squares
(Othello), of the values and of the starting ratings, and the time of a proof (after one
proof that loads the kernels).

With `--log`, the generation logs `python -m tools puzzles` wrote (OUT.log) give how the pool
was made: games played, positions examined, why positions were turned down (the share turned
down for a second winning move or a second best move, among the positions that otherwise made
a puzzle), puzzles a minute over the runs' wall time, and the machine's load at each run's start.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

from benchmarks.measure import load, percentile, warm_up
from engine.puzzles import pool
from engine.puzzles import proof as pf
from engine.puzzles.verify import verify
from tools.puzzles import PER_GAME, read_log


def _histogram(counts: Counter[int], label: str) -> str:
    total = sum(counts.values())
    cells = ", ".join(f"{k}: {v} ({100 * v / total:.0f}%)" for k, v in sorted(counts.items()))
    return f"  {label}: {cells}"


def check_pool(game: str) -> bool:
    """Prove every shipped puzzle of `game` again; print the figures; whether all held."""
    puzzles = pool.load_pool(game)
    if puzzles:  # the kernels' compile or cache load is not a proof's time
        warm_up(lambda: verify(puzzles[0]), f"{game}: compile / cache load")
    failed: list[tuple[str, str]] = []
    times: list[float] = []
    for p in puzzles:
        t0 = time.perf_counter()
        fault = verify(p)
        times.append(time.perf_counter() - t0)
        if fault is not None:
            failed.append((p.id, fault))
    held = len(puzzles) - len(failed)
    share = 100 * held / max(1, len(puzzles))
    print(f"{game}: {held} of {len(puzzles)} shipped puzzles proven again ({share:.1f}%)")
    for pid, fault in failed[:10]:
        print(f"  FAILED {pid}: {fault}")
    if not puzzles:
        return False
    word = "N (plies to the win)" if game == "connect4" else "empty squares"
    print(_histogram(Counter(p.plies for p in puzzles), word))
    if game == "othello":
        values = [p.value for p in puzzles]
        wins = sum(v > 0 for v in values)
        print(
            f"  values (final disc margin): median {statistics.median(values):.0f}, "
            f"min {min(values)}, max {max(values)}; {wins} won, {values.count(0)} drawn, "
            f"{sum(v < 0 for v in values)} lost with best play"
        )
    ratings = [p.rating for p in puzzles]
    print(
        f"  starting ratings: min {min(ratings):.1f}, median {statistics.median(ratings):.1f}, "
        f"max {max(ratings):.1f}"
    )
    print(
        f"  a proof: median {1000 * statistics.median(times):.0f} ms, "
        f"p95 {1000 * percentile(times, 0.95):.0f} ms, max {1000 * max(times):.0f} ms"
    )
    return not failed


def summarise_log(path: Path) -> None:
    """How a generation went, from its log."""
    records = read_log(path)
    jobs = [r for r in records if "seed" in r]
    runs = [r for r in records if "run" in r]
    if not jobs:
        print(f"{path}: no jobs logged")
        return
    reasons: Counter[str] = Counter()
    for r in jobs:
        reasons.update(r["reasons"])
    found = sum(r["found"] for r in jobs)
    new = sum(r["new"] for r in jobs)
    examined = found + sum(reasons.values())
    minutes = _wall_minutes(records)
    print(f"{path}: {len(jobs)} games ({sum(r['source'] == 'db' for r in jobs)} stored ones)")
    taken = sum(r.get("taken", 0) for r in jobs)
    print(
        f"  {examined} positions examined, {found} puzzles found, {new} kept (at most "
        f"{PER_GAME} a game; {taken} more held already or on a held puzzle's line)"
    )
    shown = ", ".join(f"{k} {v} ({100 * v / examined:.1f}%)" for k, v in reasons.most_common())
    print(f"  turned down: {shown}")
    unique = reasons[pf.NOT_UNIQUE]
    print(
        f"  not unique: {unique} of the {unique + found} positions that passed every other "
        f"test ({100 * unique / max(1, unique + found):.1f}%)"
    )
    workers = sorted({r["workers"] for r in runs})
    starts = ", ".join(f"{r['load']:.1f}" for r in runs)
    ends = ", ".join(f"{r['load']:.1f}" for r in records if "end" in r)
    print(
        f"  {new / max(minutes, 1e-9):.1f} puzzles a minute over {minutes:.1f} minutes of "
        f"wall time ({workers} workers; load at the runs' starts {starts}, ends {ends or '-'})"
    )


def _wall_minutes(records: list[dict[str, object]]) -> float:
    """The wall time of the runs: from each run's start to its last record."""
    total, start, last = 0.0, None, None
    for r in records:
        if "run" in r:
            if start is not None and last is not None:
                total += last - start
            start, last = float(r["run"]), float(r["run"])  # type: ignore[arg-type]
        elif "t" in r or "end" in r:
            last = float(r.get("t", r.get("end")))  # type: ignore[arg-type]
    if start is not None and last is not None:
        total += last - start
    return total / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--game", choices=pool.GAMES, default=None, help="only this game")
    parser.add_argument(
        "--log", action="append", default=[], help="a generation log to summarise (repeat)"
    )
    args = parser.parse_args()
    print(load())
    games = [args.game] if args.game else list(pool.GAMES)
    ok = [check_pool(game) for game in games]
    for log in args.log:
        summarise_log(Path(log))
    print(load())
    if not all(ok):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
