#!/bin/bash
# Before/after speed of two checkouts, interleaved (before, after, before, after) in one run so
# that the machine's load falls on both alike. For a refactor that must not change speed:
#   git worktree add --detach /tmp/before <old commit>; git worktree add --detach /tmp/after HEAD
#   benchmarks/compare_trees.sh /tmp/before /tmp/after > compare.txt
# Each tree compiles its own numba cache in the first round; compare the second round.
set -u
run() {
  cd "$1" || exit 2
  echo "######## $2 ($1)"
  echo "--- bench_c4_search"; timeout 900 python -m benchmarks.bench_c4_search 2>&1 | tail -30
  echo "--- bench_mcts mcts"; timeout 900 python benchmarks/bench_mcts.py mcts --repeat 3 2>&1 | tail -3
  echo "--- bench_othello_search (midgame, FFO 40)"
  timeout 900 python -m benchmarks.bench_othello_search --ffo 40 --cap 60 2>&1 | tail -3
  echo "--- bench_lobby"; timeout 900 python benchmarks/bench_lobby.py --matches 50 2>&1 | tail -3
}
for round in 1 2; do
  run "$1" "before r$round"
  run "$2" "after r$round"
done
