"""Othello's iterations of the `mcts` agent (`engine/agents/mcts.py`): select down the tree,
expand a leaf into its moves (or its pass), play a random game out, back the result up."""

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
    child_count = tree.child_count
    term = tree.term
    n_nodes = tree.counts[0]
    rng = tree.state[0]
    for _ in range(iterations):
        node = 0
        me = me0
        opp = opp0
        depth = 0
        tree.path[0] = 0
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
                if plays_out(tree, node, n_nodes, 64):
                    result, rng = ok._playout(me, opp, rng)
                    reward = 0.5 - 0.5 * result
                    break
                tree.child_start[node] = n_nodes
                first = n_nodes
                if legal == np.uint64(0):
                    n_nodes = add_child(tree, n_nodes, PASS)
                while legal:
                    bit = legal & (~legal + np.uint64(1))
                    legal ^= bit
                    n_nodes = add_child(tree, n_nodes, ok.bit_index(bit))
                child_count[node] = n_nodes - first
            node, rng = descend(tree, node, depth, c, rng)
            depth += 1
            sq = tree.moves[node]
            if sq == PASS:
                me, opp = opp, me
            else:
                f = ok.flips(me, opp, sq)
                me, opp = opp ^ f, me | f | (np.uint64(1) << np.uint64(sq))
        backup(tree, depth, reward)
    tree.counts[0] = n_nodes
    tree.state[0] = rng


def runner(state: GameState, tree: Tree, c: float) -> Callable[[int], None]:
    """A function running n iterations on `tree` from `state`."""
    assert isinstance(state, OthelloState)
    me, opp = np.uint64(state.me), np.uint64(state.opp)

    def run(n: int) -> None:
        simulate(me, opp, n, c, tree)

    return run
