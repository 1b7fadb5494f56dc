"""The Connect Four agents and what only they share (evaluations, line helpers, the solver)."""
