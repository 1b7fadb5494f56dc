"""A match of the Othello expert against Edax 4.6, run as a separate program for each of its
moves; the expert's score and its move times.

Run with `python -m benchmarks.strength.othello_edax --edax BINARY --edax-eval FILE [--level 20]
[--games 10] [--seed 1] [--agent expert] [--opening-plies 4]` from the repository root. Games
come in pairs: one seeded random opening of `--opening-plies` plies, played once with each side.
The agent (a level, or any agent spec) plays with its own budget in this process; Edax gets
each position as a problem file (`-solve`, one thread, no book, level `--level`, the evaluation
weights `--edax-eval`) and its principal variation's first move is played. Prints each game's
disc counts, the agent's score (a win 1, a draw 1/2), and the agent's move times (mean, p95,
max, wall clock, one move at a time). The bot never imports or ships Edax: this only measures
against it.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.measure import load, percentile
from benchmarks.speed.othello_search import board_line
from engine.agents import registry
from engine.agents.base import Agent, Budget
from engine.games.othello import PASS, OthelloState

#: A row of Edax's result table: "  1|   20   +02   0:01.234   123456   100000   e6 f4 ..."
_ROW = re.compile(r"^\s*\d+\|")


def opening(rng: random.Random, plies: int) -> OthelloState:
    """A position after `plies` random plies that is not over."""
    while True:
        state = OthelloState.new()
        for _ in range(plies):
            state = state.play(rng.choice(state.legal_moves()))
            if state.is_over():
                break
        if not state.is_over():
            return state


def edax_move(binary: str, weights: str, level: int, state: OthelloState) -> int:
    """Edax's move in `state` (its principal variation's first move)."""
    with tempfile.TemporaryDirectory() as tmp:
        problem = Path(tmp) / "position.obf"
        problem.write_text(board_line(state) + "\n")
        command = [str(Path(binary).resolve()), "-solve", str(problem), "-n", "1"]
        command += ["-l", str(level), "-eval-file", str(Path(weights).resolve())]
        command += ["-book-usage", "off", "-h", "22"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp, check=True)
    rows = [line for line in done.stdout.splitlines() if _ROW.match(line)]
    if not rows:
        raise RuntimeError(f"no move from Edax: {done.stdout[-500:]} {done.stderr[-500:]}")
    # the columns: number | depth | score | time | nodes | [speed] | principal variation
    words = rows[-1].split("|")[-1].split()
    moves = [w for w in words if re.fullmatch(r"[a-hA-H][1-8]|[Pp][Ss]", w)]
    if not moves or moves[0].lower() == "ps":
        return PASS
    return state.parse_move(moves[0])


def play_game(
    start: OthelloState, agent: Agent, budget: Budget, agent_side: int, edax: tuple[str, str, int],
    seed: int, times: list[float],
) -> OthelloState:  # fmt: skip
    """The game from `start`, the agent playing side `agent_side` (0 black); returns the end."""
    state = start
    rng = random.Random(seed)
    while not state.is_over():
        if state.legal_moves() == [PASS]:
            state = state.play(PASS)
        elif state.to_move() == agent_side:
            t0 = time.perf_counter()
            move = agent.choose(state, budget, rng).move
            times.append(time.perf_counter() - t0)
            state = state.play(move)
        else:
            move = edax_move(*edax, state)
            if move not in state.legal_moves():
                raise RuntimeError(f"Edax played {move} in {state.to_notation()}")
            state = state.play(move)
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edax", required=True, help="an Edax 4.6 binary")
    parser.add_argument("--edax-eval", required=True, help="the evaluation weights Edax reads")
    parser.add_argument("--level", type=int, default=20, help="Edax's level")
    parser.add_argument("--games", type=int, default=10, help="games, in pairs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agent", default="expert", help="a level, or any agent spec")
    parser.add_argument("--opening-plies", type=int, default=4)
    args = parser.parse_args()
    spec, budget = registry.resolve(args.agent, "othello")
    agent = registry.build(spec, "othello")
    rng = random.Random(args.seed)
    edax = (args.edax, args.edax_eval, args.level)
    agent.choose(OthelloState.new(), budget, random.Random(0))  # kernels compiled or loaded
    print(load(), flush=True)
    points = 0.0
    times: list[float] = []
    start = OthelloState.new()
    for game in range(args.games):
        if game % 2 == 0:
            start = opening(rng, args.opening_plies)
        side = game % 2
        end = play_game(start, agent, budget, side, edax, args.seed * 1000 + game, times)
        outcome = end.outcome()
        assert outcome is not None and outcome.score is not None
        got = 0.5 if outcome.winner is None else float(outcome.winner == side)
        points += got
        ours, theirs = outcome.score[side], outcome.score[1 - side]
        colour = "black" if side == 0 else "white"
        print(f"game {game + 1}: {args.agent} ({colour}) {ours}-{theirs} -> {got:g}", flush=True)
    print(
        f"{args.agent} against Edax level {args.level}: {points:g} / {args.games} "
        f"({100 * points / max(1, args.games):.0f}%); move times mean "
        f"{sum(times) / max(1, len(times)):.3f} s, p95 {percentile(times, 0.95):.3f} s, "
        f"max {max(times, default=0.0):.3f} s over {len(times)} moves"
    )
    print(load())


if __name__ == "__main__":
    main()
