"""Tests of tools/: the command line, the arena, plots and the process-pool helper."""
