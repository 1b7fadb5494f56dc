"""Learning curves of the learning agents, through the `train` command itself.

    python -m benchmarks.strength.learning_curves [--out docs/learning] [--games 20000]
        [--othello-games 5000]

Runs, each into its own memory of a scratch database (never the bot's):

* ``trainer``: the default trainer, default training (explorer vs greedy copy of itself),
  evaluated every 2000 games against random, onestep and its untrained self (400 games each,
  greedy, seeded openings, colours alternated);
* ``trainer-selfplay``: the same agent trained by plain self-play (both seats explore), to show
  why the default mix was chosen;
* ``trainer-zero``: the faithful ``prior=zero`` trainer (unseen boards: all weights 0);
* ``weightgrid``: seed 001's learned weight grid, 5000 self-play games, against greedy-random.

Each run trains memory NAME in its own scratch database, deleted first: runs start untrained.

Each run writes ``NAME.csv`` and ``NAME.png`` in `--out` (plus ``weightgrid-grid.png`` and the
grid as text), and the command lines and wall times go to ``runs.txt``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(out: Path, db: Path, name: str, game: str, agent: str, games: int, *extra: str) -> str:
    csv = out / f"{name}.csv"
    if csv.exists():
        csv.unlink()
    cmd = [
        sys.executable, "-m", "tools", "train", "--game", game, "--agent", agent,
        "--memory", name, "--games", str(games), "--db", str(db), "--csv", str(csv),
        "--plot", str(out / f"{name}.png"), *extra,
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    summary = proc.stdout.strip().splitlines()[-2:]
    return f"$ {' '.join(cmd[1:])}\n# {elapsed:.1f} s wall\n" + "\n".join(summary) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "docs" / "learning"))
    parser.add_argument("--games", type=int, default=20000)
    parser.add_argument("--othello-games", type=int, default=5000)
    parser.add_argument("--eval-games", type=int, default=400)
    parser.add_argument("--only", default=None, help="comma-separated run names")
    parser.add_argument(
        "--scratch",
        default=str(Path(tempfile.gettempdir()) / "train_curves"),
        help="directory for the scratch databases (one per run, recreated each time)",
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    common = ["--eval-every", "2000", "--eval-games", str(args.eval_games), "--checkpoint", "2000"]
    plans = {
        "trainer": ("connect4", "trainer", args.games, *common),
        "trainer-selfplay": ("connect4", "trainer", args.games, *common, "--opponent", "self"),
        "trainer-zero": ("connect4", "trainer:prior=zero", args.games, *common),
        "weightgrid": (
            "othello", "weightgrid", args.othello_games, "--eval-every", "500",
            "--eval-games", str(args.eval_games), "--checkpoint", "500",
        ),
    }  # fmt: skip
    wanted = args.only.split(",") if args.only else list(plans)
    log = []
    for name in wanted:
        game, agent, games, *extra = plans[name]
        print(f"{name} ...", flush=True)
        db = scratch / f"{name}.db"
        for old in scratch.glob(f"{name}.db*"):
            old.unlink()  # every run starts from an empty memory
        log.append(run(out, db, name, str(game), str(agent), int(games), *map(str, extra)))
        print(log[-1], flush=True)
    if "weightgrid" in wanted:
        from engine.agents.othello.weightgrid import (
            GRID_KEY,
            decode_grid,
            normalised_grid,
            render_grid_text,
        )
        from tools.gridpicture import render_grid_png
        from tools.train_cli import StoreBackend

        store = StoreBackend(str(scratch / "weightgrid.db"))
        try:
            rows, games_done = store.load("weightgrid", "weightgrid")
        finally:
            store.close()
        grid = decode_grid(rows.get(GRID_KEY))
        render_grid_png(grid, str(out / "weightgrid-grid.png"), f"learned grid, {games_done} games")
        norm = normalised_grid(grid)
        text = (
            render_grid_text(grid)
            + "\n\n"
            + "\n".join(" ".join(f"{v:+.2f}" for v in norm[rank]) for rank in range(7, -1, -1))
        )
        (out / "weightgrid-grid.txt").write_text(text + "\n", encoding="utf-8")
        print(text)
    with open(out / "runs.txt", "a", encoding="utf-8") as f:
        f.write(f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores\n")
        f.write("\n".join(log) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
