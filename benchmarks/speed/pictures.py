"""Replay pictures: render time and size of the GIF and PNG of whole random games.

    python -m benchmarks.speed.pictures [--games 20]

Discord takes attachments up to 10 MB; the aim is under 1 MB for a 60-move Othello game and
well under a second to draw it (the lobby draws in a thread)."""

from __future__ import annotations

import argparse
import random
import statistics
import time

from benchmarks.measure import load
from engine.games import new_game
from tools.pictures import Replay, final_png, replay_gif


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=20)
    args = parser.parse_args()
    for game in ("othello", "connect4"):
        times, sizes, pngs, plies = [], [], [], []
        for seed in range(args.games):
            rng, state, moves = random.Random(seed), new_game(game), []
            while not state.is_over():
                move = rng.choice(state.legal_moves())
                moves.append(state.move_to_str(move))
                state = state.play(move)
            replay = Replay(seed, game, None, ("A player", "Bot (expert)"), tuple(moves), "x")
            t0 = time.perf_counter()
            gif = replay_gif(replay)
            times.append(time.perf_counter() - t0)
            sizes.append(len(gif))
            pngs.append(len(final_png(replay)))
            plies.append(len(moves))
        print(
            f"{game}: {args.games} games of {min(plies)}-{max(plies)} plies: GIF "
            f"{statistics.mean(sizes) / 1024:.0f} KB mean, {max(sizes) / 1024:.0f} KB max; "
            f"drawn in {1000 * statistics.mean(times):.0f} ms mean, {1000 * max(times):.0f} ms "
            f"max; PNG {statistics.mean(pngs) / 1024:.1f} KB"
        )
    print(load())


if __name__ == "__main__":
    main()
