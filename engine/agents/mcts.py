"""The `mcts` agent, every game: UCT Monte Carlo tree search with random playouts.

The tree lives in preallocated numpy arrays and the loop runs in numba, in chunks sized to about
10 ms so the Python side can keep a time budget. The selection and the backup are shared; each
game's kit runs the iterations on its own boards (`engine/agents/connect4/mcts.py`,
`engine/agents/othello/mcts.py`). The move rules (`pick`) and the details: docs/agents.md.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol, cast

import numpy as np
import numpy.typing as npt

from engine.agents.base import (
    Agent,
    AgentInfo,
    Budget,
    Decision,
    check_params,
    choice,
    number,
    require_moves,
)
from engine.games import GAMES
from engine.games.base import GameState
from engine.games.bits import inline_kernel, kernel, seed_rng, xorshift
from engine.kits import kit

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]

DEFAULT_SIMULATIONS = 10_000
MAX_NODES = 1 << 20
UNKNOWN = -2.0  # terminal status not computed yet
ONGOING = -1.0  # not a finished game
_MIN_SHARE = 0.1  # pick="ratio": only children with >= 10% of the top visit count


class MctsKit(Protocol):
    """What a game's kit provides for the search (engine/kits.py)."""

    #: About how many nodes a simulation adds to the tree (the children of an expansion).
    MCTS_FANOUT: int

    def mcts_runner(self, state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
        """A function running n iterations of the game's kernel on `tree` from `state`, with
        `c` the exploration constant."""
        ...


class Tree(NamedTuple):
    """The preallocated node arrays of one search (the games' iteration kernels fill them);
    counts = [nodes in use], state = [random generator's state], path = the nodes of the
    iteration under way."""

    child_start: I32
    child_count: I32
    moves: I32
    visits: I64
    wins: F64
    term: F64
    counts: I64
    state: U64
    path: I32

    @classmethod
    def new(cls, capacity: int, seed: int) -> Tree:
        """A tree of `capacity` nodes holding only its root."""
        return cls(
            np.zeros(capacity, dtype=np.int32),
            np.full(capacity, -1, dtype=np.int32),
            np.zeros(capacity, dtype=np.int32),
            np.zeros(capacity, dtype=np.int64),
            np.zeros(capacity, dtype=np.float64),
            np.full(capacity, UNKNOWN, dtype=np.float64),
            np.ones(1, dtype=np.int64),
            np.array([seed_rng(seed)], dtype=np.uint64),
            np.zeros(256, dtype=np.int32),
        )

    def root_children(self) -> list[tuple[int, int, float]]:
        """(move, visits, wins) of every root child."""
        start, count = int(self.child_start[0]), int(self.child_count[0])
        return [
            (int(self.moves[i]), int(self.visits[i]), float(self.wins[i]))
            for i in range(start, start + max(count, 0))
        ]


@kernel
def descend(tree: Tree, node: int, depth: int, c: float, rng: np.uint64) -> tuple[int, np.uint64]:
    """The selection, one level down from the expanded `node` (at `depth` on the path): a random
    unvisited child if there is one, else the child with the best UCT score. The child is put
    on the path at depth + 1; returns it and the random state."""
    visits = tree.visits
    start = tree.child_start[node]
    count = tree.child_count[node]
    unvisited = 0
    for i in range(start, start + count):
        if visits[i] == 0:
            unvisited += 1
    best = start
    if unvisited:
        rng = xorshift(rng)
        r = int((rng >> np.uint64(32)) % np.uint64(unvisited))
        for i in range(start, start + count):
            if visits[i] == 0:
                if r == 0:
                    best = i
                    break
                r -= 1
    else:
        wins = tree.wins
        log_n = math.log(visits[node])
        best_u = -1.0
        for i in range(start, start + count):
            u = wins[i] / visits[i] + c * math.sqrt(log_n / visits[i])
            if u > best_u:
                best_u = u
                best = i
    tree.path[depth + 1] = best
    return best, rng


@kernel
def backup(tree: Tree, depth: int, reward: float) -> None:
    """The backup: add the iteration's result along the path, `reward` being for the mover
    into path[depth] (1 win, 0.5 draw, 0 loss), each level up for the other side."""
    path = tree.path
    visits = tree.visits
    wins = tree.wins
    for d in range(depth, -1, -1):
        node = path[d]
        visits[node] += 1
        wins[node] += reward
        reward = 1.0 - reward


@inline_kernel
def plays_out(tree: Tree, node: int, n_nodes: int, fanout: int) -> bool:
    """Whether an iteration at the unexpanded `node` plays a random game from it instead of
    expanding it: a node is expanded on its second visit (the root on its first), and not at
    all once `fanout` more nodes would not fit."""
    unvisited: bool = node != 0 and tree.visits[node] == 0
    return unvisited or n_nodes + fanout > tree.child_start.shape[0]


@inline_kernel
def add_child(tree: Tree, n_nodes: int, move: int) -> int:
    """A new unvisited, unexpanded node reached by `move` at index `n_nodes`; the next free index.
    An expansion sets its node's child_start before the first and child_count after the last."""
    tree.moves[n_nodes] = move
    tree.visits[n_nodes] = 0
    tree.wins[n_nodes] = 0.0
    tree.child_count[n_nodes] = -1
    tree.term[n_nodes] = UNKNOWN
    return n_nodes + 1


def pick_move(children: list[tuple[int, int, float]], pick: str) -> tuple[int, float]:
    """The chosen root move and its win ratio (see the module docstring for the two rules)."""
    visited = [ch for ch in children if ch[1] > 0]
    top = max(v for _, v, _ in visited)
    if pick == "visits":
        move, v, w = max(visited, key=lambda ch: ch[1])
        return move, w / v
    floor = max(1.0, _MIN_SHARE * top)
    eligible = [ch for ch in visited if ch[1] >= floor]
    move, v, w = max(eligible, key=lambda ch: (ch[2] / ch[1], ch[1]))
    return move, w / v


PARAMS = (
    # Beyond 10 the search spreads its visits evenly: nothing more is explored.
    number("c", 0, 10, "how much it tries moves that look worse: higher tries more"),
    choice("pick", ("ratio", "visits"), "its move: the best share of wins, or the most tried"),
)


class MCTSAgent(Agent):
    """UCT with random playouts for Connect Four or Othello.

    `c` is the exploration constant, `pick` "ratio" (best win ratio among well-visited
    children) or "visits" (most visited child). Budget: `nodes` simulations (default 10,000)
    and/or `time` seconds, whichever ends first.
    """

    def __init__(self, game: str = "connect4", c: float = 1.4, pick: str = "ratio") -> None:
        if game not in GAMES:
            raise ValueError(f"mcts plays {' or '.join(GAMES)}, not {game!r}")
        check_params(PARAMS, "mcts", c=c, pick=pick)
        self.game = game
        self.c = float(c)
        self.pick = pick

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        t0 = time.perf_counter()
        deadline = budget.deadline(t0)
        legal = require_moves(state)
        seed = rng.getrandbits(63)
        if len(legal) == 1:
            return Decision(move=legal[0], nodes=0, info={"forced": True})
        sims = budget.nodes
        if sims is None:
            sims = DEFAULT_SIMULATIONS if deadline is None else 1 << 62
        game_kit = cast(MctsKit, kit(state.game))
        capacity = min(MAX_NODES, sims * game_kit.MCTS_FANOUT + 64)
        if budget.time is not None:
            # Allocating the full tree takes 20-60 ms: a short move cannot fill more than about
            # 5M nodes a second anyway (Connect Four's fastest rate, 7 children per expansion).
            capacity = min(capacity, int(budget.time * 5_000_000) + 1024)
        tree = Tree.new(capacity, seed)
        run = game_kit.mcts_runner(state, tree, self.c)
        done = 0
        # Under a clock, a small first chunk measures the speed before committing: 1000 Othello
        # playouts alone take ~25 ms, past a tight deadline.
        chunk = 1000 if deadline is None else 64
        while done < sims:
            n = min(chunk, sims - done)
            c0 = time.perf_counter()
            run(n)
            done += n
            now = time.perf_counter()
            if deadline is not None:
                if now >= deadline - 0.002:
                    break
                rate = n / max(now - c0, 1e-6)
                # ~10 ms chunks, and never past the deadline at the measured speed.
                chunk = max(64, int(min(rate * 0.01, rate * (deadline - now) * 0.8)))
            else:
                chunk = 20_000
        children = tree.root_children()
        move, ratio = pick_move(children, self.pick)
        return Decision(
            move=move,
            score=ratio,
            nodes=done,
            seconds=time.perf_counter() - t0,
            info={
                "simulations": done,
                "tree_nodes": int(tree.counts[0]),
                "children": {state.move_to_str(m): (v, round(w / v, 4) if v else None)
                             for m, v, w in children},
            },
        )  # fmt: skip


AGENT_INFOS = [
    AgentInfo(
        "mcts",
        GAMES,
        "plays thousands of random games from the position and picks the move that wins "
        "most often; sees short tactics, misses long plans",
        MCTSAgent,
        defaults={"c": 1.4, "pick": "ratio"},
        budget=Budget(nodes=DEFAULT_SIMULATIONS),
        params=PARAMS,
    ),
]
