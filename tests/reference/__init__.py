"""Deliberately naive implementations the tests use as oracles for the fast engine code."""
