"""What each Othello player type's moves cost in the same positions: the discs a type's choice
loses against the best move, by phase, with every legal move valued alike. It tells whether a
type that wins more also moves better (accuracy can only rise with strength where it does).

    python -m benchmarks.strength.othello_move_quality [--games 40] [--share 0.1] [--seed 1]
        [--move-seconds 0.2]

Positions come from `--games` games between random movers (two random opening plies each), a
share `--share` of the positions with a choice. Every legal move is valued by the analysis's
search (`engine.agents.othello.analysis`: the pattern evaluation 6 plies deep from the position
after it; exact from 14 empties on). The random mover's cost is the mean over the legal moves
(what it loses on average); every other type chooses as it plays (at most `--move-seconds`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from engine.agents.base import Budget
from engine.agents.othello.analysis import discs
from engine.agents.othello.evals import final_score
from engine.agents.othello.minimax import minimax_search
from engine.agents.othello.search import OthelloSearch
from engine.games import new_game
from engine.games.othello import PASS, OthelloState
from tools.winfit import play, player

TYPES = ("random", "greedy-first", "easy", "medium", "hard", "expert")
#: The search depth of a move's value before the exact zone, and the empties the exact zone
#: starts at.
DEPTH, EXACT = 6, 14
PHASES = (("opening, over 40 empties", 40), ("middle, 15-40 empties", EXACT), ("end", -1))


def empties(state: OthelloState) -> int:
    return 64 - (state.black | state.white).bit_count()


def values(search: OthelloSearch, state: OthelloState) -> dict[int, float]:
    """Every legal move's value in discs for the side to move."""
    out = {}
    exact = empties(state) <= EXACT
    for move in state.legal_moves():
        after, side = state.play(move), -1.0
        if after.legal_moves() == [PASS]:  # the search wants a side with a move: the mover's
            after, side = after.play(PASS), 1.0
        if after.is_over():
            out[move] = side * float(final_score(np.uint64(after.me), np.uint64(after.opp)))
            continue
        budget = Budget(time=60.0) if exact else Budget(depth=DEPTH)
        out[move] = side * discs(minimax_search(search, after, budget, 64 if exact else 0))
    return out


def positions(games: int, share: float, seed: int) -> list[OthelloState]:
    """A share of the positions with a choice from games between random movers."""
    rng = random.Random(seed)
    found = []
    for i in range(games):
        state = new_game("othello")
        for text in play(("random", "random"), seed * 100_000 + i, 0.01):
            if len(state.legal_moves()) > 1 and rng.random() < share:
                found.append(state)
            state = state.play(state.parse_move(text))
    return [s for s in found if isinstance(s, OthelloState)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--move-seconds", type=float, default=0.2)
    args = parser.parse_args()
    t0 = time.perf_counter()
    states = positions(args.games, args.share, args.seed)
    search, rng = OthelloSearch(eval="patterns"), random.Random(args.seed)
    players = {name: player(name, args.move_seconds) for name in TYPES[1:]}
    cost: dict[tuple[str, str], list[float]] = {}
    for state in states:
        valued = values(search, state)
        best = max(valued.values())
        phase = next(label for label, above in PHASES if empties(state) > above)
        cost.setdefault(("random", phase), []).append(best - statistics.fmean(valued.values()))
        for name, (agent, budget) in players.items():
            move = agent.choose(state, budget, rng).move
            cost.setdefault((name, phase), []).append(best - valued[move])
    print(f"{len(states)} positions in {time.perf_counter() - t0:.0f} s; discs lost a move:")
    labels = [label for label, _ in PHASES]
    print("| player | " + " | ".join(labels) + " |\n| --- |" + " --- |" * len(labels))
    for name in TYPES:
        cells = []
        for label in labels:
            got = cost.get((name, label), [])
            if got:
                half = 1.645 * statistics.stdev(got) / len(got) ** 0.5 if len(got) > 1 else 0.0
                cells.append(f"{statistics.fmean(got):.1f} ± {half:.1f} ({len(got)})")
            else:
                cells.append("-")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
