#!/bin/bash
# Before/after speed of two checkouts, interleaved (before, after, before, after) in one run so
# that the machine's load falls on both alike. For a refactor that must not change speed:
#   git worktree add --detach /tmp/before <old commit>; git worktree add --detach /tmp/after HEAD
#   benchmarks/speed/compare_trees.sh /tmp/before /tmp/after > compare.txt
# Each tree runs its own benchmarks; a tree older than the benchmarks' groups (no
# benchmarks/__init__.py) runs this tree's, found through PYTHONPATH after its own root.
# Each tree compiles its own numba cache in the first round; compare the second round.
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
run() {
  cd "$1" || exit 2
  export PYTHONPATH="$1:$here"
  echo "######## $2 ($1)"
  echo "--- speed.c4_search"; timeout 900 python -m benchmarks.speed.c4_search 2>&1 | tail -30
  echo "--- speed.mcts mcts"; timeout 900 python -m benchmarks.speed.mcts mcts --repeat 3 2>&1 | tail -3
  echo "--- speed.othello_search (midgame, FFO 40)"
  timeout 900 python -m benchmarks.speed.othello_search --ffo 40 --cap 60 2>&1 | tail -3
  echo "--- speed.lobby"; timeout 900 python -m benchmarks.speed.lobby --matches 50 2>&1 | tail -3
}
for round in 1 2; do
  run "$1" "before r$round"
  run "$2" "after r$round"
done
