"""Measurements of the bot, none run by the test suite: speed, strength and robustness
(`benchmarks/README.md` lists each with how to run it and its last figure)."""
