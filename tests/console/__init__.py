"""Tests of console.py and console/: the local console in-process and in a terminal."""
