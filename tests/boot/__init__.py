"""Tests of bot.py and boot/: configuration and the entry point."""
