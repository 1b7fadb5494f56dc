"""The Othello agents and what only they share (the evaluation, the alpha-beta search)."""
