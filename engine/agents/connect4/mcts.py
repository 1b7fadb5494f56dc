"""Connect Four's iterations of the `mcts` agent (`engine/agents/mcts.py`): select down the
tree, expand a leaf into its columns, play a random game out, back the result up."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.agents.mcts import (
    ONGOING,
    UNKNOWN,
    Tree,
    add_child,
    backup,
    descend,
    plays_out,
)
from engine.games import c4kernels as c4k
from engine.games.base import GameState
from engine.games.bits import kernel
from engine.games.connect4 import Connect4State


@kernel
def simulate(
    cur0: np.uint64,
    mask0: np.uint64,
    rows: int,
    cols: int,
    k: int,
    iterations: int,
    c: float,
    tree: Tree,
) -> None:
    """Run Connect Four MCTS iterations on the array tree (`Tree` says what its arrays hold)."""
    child_count = tree.child_count
    term = tree.term
    h = rows + 1
    bottom = c4k.bottom_mask(rows, cols)
    board = c4k.board_mask(rows, cols)
    n_nodes = tree.counts[0]
    rng = tree.state[0]
    for _ in range(iterations):
        node = 0
        cur = cur0
        mask = mask0
        depth = 0
        tree.path[0] = 0
        reward = 0.5
        while True:
            if term[node] == UNKNOWN:
                if c4k.is_win(cur ^ mask, rows, k):
                    term[node] = 1.0
                elif mask == board:
                    term[node] = 0.5
                else:
                    term[node] = ONGOING
            if term[node] != ONGOING:
                reward = term[node]
                break
            if child_count[node] < 0:
                if plays_out(tree, node, n_nodes, cols):
                    result, rng = c4k._playout(cur, mask, rows, cols, k, rng)
                    reward = 0.5 - 0.5 * result  # result is for the side to move at node
                    break
                legal = (mask + bottom) & board
                tree.child_start[node] = n_nodes
                first = n_nodes
                for col in range(cols):
                    if legal & c4k.column_mask(col, rows):
                        n_nodes = add_child(tree, n_nodes, col)
                child_count[node] = n_nodes - first
            node, rng = descend(tree, node, depth, c, rng)
            depth += 1
            col = tree.moves[node]
            bit = (mask + (np.uint64(1) << np.uint64(col * h))) & c4k.column_mask(col, rows)
            cur, mask = cur ^ mask, mask | bit
        backup(tree, depth, reward)
    tree.counts[0] = n_nodes
    tree.state[0] = rng


def runner(state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
    """A function running n iterations on `tree` from `state`."""
    assert isinstance(state, Connect4State)
    cur, mask = np.uint64(state.current), np.uint64(state.mask)
    rows, cols, k = state.rows, state.cols, state.k

    def run(n: int) -> None:
        simulate(cur, mask, rows, cols, k, n, c, tree)

    return run
