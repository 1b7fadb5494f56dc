"""The curve that turns an Othello disc value into a win chance, fitted on the bot's own games.

    python -m tools.winfit --out PATH [--games 60] [--players medium,hard,expert]
        [--move-seconds 0.1] [--budget SECONDS] [--workers 2] [--seed 1] [--refit JSON]

Self-play games between the bot's levels (each side a player drawn from `--players`, two random
opening plies, each move at most `--move-seconds`), each analysed as /analyse does
(`engine.analysis.analyse`). Every position the analysis valued gives a sample: its ply, the
value in discs for the side to move (the best move's, exact or a search's estimate) and that
side's result (win 1, draw 0.5, loss 0). The slope k of P(v) = 1 / (1 + exp(-k v)) is the one
that makes the results most likely (Newton's method on the log-likelihood): over all positions
(`engine/agents/othello/analysis.py` ships it as `WIN_SLOPE`), and per band of 12 plies, to
show how much a disc means as the game goes on. Written to PATH as JSON with the calibration
by value band (the mean chance the curve gives against the mean result) and the samples, which
`--refit` fits again without playing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.agents import registry
from engine.agents.base import Agent, Budget, Limits
from engine.analysis import analyse
from engine.games import new_game
from engine.play import play_game, random_opening_moves
from tools.pool import as_done, pool

GAME = "othello"
#: Value bands of the calibration table, in discs for the side to move.
BANDS = (-64, -20, -10, -5, -2, 2, 5, 10, 20, 65)
#: Bands of plies (positions after so many moves, passes included) with a slope each.
PLY_BANDS = (0, 12, 24, 36, 48, 61)

Sample = tuple[int, float, float]  # ply, value in discs for the side to move, its result
#: The steepest curve: one disc is then 73% (1 / (1 + e^-1)).
MAX_SLOPE = 1.0


def player(name: str, move_seconds: float) -> tuple[Agent, Budget]:
    """An agent or level by name, its time per move capped at `move_seconds` (a level keeps its
    depth cap: medium stays 2 plies deep)."""
    spec, budget = registry.resolve(name, GAME, limits=Limits.none())
    time_cap = move_seconds if budget.time is None else min(budget.time, move_seconds)
    searches = budget.time is not None or budget.depth is not None or budget.nodes is not None
    capped = Budget(time=time_cap, depth=budget.depth) if searches else budget
    return registry.build(spec, GAME), capped


def play(names: tuple[str, str], seed: int, move_seconds: float, plies: int = 2) -> list[str]:
    """One game, `names[0]` moving first after `plies` random opening plies: its moves."""
    rng = random.Random(f"winfit:{seed}")
    start, opening = random_opening_moves(new_game(GAME), plies, rng)
    (a, budget_a), (b, budget_b) = (player(n, move_seconds) for n in names)
    record = play_game(start, (a, b), (budget_a, budget_b), rng)
    board, texts = new_game(GAME), []
    for move in [*opening, *record.moves]:
        texts.append(board.move_to_str(move))
        board = board.play(move)
    return texts


def samples(moves: list[str], budget: float | None) -> list[Sample]:
    """(ply, value in discs for the side to move, that side's result) of every valued
    position."""
    a = analyse(GAME, moves, budget=budget)
    final = new_game(GAME)
    for text in moves:
        final = final.play(final.parse_move(text))
    outcome = final.outcome()
    winner = None if outcome is None else outcome.winner
    out = []
    for r in a.moves:
        if r.value_best is None:
            continue
        result = 0.5 if winner is None else float(winner == r.player)
        out.append((r.ply, r.value_best, result))
    return out


def job(
    names: tuple[str, str], seed: int, move_seconds: float, budget: float | None
) -> tuple[list[str], list[Sample], float]:
    """One game played and analysed (in a worker): its moves, samples and analysis seconds."""
    moves = play(names, seed, move_seconds)
    t0 = time.perf_counter()
    found = samples(moves, budget)
    return moves, found, time.perf_counter() - t0


def chance(k: float, v: float) -> float:
    return 1.0 / (1.0 + math.exp(min(700.0, -k * v)))


def fit_slope(data: Sequence[tuple[float, float]], k: float = 0.1) -> float:
    """The k maximising the likelihood of the results (a result of 0.5 counts half a win), at
    most MAX_SLOPE: where the values foretell every result (exact values at the end, played
    well) the likelihood grows without end with k."""
    for _ in range(100):
        grad = hess = 0.0
        for v, y in data:
            p = chance(k, v)
            grad += (y - p) * v
            hess += p * (1 - p) * v * v
        if hess <= 1e-12:
            return MAX_SLOPE
        step = max(-0.5 * k, min(k, grad / hess))  # at most doubling or halving a step
        k += step
        if k >= MAX_SLOPE:
            return MAX_SLOPE
        if abs(step) < 1e-9:
            break
    return k


def log_loss(data: Sequence[tuple[float, float]], k: float) -> float:
    total = 0.0
    for v, y in data:
        p = min(max(chance(k, v), 1e-12), 1 - 1e-12)
        total -= y * math.log(p) + (1 - y) * math.log(1 - p)
    return total / max(1, len(data))


def calibration(data: Sequence[tuple[float, float]], k: float) -> list[dict[str, Any]]:
    """Per value band: positions, the curve's mean chance and the mean result."""
    rows = []
    for lo, hi in itertools.pairwise(BANDS):
        inside = [(v, y) for v, y in data if lo <= v < hi]
        if inside:
            rows.append(
                {
                    "discs": [lo, hi],
                    "positions": len(inside),
                    "curve": round(sum(chance(k, v) for v, _ in inside) / len(inside), 3),
                    "results": round(sum(y for _, y in inside) / len(inside), 3),
                }
            )
    return rows


def by_ply(data: Sequence[Sample]) -> list[dict[str, Any]]:
    """Per band of plies: positions, the slope fitted on them, and its calibration."""
    rows = []
    for lo, hi in itertools.pairwise(PLY_BANDS):
        pairs = [(v, y) for ply, v, y in data if lo <= ply < hi]
        if len(pairs) < 20:
            continue
        k = fit_slope(pairs)
        rows.append(
            {
                "plies": [lo, hi],
                "centre": (lo + hi - 1) / 2,
                "positions": len(pairs),
                "slope": round(k, 4),
                "log_loss": round(log_loss(pairs, k), 4),
                "calibration": calibration(pairs, k),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.winfit", description=__doc__)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--games", type=int, default=60)
    parser.add_argument("--players", default="medium,hard,expert")
    parser.add_argument("--move-seconds", type=float, default=0.1)
    parser.add_argument("--budget", type=float, default=None, help="seconds per analysis")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--refit", help="fit again the samples of an earlier run's JSON instead of playing"
    )
    args = parser.parse_args(argv)
    if args.refit:
        earlier = json.loads(Path(args.refit).read_text())
        saved = [(int(p), float(v), float(y)) for p, v, y in earlier["samples"]]
        return _write(args, saved, earlier["games"], earlier["players"])
    names = [n.strip() for n in args.players.split(",") if n.strip()]
    for name in names:
        registry.resolve(name, GAME, limits=Limits.none())  # a bad name: one line, now
    rng = random.Random(args.seed)
    jobs = [
        ((rng.choice(names), rng.choice(names)), args.seed * 100_000 + i, args.move_seconds,
         args.budget)
        for i in range(args.games)
    ]  # fmt: skip
    data: list[Sample] = []
    seconds: list[float] = []
    executor = pool(args.workers)
    try:
        for n, (_, found, spent) in enumerate(as_done(executor, job, jobs), 1):
            data += found
            seconds.append(spent)
            print(f"game {n}/{len(jobs)}: {len(found)} positions, analysed in {spent:.1f} s")
    finally:
        executor.shutdown(cancel_futures=True)
    return _write(args, data, len(jobs), names)


def _write(args: argparse.Namespace, data: list[Sample], games: int, names: list[str]) -> int:
    """Fit the slopes and write them, the calibration and the samples to `args.out`."""
    pairs = [(v, y) for _, v, y in data]
    k = fit_slope(pairs)
    report = {
        "slope": round(k, 4),
        "slopes": by_ply(data),
        "games": games,
        "positions": len(data),
        "players": names,
        "move_seconds": args.move_seconds,
        "budget": args.budget,
        "seed": args.seed,
        "log_loss": round(log_loss(pairs, k), 4),
        "calibration": calibration(pairs, k),
    }
    text = json.dumps(report, indent=2)  # the samples last, one line: thousands of them
    Path(args.out).write_text(f'{text[:-2]},\n  "samples": {json.dumps(data)}\n}}\n')
    print(f"slope {k:.4f} per disc from {len(data)} positions of {games} games")
    for row in by_ply(data):
        print(f"  plies {row['plies'][0]}-{row['plies'][1] - 1}: slope {row['slope']:.4f}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
