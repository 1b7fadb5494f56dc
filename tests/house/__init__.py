"""The repository's promises: style, layers, docs and the README."""
