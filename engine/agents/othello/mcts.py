"""Othello's iterations of the `mcts` agent (`engine/agents/mcts.py`): select down the tree,
expand a leaf into its moves (or its pass), play a random game out, back the result up."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.agents.mcts import ONGOING, UNKNOWN, Tree, backup, select_child
from engine.games import othkernels as ok
from engine.games.base import GameState
from engine.games.bits import kernel, popcount
from engine.games.othello import OthelloState

PASS = 64  # a pass, as a move of the tree


@kernel
def simulate(
    me0: np.uint64,
    opp0: np.uint64,
    iterations: int,
    c: float,
    tree: Tree,
) -> None:
    """Run Othello MCTS iterations on the array tree (`Tree` says what its arrays hold)."""
    child_start = tree.child_start
    child_count = tree.child_count
    moves = tree.moves
    visits = tree.visits
    wins = tree.wins
    term = tree.term
    counts = tree.counts
    state = tree.state
    path = tree.path
    n_nodes = counts[0]
    rng = state[0]
    cap = child_start.shape[0]
    for _ in range(iterations):
        node = 0
        me = me0
        opp = opp0
        depth = 0
        path[0] = 0
        reward = 0.5
        while True:
            legal = ok.legal_mask(me, opp)
            if term[node] == UNKNOWN:
                if legal == np.uint64(0) and ok.legal_mask(opp, me) == np.uint64(0):
                    mine = popcount(me)
                    theirs = popcount(opp)  # the discs of the mover into this node
                    term[node] = 1.0 if theirs > mine else (0.5 if theirs == mine else 0.0)
                else:
                    term[node] = ONGOING
            if term[node] != ONGOING:
                reward = term[node]
                break
            if child_count[node] < 0:
                if (node != 0 and visits[node] == 0) or n_nodes + 64 > cap:
                    result, rng = ok._playout(me, opp, rng)
                    reward = 0.5 - 0.5 * result
                    break
                child_start[node] = n_nodes
                count = 0
                if legal == np.uint64(0):
                    moves[n_nodes] = PASS
                    visits[n_nodes] = 0
                    wins[n_nodes] = 0.0
                    child_count[n_nodes] = -1
                    term[n_nodes] = UNKNOWN
                    n_nodes += 1
                    count = 1
                while legal:
                    bit = legal & (~legal + np.uint64(1))
                    legal ^= bit
                    moves[n_nodes] = ok.bit_index(bit)
                    visits[n_nodes] = 0
                    wins[n_nodes] = 0.0
                    child_count[n_nodes] = -1
                    term[n_nodes] = UNKNOWN
                    n_nodes += 1
                    count += 1
                child_count[node] = count
            node, rng = select_child(node, child_start, child_count, visits, wins, c, rng)
            sq = moves[node]
            if sq == PASS:
                me, opp = opp, me
            else:
                f = ok.flips(me, opp, sq)
                me, opp = opp ^ f, me | f | (np.uint64(1) << np.uint64(sq))
            depth += 1
            path[depth] = node
        backup(path, depth, reward, visits, wins)
    counts[0] = n_nodes
    state[0] = rng


def runner(state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
    """A function running n iterations on `tree` from `state`."""
    assert isinstance(state, OthelloState)
    me, opp = np.uint64(state.me), np.uint64(state.opp)

    def run(n: int) -> None:
        simulate(me, opp, n, c, tree)

    return run
