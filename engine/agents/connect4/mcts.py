"""Connect Four's iterations of the `mcts` agent (`engine/agents/mcts.py`): select down the
tree, expand a leaf into its columns, play a random game out, back the result up."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.agents.mcts import ONGOING, UNKNOWN, Tree, backup, select_child
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
    child_start = tree.child_start
    child_count = tree.child_count
    moves = tree.moves
    visits = tree.visits
    wins = tree.wins
    term = tree.term
    counts = tree.counts
    state = tree.state
    path = tree.path
    h = rows + 1
    bottom = c4k.bottom_mask(rows, cols)
    board = c4k.board_mask(rows, cols)
    n_nodes = counts[0]
    rng = state[0]
    cap = child_start.shape[0]
    for _ in range(iterations):
        node = 0
        cur = cur0
        mask = mask0
        depth = 0
        path[0] = 0
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
                if (node != 0 and visits[node] == 0) or n_nodes + cols > cap:
                    result, rng = c4k._playout(cur, mask, rows, cols, k, rng)
                    reward = 0.5 - 0.5 * result  # result is for the side to move at node
                    break
                legal = (mask + bottom) & board
                child_start[node] = n_nodes
                count = 0
                for col in range(cols):
                    if legal & c4k.column_mask(col, rows):
                        moves[n_nodes] = col
                        visits[n_nodes] = 0
                        wins[n_nodes] = 0.0
                        child_count[n_nodes] = -1
                        term[n_nodes] = UNKNOWN
                        n_nodes += 1
                        count += 1
                child_count[node] = count
            node, rng = select_child(node, child_start, child_count, visits, wins, c, rng)
            col = moves[node]
            bit = (mask + (np.uint64(1) << np.uint64(col * h))) & c4k.column_mask(col, rows)
            cur, mask = cur ^ mask, mask | bit
            depth += 1
            path[depth] = node
        backup(path, depth, reward, visits, wins)
    counts[0] = n_nodes
    state[0] = rng


def runner(state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
    """A function running n iterations on `tree` from `state`."""
    assert isinstance(state, Connect4State)
    cur, mask = np.uint64(state.current), np.uint64(state.mask)
    rows, cols, k = state.rows, state.cols, state.k

    def run(n: int) -> None:
        simulate(cur, mask, rows, cols, k, n, c, tree)

    return run
