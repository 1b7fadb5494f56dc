"""Tests of cogs/: the Discord face through discord.py's real dispatch (tests/harness/)."""
