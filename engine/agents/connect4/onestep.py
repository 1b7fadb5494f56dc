"""The `onestep` agent, Connect Four: the best board after its own move, looking no further."""

from __future__ import annotations

import random

from engine.agents.base import Agent, AgentInfo, Budget, Decision, require_moves
from engine.games.base import GameState
from engine.games.c4windows import count_windows, window_masks


def onestep_score(current: int, mask: int, rows: int, cols: int, k: int, col: int) -> float:
    """The score of dropping a disc in `col`: fours*1e6 + threes - 1e3*opponent threes.

    `current` holds the mover's discs before the move. A "four" is a window of k own discs, a
    "three" a window with k-1 own discs and one empty cell.
    """
    shift = col * (rows + 1)
    move_bit = (mask + (1 << shift)) & (((1 << rows) - 1) << shift)  # lowest empty cell
    new_mask = mask | move_bit
    own = current | move_bit
    opp = own ^ new_mask
    full = sum(((1 << rows) - 1) << (c * (rows + 1)) for c in range(cols))
    empty = full & ~new_mask
    masks = window_masks(rows, cols, k)
    fours = count_windows(own, empty, masks, k, k)
    threes = count_windows(own, empty, masks, k, k - 1)
    threes_opp = count_windows(opp, empty, masks, k, k - 1)
    return fours * 1e6 + threes - 1e3 * threes_opp


class OneStepAgent(Agent):
    """The best board after my move (`onestep_score`), ties at random."""

    def choose(self, state: GameState, budget: Budget, rng: random.Random) -> Decision:
        from engine.games.connect4 import Connect4State

        if not isinstance(state, Connect4State):
            raise TypeError("onestep plays Connect Four only")
        moves = require_moves(state)
        scores = {
            col: onestep_score(state.current, state.mask, state.rows, state.cols, state.k, col)
            for col in moves
        }
        best = max(scores.values())
        col = rng.choice([c for c in moves if scores[c] == best])
        return Decision(move=col, score=best, depth=1, nodes=len(moves))


AGENT_INFOS = [
    AgentInfo(
        "onestep",
        ("connect4",),
        "looks one move ahead: takes a win, blocks a threat, otherwise builds lines of three; "
        "falls for traps two moves deep",
        OneStepAgent,
    ),
]
