"""Post-game analysis: time to analyse whole games, the share of unsure moves, and (Connect
Four) agreement with an independent solver on every move the analysis marks exact.

    python -m benchmarks.strength.analysis [--c4-games 50] [--othello-games 20]
        [--oracle /tmp/bbenv/bin/python]

Games are played by the bot's levels against each other (each side a level drawn at random,
two random opening plies, 50 ms a move), seeded. The analyses run one at a time in this
process with the default budgets (4.5 s Connect Four, 13.5 s Othello), after one warm-up (a
pool worker has loaded the solvers before its first job). The oracle is bitbully, run as a
separate process in its own environment (`oracle_bitbully.py` here; AGPL, so it is a
benchmark tool only): for each move the analysis proves, the oracle's outcome before and
after and its verdict must be the same.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import time
from pathlib import Path

from benchmarks.measure import load, percentile, sign
from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4.analysis import verdict_of
from engine.analysis import OUTCOMES, Analysis, analyse
from engine.games import new_game

HERE = Path(__file__).resolve().parent


def play(game: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    levels = list(registry.LEVELS[game])
    names = [rng.choice(levels), rng.choice(levels)]
    agents = [registry.build(registry.LEVELS[game][n].spec, game) for n in names]
    state, moves = new_game(game), list[str]()
    while not state.is_over():
        if len(moves) < 2:
            move = rng.choice(state.legal_moves())
        else:
            level = registry.LEVELS[game][names[state.to_move()]]
            budget = Budget(time=0.05, depth=level.budget.depth)
            move = agents[state.to_move()].choose(state, budget, rng).move
        moves.append(state.move_to_str(move))
        state = state.play(move)
    return moves


def summary(name: str, times: list[float], unsure: int, total: int) -> None:
    times = sorted(times)
    p95 = percentile(times, 0.95)
    print(
        f"{name}: {len(times)} games, {total} moves; analysis time "
        f"mean {statistics.mean(times):.2f} s, p95 {p95:.2f} s, max {times[-1]:.2f} s; "
        f"unsure {unsure} moves "
        f"({100 * unsure / max(1, total):.1f}%)"
    )


def oracle_check(python: str, games: list[tuple[list[str], Analysis]]) -> None:
    wanted = sorted({"".join(moves[:i]) for moves, a in games for i in range(len(moves))})
    t0 = time.perf_counter()
    done = subprocess.run(
        [python, str(HERE / "oracle_bitbully.py")],
        input="\n".join(wanted) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    scores = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        scores[row["moves"]] = {int(c): s for c, s in row["scores"].items()}
    checked = agree = 0
    wrong = []
    for moves, a in games:
        for r in a.moves:
            if r.verdict == "unsure":
                continue
            here = scores["".join(moves[: r.ply])]
            best, got = max(here.values()), here[int(r.move)]
            verdict = verdict_of(sign(best), sign(got), best, got, len(here))
            same = (
                verdict == r.verdict
                and r.outcome_before in (None, OUTCOMES[sign(best)])
                and r.outcome_after in (None, OUTCOMES[sign(got)])
            )
            checked += 1
            agree += same
            if not same:
                wrong.append((" ".join(moves), r.ply, r.verdict, verdict))
    print(
        f"oracle (bitbully, {len(wanted)} positions in {time.perf_counter() - t0:.0f} s): "
        f"{agree} of {checked} exact verdicts agree ({100 * agree / max(1, checked):.1f}%)"
    )
    for w in wrong[:10]:
        print("  disagrees:", w)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--c4-games", type=int, default=50)
    parser.add_argument("--othello-games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--oracle", help="a Python with bitbully installed")
    args = parser.parse_args()
    for game, count in (("connect4", args.c4_games), ("othello", args.othello_games)):
        if not count:
            continue
        analyse(game, play(game, 0)[:6], budget=0.5)  # load the solvers, as a worker has
        times, unsure, total, done = [], 0, 0, []
        for seed in range(args.seed, args.seed + count):
            moves = play(game, seed)
            t0 = time.perf_counter()
            a = analyse(game, moves)
            times.append(time.perf_counter() - t0)
            unsure += a.unsure
            total += len(moves)
            done.append((moves, a))
        summary(game, times, unsure, total)
        verdicts = [r.verdict for _, a in done for r in a.moves]
        print("  verdicts:", {v: verdicts.count(v) for v in sorted(set(verdicts))})
        exact = sum(r.exact for _, a in done for r in a.moves)
        print(f"  proven by a solver: {exact} of {total} moves ({100 * exact / total:.1f}%)")
        if game == "connect4" and args.oracle:
            oracle_check(args.oracle, done)
    print(load())


if __name__ == "__main__":
    main()
