"""Othello search speed per evaluation: midgame nodes/s with the standard and the pattern
evaluation, evaluation calls/s of each bare kernel, and the exact endgame solver's nodes/s.

Run with `python -m benchmarks.speed.othello_nodes [--positions N] [--depth D] [--repeat R]
[--seed S]` from the repository root. The first run compiles numba's kernels (minutes in a
fresh clone); the compile is timed apart and not counted.

Midgame: `--positions` seeded random positions (`--plies` random plies from the start, 20 by
default), each searched by `OthelloSearch.negamax` to the fixed depth `--depth` with no time or
node limit and an emptied transposition table, so a repeat searches exactly the same tree. The
two evaluations search different trees (the values order the moves differently), so each
prints its own node count. Times are CPU seconds of this process (`time.process_time`), the
minimum and the median over `--repeat` runs; nodes/s is nodes over the minimum.

A node is one call of the search kernel `_negamax` (`minimax.py`: stats[_NODES] += 1 on entry):
every interior position, every horizon leaf (where the evaluation runs) and every finished game
reached, counting the re-searches of the principal variation search again; a transposition
table hit still counts the call that found it. "evaluated" is how many of them were horizon
leaves that the evaluation scored (stats[LEAVES]: finished games are not evaluated).

Kernel: evaluation calls/s of `evals.evaluate` and of `patterns.pattern_value` alone, a numba
loop over positions with no search around them: "tree", every position 3 plies below the
midgame positions in depth-first order (neighbours alike, as a search's leaves are, so the
pattern weights they read are mostly in the cache); "mixed", positions from seeded random
games at every stage (4-60 discs played: all ten phases' weights, 6.7 MB, in turn, so more
cache misses).

Endgame: `--endgame-positions` seeded random positions with 14, 15 and 16 empties, each solved
exactly by `OthelloSearch.solve` (`endgame.py`) from an emptied table; nodes are the solver's
own count (positions with 3 or more empties, see `endgame.py`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np
import numpy.typing as npt

from benchmarks import measure
from benchmarks.measure import load
from engine.agents.othello import patterns
from engine.agents.othello.evals import evaluate
from engine.agents.othello.patterns import pattern_value
from engine.agents.othello.search import LEAVES, OthelloSearch
from engine.games.bits import kernel
from engine.games.othello import OthelloState

U64Array = npt.NDArray[np.uint64]
F32Array = npt.NDArray[np.float32]
#: `_eval_loop`'s weights for the standard evaluation (one row: the standard one is called).
STANDARD = np.zeros((1, 1), dtype=np.float32)
STANDARD.setflags(write=False)  # read-only as `patterns.load`'s: one compiled loop for both


def random_position(rng: random.Random, plies: int) -> OthelloState | None:
    """The position after `plies` random plies, or None if the game ended first."""
    state = OthelloState.new()
    for _ in range(plies):
        if state.is_over():
            return None
        state = state.play(rng.choice(state.legal_moves()))
    return None if state.is_over() else state


def positions(count: int, plies: int, seed: int) -> list[OthelloState]:
    rng = random.Random(seed)
    out: list[OthelloState] = []
    while len(out) < count:
        state = random_position(rng, plies)
        if state is not None:
            out.append(state)
    return out


def endgame_positions(count: int, empties: int, seed: int) -> list[OthelloState]:
    """Seeded random positions with exactly `empties` empty squares, the side to move able to."""
    rng = random.Random(seed * 1000 + empties)
    out: list[OthelloState] = []
    while len(out) < count:
        state = OthelloState.new()
        while not state.is_over() and 64 - (state.me | state.opp).bit_count() > empties:
            state = state.play(rng.choice(state.legal_moves()))
        if 64 - (state.me | state.opp).bit_count() == empties and state.legal_mask():
            out.append(state)
    return out


@kernel
def _eval_loop(me: U64Array, opp: U64Array, w: F32Array, rounds: int) -> int:
    """Evaluate every position `rounds` times (the sum keeps the calls from being dropped)."""
    total = 0
    for _ in range(rounds):
        for i in range(me.shape[0]):
            if w.shape[0] == 1:
                total += evaluate(me[i], opp[i])
            else:
                total += pattern_value(me[i], opp[i], w)
    return total


def search_rate(
    name: str, weights: F32Array, states: list[OthelloState], depth: int, repeat: int
) -> float:
    """Print and return the midgame nodes/s of one evaluation (CPU time, best repeat)."""
    search = OthelloSearch(eval=name)
    cpu: list[float] = []
    wall: list[float] = []
    nodes = leaves = 0
    for _ in range(repeat):
        nodes = leaves = 0
        c0, t0 = time.process_time(), time.perf_counter()
        for state in states:
            search.reset(None, None)
            search.negamax(state.me, state.opp, depth)
            nodes += search.nodes
            leaves += int(search.stats[LEAVES])
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    best = min(cpu)
    print(
        f"midgame eval={name:<9} depth {depth}: {nodes:>9} nodes ({leaves} evaluated) "
        f"CPU min {best:6.3f} s "
        f"median {statistics.median(cpu):6.3f} s (wall min {min(wall):6.3f} s)  "
        f"{nodes / best / 1e6:5.2f} M nodes/s",
        flush=True,
    )
    return nodes / best


def tree_positions(states: list[OthelloState], depth: int) -> list[tuple[int, int]]:
    """Every position `depth` plies below each state (passes included), depth-first."""
    out: list[tuple[int, int]] = []

    def walk(state: OthelloState, d: int) -> None:
        if d == 0 or state.is_over():
            out.append((state.me, state.opp))
            return
        for move in state.legal_moves():
            walk(state.play(move), d - 1)

    for state in states:
        walk(state, depth)
    return out


def mixed_positions(seed: int, count: int = 4000) -> list[tuple[int, int]]:
    rng = random.Random(seed + 1)
    states = (random_position(rng, rng.randrange(4, 61)) for _ in range(count))
    return [(s.me, s.opp) for s in states if s is not None]


def kernel_rate(
    name: str, weights: F32Array, where: str, boards: list[tuple[int, int]], repeat: int
) -> float:
    """Print and return evaluation calls/s of a bare kernel (CPU time, best repeat)."""
    me = np.array([m for m, _ in boards], dtype=np.uint64)
    opp = np.array([o for _, o in boards], dtype=np.uint64)
    rounds = max(1, 400_000 // len(boards))
    cpu = []
    for _ in range(repeat):
        c0 = time.process_time()
        _eval_loop(me, opp, weights, rounds)
        cpu.append(time.process_time() - c0)
    calls = rounds * len(boards)
    best = min(cpu)
    print(
        f"kernel  eval={name:<9} {where:<6} {calls:>8} calls  CPU min {best:6.3f} s "
        f"median {statistics.median(cpu):6.3f} s  {calls / best / 1e6:5.2f} M calls/s "
        f"({best / calls * 1e9:.0f} ns a call)",
        flush=True,
    )
    return calls / best


def endgame_rate(count: int, seed: int, repeat: int) -> None:
    """Print the exact solver's nodes/s on seeded 14-16-empty positions (CPU time, best of
    `repeat` solves of each)."""
    search = OthelloSearch(tt_bits=20, eg_bits=22)
    total_nodes, total_cpu = 0, 0.0
    for empties in (14, 15, 16):
        nodes, cpu_sum = 0, 0.0
        for state in endgame_positions(count, empties, seed):
            cpu = []
            for _ in range(repeat):
                search.reset(None, None)
                search.clear_endgame_tt()
                c0 = time.process_time()
                search.solve(state.me, state.opp)
                cpu.append(time.process_time() - c0)
            nodes += search.nodes
            cpu_sum += min(cpu)
        total_nodes += nodes
        total_cpu += cpu_sum
        print(
            f"endgame {empties} empties x{count}: {nodes:>10} nodes  CPU {cpu_sum:6.3f} s  "
            f"{nodes / cpu_sum / 1e6:5.2f} M nodes/s",
            flush=True,
        )
    print(f"endgame total: {total_nodes / total_cpu / 1e6:5.2f} M nodes/s")


def warm_up(weights: F32Array) -> None:
    """Compile or load every kernel this benchmark calls (a first call only compiles)."""
    state = positions(1, 20, 0)[0]
    for name, w in (("standard", STANDARD), ("patterns", weights)):
        search = OthelloSearch(tt_bits=10, eval=name)
        search.reset(None, None)
        search.negamax(state.me, state.opp, 2)
        _eval_loop(np.array([state.me], np.uint64), np.array([state.opp], np.uint64), w, 1)
    end = endgame_positions(1, 14, 0)[0]
    search.reset(None, None)
    search.solve(end.me, end.opp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=20, help="midgame positions")
    parser.add_argument("--plies", type=int, default=20, help="random plies before each")
    parser.add_argument("--depth", type=int, default=7, help="midgame search depth")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measurement")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--endgame-positions", type=int, default=5, help="per empties count")
    parser.add_argument("--skip-endgame", action="store_true")
    args = parser.parse_args()
    weights = patterns.load()
    measure.warm_up(lambda: warm_up(weights))
    print(load())
    states = positions(args.positions, args.plies, args.seed)
    for where, boards in (
        ("tree", tree_positions(states, 3)),
        ("mixed", mixed_positions(args.seed)),
    ):
        for name, w in (("standard", STANDARD), ("patterns", weights)):
            kernel_rate(name, w, where, boards, args.repeat)
    for name, w in (("standard", STANDARD), ("patterns", weights)):
        search_rate(name, w, states, args.depth, args.repeat)
    if not args.skip_endgame:
        endgame_rate(args.endgame_positions, args.seed, args.repeat)
    print(load())


if __name__ == "__main__":
    main()
