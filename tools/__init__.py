"""The engine's tools, on top of its pure core (`engine`): the command line (`python -m
tools`), round-robin tournaments, training runs, the builders of the shipped opening book and
Othello weights, pictures of games and plots, and the picture of the house in
docs/architecture.md (`tools.housemap`). Whatever needs processes, files, the database or
drawing libraries lives here; `tools.pool` starts every worker process."""
