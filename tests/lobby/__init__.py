"""Tests of lobby/: the life of a match, its clocks, the engine pool, analyses and pictures."""
