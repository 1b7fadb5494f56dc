"""The `mcts` agent's searches pinned: with a fixed seed each gives these moves, these visit counts
and these win ratios at the root, and a tree of this size. A change to the kernels that is meant
to keep the search the same (a regrouping, a shared helper) must keep every figure here."""

from __future__ import annotations

import random

import pytest

from engine.agents.base import Budget
from engine.agents.mcts import MCTSAgent
from engine.games.base import GameState
from engine.games.catalog import game_info

#: An Othello endgame whose tree holds passes (black to move).
ENDGAME = "XOOOOOO--OOOXXXXO-XOOXXXXOXXOXOXX-OXXOOXXXXXXXOO-X-XXXOO-XXXXO-X X"

Children = dict[str, tuple[int, float]]
CASES: list[tuple[str, str, int, int, str, int, int, Children]] = [
    # game, position, simulations, seed, pick -> move, tree nodes, {move: (visits, win ratio)}
    ("connect4", "", 2000, 1, "ratio", 3, 4257,
     {"1": (74, 0.3378), "2": (185, 0.5027), "3": (309, 0.568), "4": (624, 0.6314),
      "5": (355, 0.5803), "6": (232, 0.5323), "7": (221, 0.5249)}),
    ("connect4", "4453536", 3000, 2, "visits", 6, 5649,
     {"1": (157, 0.2166), "2": (144, 0.2014), "3": (189, 0.2434), "4": (178, 0.236),
      "5": (178, 0.236), "6": (149, 0.2081), "7": (2005, 0.4444)}),
    ("connect4", "121212", 1500, 3, "ratio", 0, 385,
     {"1": (1303, 1.0), "2": (73, 0.6575), "3": (30, 0.4), "4": (29, 0.3793),
      "5": (23, 0.3043), "6": (20, 0.25), "7": (22, 0.2727)}),
    ("othello", "", 1500, 4, "ratio", 26, 2885,
     {"d3": (380, 0.4882), "c4": (499, 0.513), "f5": (374, 0.4973), "e6": (247, 0.4413)}),
    ("othello", ENDGAME, 2000, 5, "visits", 7, 2003,
     {"h1": (1797, 0.9699), "a2": (88, 0.6477), "b5": (36, 0.4028), "g8": (79, 0.6266)}),
]  # fmt: skip


def position(game: str, text: str) -> GameState:
    info = game_info(game)
    return info.parse(text, None) if text else info.new(None)


@pytest.mark.parametrize(
    ("game", "text", "sims", "seed", "pick", "move", "tree_nodes", "children"), CASES
)
def test_a_seeded_search_grows_the_same_tree(
    game: str,
    text: str,
    sims: int,
    seed: int,
    pick: str,
    move: int,
    tree_nodes: int,
    children: Children,
) -> None:
    decision = MCTSAgent(game, c=1.4, pick=pick).choose(
        position(game, text), Budget(nodes=sims), random.Random(seed)
    )
    assert decision.nodes == sims
    assert (decision.move, decision.info["tree_nodes"]) == (move, tree_nodes)
    assert decision.info["children"] == children


def test_another_seed_grows_another_tree() -> None:
    """The pins above say something: the seed reaches the kernels."""
    game, text, sims, seed, pick, _, _, children = CASES[0]
    decision = MCTSAgent(game, pick=pick).choose(
        position(game, text), Budget(nodes=sims), random.Random(seed + 1)
    )
    assert decision.info["children"] != children
