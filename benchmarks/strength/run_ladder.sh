#!/usr/bin/env bash
# The arena runs behind docs/ladder.md: the level ladders at 200 games per pairing and the
# seed agents' round robins. Long (about an hour on 2 cores); run from the repository root.
set -euo pipefail
out=docs/arena
mkdir -p "$out"
run() {  # name game games agents
  python -m tools arena --game "$2" --agents "$4" --games "$3" --seed 2026 \
    --plot "$out/$1.png" --save-json "$out/$1.json" > "$out/$1.txt"
}
run othello-ladder othello 200 easy,medium,hard,expert
run connect4-ladder connect4 200 easy,medium,hard,expert
run othello-seeds othello 100 random,greedy-first,greedy-center,greedy-edge,greedy-random,weightgrid,minimax,expectiminimax,mcts
run connect4-seeds connect4 100 random,onestep,planner,planner:search=minimax,minimax,minimax:eval=opportunities,minimax:eval=window,expectiminimax,mcts,mcts:nodes=300
