"""Tests of engine/: the games, the agents, their kernels and searches, analysis, learning."""
