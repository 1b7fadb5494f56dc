"""How well: the ladders, the experts and the analysis against exact oracles, the opening book,
the learning curves."""
