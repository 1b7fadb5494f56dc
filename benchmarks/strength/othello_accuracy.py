"""Othello analysis by player type: the accuracy the coach gives each kind of player (it must rise
with strength, a random mover low), how sure that order is, and the time an analysis takes.

    python -m benchmarks.strength.othello_accuracy [--rounds 2] [--seeds 1] [--seed 1]
        [--move-seconds 1] [--budget SECONDS] [--workers 2] [--save FILE] [--load FILE ...]

Six player types (random, greedy-first, easy, medium, hard, expert). A round is the 36 games of
every type against every type, itself too, with either colour: each game counts for both
players, so in a round every type has 12 games, two against each type. Two random opening
plies, which count for no one (the players did not choose them; /analyse counts every move),
each move at most `--move-seconds` (a level keeps its depth cap and its own time if shorter).
Each game is analysed as /analyse does, with the analysis budget unless `--budget` says
otherwise, in `--workers` processes; the load average is printed with the times.

`--seeds N` plays the rounds N times with seeds `--seed`, `--seed` + 1, ...: the table gives per
type its strength, the score of its games against the other types in the same games (win 1,
draw 1/2) with a 90% bootstrap interval, then the mean accuracy over every game, the range of
the seeds' means, and a 90% bootstrap interval of the mean (games drawn again with
replacement), and says in how many of the bootstrap draws each type's mean is above the mean
of the type before it; the rows go from the lowest score to the highest, so the accuracy
should rise down the table. A second table gives each type's mean accuracy against each type.

`--save FILE` writes every game (players, seed, moves, analysis) as a line of JSON; `--load
FILE ...` plays nothing and judges the saved games again with today's accuracy rule (the disc
values as saved, the win chance and accuracy as the code now computes them), so a change of
the rule is measured on the same games in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.measure import load, percentile
from engine.agents.othello.analysis import win_chance
from engine.analysis import Analysis, Side, analyse, judge
from engine.games import new_game
from tools.pool import as_done, pool
from tools.winfit import play

TYPES = ("random", "greedy-first", "easy", "medium", "hard", "expert")
#: Bootstrap draws for the intervals and the order's share.
DRAWS = 2000
#: The random plies every game opens with (`tools.winfit.play`), not the players' own.
OPENING = 2

Game = dict[str, Any]  # names, seed, moves, seconds, analysis (Analysis.to_json)


def job(names: tuple[str, str], seed: int, move_seconds: float, budget: float | None) -> Game:
    """One game played and analysed."""
    moves = play(names, seed, move_seconds)
    t0 = time.perf_counter()
    a = analyse("othello", moves, budget=budget)
    seconds = time.perf_counter() - t0
    return {
        "names": list(names),
        "seed": seed,
        "moves": moves,
        "seconds": seconds,
        "analysis": a.to_json(),
    }


def warm() -> None:
    """Load the kernels before the first timed analysis (a pool worker has done so)."""
    analyse("othello", play(("random", "random"), 0, 0.01)[:30], budget=1.0)


def rounds(count: int, seed: int) -> list[tuple[tuple[str, str], int]]:
    """`count` rounds of every ordered pair of types, each game with a seed of its own."""
    pairs = [(a, b) for a in TYPES for b in TYPES]
    return [(pair, seed * 100_000 + i) for i, pair in enumerate(pairs * count)]


def rejudged(game: Game) -> Analysis:
    """A saved game's analysis judged again by today's rule from its disc values, the opening
    plies left unjudged."""
    a = Analysis.from_json(game["analysis"])
    for r in a.moves:
        r.accuracy = r.chance_before = r.chance_after = None
        if r.ply >= OPENING and r.value_best is not None and r.value_played is not None:
            r.chance_before, r.chance_after = win_chance(r.value_best), win_chance(r.value_played)
    a.players = [Side(), Side()]
    judge(a)
    return a


def accuracies(games: Sequence[Game]) -> dict[str, list[tuple[int, str, float]]]:
    """Per type its (seed, opponent, accuracy) of every game it has an accuracy in."""
    out: dict[str, list[tuple[int, str, float]]] = {t: [] for t in TYPES}
    for game in games:
        a = rejudged(game)
        names = game["names"]
        for seat, side in enumerate(a.players):
            if side.accuracy is not None:
                out[names[seat]].append(
                    (game["seed"] // 100_000, names[1 - seat], 100 * side.accuracy)
                )
    return out


def bootstrap(values: dict[str, list[float]], draws: int, seed: int = 0) -> dict[str, list[float]]:
    """Per type the means of `draws` resamples of its accuracies."""
    rng = random.Random(seed)
    return {
        t: [statistics.fmean(rng.choices(v, k=len(v))) for _ in range(draws)]
        for t, v in values.items()
        if v
    }


def scores(games: Sequence[Game]) -> dict[str, list[float]]:
    """Per type its result (1 won, 1/2 drawn, 0 lost) in every game against another type: its
    strength in these games (a type against itself always scores 1/2, so those games are left
    out)."""
    out: dict[str, list[float]] = {t: [] for t in TYPES}
    for game in games:
        names = game["names"]
        if names[0] == names[1]:
            continue
        state = new_game("othello")
        for text in game["moves"]:
            state = state.play(state.parse_move(text))
        outcome = state.outcome()
        winner = None if outcome is None else outcome.winner
        for seat in (0, 1):  # seat 0 moves first after the opening plies: black
            out[names[seat]].append(0.5 if winner is None else float(winner == seat))
    return out


def interval(draws: list[float]) -> tuple[float, float]:
    """The 90% interval of bootstrap means."""
    ordered = sorted(draws)
    return ordered[int(0.05 * len(ordered))], ordered[int(0.95 * len(ordered)) - 1]


def table(games: Sequence[Game]) -> list[str]:
    """The accuracy table, weakest type first: per type its score against the others (its
    strength) with a bootstrap interval, the games, the accuracy mean, the seeds' range, the
    bootstrap interval, and the share of draws in which it is above the type before it."""
    per = accuracies(games)
    values = {t: [acc for _, _, acc in per[t]] for t in TYPES}
    means = bootstrap(values, DRAWS)
    results = scores(games)
    strength = bootstrap(results, DRAWS, seed=1)
    order = sorted(
        (t for t in TYPES if values[t]),
        key=lambda t: statistics.fmean(results[t]) if results[t] else 0.0,
    )
    lines = [
        "| player | score against the others (90% interval) | games | accuracy mean | "
        "seeds' means | 90% interval | above the one before |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    rising = [True] * DRAWS
    for i, name in enumerate(order):
        seeds = sorted({s for s, _, _ in per[name]})
        by_seed = [statistics.fmean(a for s, _, a in per[name] if s == k) for k in seeds]
        low, high = interval(means[name])
        above = "-"
        if i:
            wins = [m > p for m, p in zip(means[name], means[order[i - 1]], strict=True)]
            rising = [r and w for r, w in zip(rising, wins, strict=True)]
            above = f"{100 * sum(wins) / DRAWS:.0f}%"
        score = "-"
        if results[name]:
            s_low, s_high = interval(strength[name])
            score = (
                f"{100 * statistics.fmean(results[name]):.0f}% "
                f"({100 * s_low:.0f}-{100 * s_high:.0f}%, {len(results[name])} games)"
            )
        lines.append(
            f"| {name} | {score} | {len(values[name])} | {statistics.fmean(values[name]):.1f}% | "
            f"{min(by_seed):.1f}-{max(by_seed):.1f}% | {low:.1f}-{high:.1f}% | {above} |"
        )
    lines.append(
        f"\nthe means rise with the score, row by row, in {100 * sum(rising) / DRAWS:.0f}% of draws"
    )
    return [*lines, "", *by_opponent(per)]


def by_opponent(per: dict[str, list[tuple[int, str, float]]]) -> list[str]:
    """The mean accuracy of each type (rows) against each type (columns)."""
    lines = [
        "| player \\ against | " + " | ".join(TYPES) + " |",
        "| --- |" + " --- |" * len(TYPES),
    ]
    for name in TYPES:
        cells = []
        for other in TYPES:
            got = [a for _, o, a in per[name] if o == other]
            cells.append(f"{statistics.fmean(got):.0f}% ({len(got)})" if got else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def played(args: argparse.Namespace) -> Iterator[Game]:
    """The games of the rounds, as they finish, with a line each and the load."""
    jobs = [
        (names, seed, args.move_seconds, args.budget)
        for k in range(args.seeds)
        for names, seed in rounds(args.rounds, args.seed + k)
    ]
    print(f"{len(jobs)} games, {args.workers} workers; start: {load()}", flush=True)
    executor = pool(args.workers, warm)
    try:
        for n, game in enumerate(as_done(executor, job, jobs), 1):
            shown = " ".join(
                "-" if s["accuracy"] is None else f"{100 * s['accuracy']:.0f}%"
                for s in game["analysis"]["players"]
            )
            names = game["names"]
            print(
                f"game {n}/{len(jobs)}: {names[0]} v {names[1]}: {shown}, {game['seconds']:.1f} s",
                flush=True,
            )
            yield game
    finally:
        executor.shutdown(cancel_futures=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 36 games per seed")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--move-seconds", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--save", help="write every game as a line of JSON")
    parser.add_argument("--load", nargs="+", help="judge saved games again instead of playing")
    args = parser.parse_args()
    games: list[Game] = []
    if args.load:
        for path in args.load:
            games += [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    else:
        with open(args.save or os.devnull, "a") as out:
            for game in played(args):
                games.append(game)
                out.write(json.dumps(game) + "\n")
                out.flush()
    print(f"\n{len(games)} games:")
    print("\n".join(table(games)))
    times = [float(g["seconds"]) for g in games]
    moves = sum(len(g["moves"]) for g in games)
    unsure = sum(m["verdict"] == "unsure" for g in games for m in g["analysis"]["moves"])
    print(
        f"\nanalysis time: mean {statistics.fmean(times):.2f} s, "
        f"p95 {percentile(times, 0.95):.2f} s, max {max(times):.2f} s over {len(times)} games; "
        f"unsure {unsure} of {moves} moves"
    )
    if not args.load:
        print(f"end: {load()}")


if __name__ == "__main__":
    main()
