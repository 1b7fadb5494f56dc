"""Puzzles: positions of real and self-play games with one proven best move, generated
offline by the solvers (`python -m tools puzzles`) and shipped in `engine/puzzles/data/`."""
