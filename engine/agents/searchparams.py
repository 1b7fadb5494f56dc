"""What the minimax family's registry entries and its searches share, in a module of its own so
that the light registry (`engine.agents.minimax`) and the compiled searches import it, not
each other."""

from __future__ import annotations

from engine.agents.base import Param, integer

DEFAULT_DEPTH = 3

#: Each chance ply multiplies the work by the number of replies (7 here, up to ~15 in Othello)
#: with no pruning: 4 is the most that still fits a few seconds (and what Othello allowed).
CHANCE: tuple[Param, ...] = (
    integer("chance_plies", 0, 4, "how many replies below the move are averaged as random"),
)
