"""The weight grid's two learning rules side by side, through the `train` command itself.

    python -m benchmarks.strength.weightgrid [--out docs/learning] [--games 5000] [--seed 0]

Trains `weightgrid:rule=seed` and `weightgrid:rule=regression` by plain self-play with the same
command (one process, `--workers 1`, so each run is reproducible), each into its own memory of a
scratch database deleted first, evaluating every 500 games: 400 games against greedy-random as
the agent plays (the grid on one move in five), against random, and with the grid on every move
against greedy-random (`capture=1`, the line the issue's target is about).

Writes in `--out`: ``weightgrid-seed.csv/.png``, ``weightgrid-regression.csv/.png``,
``weightgrid-rules.png`` (both capture=1 curves on one chart), the learned regression grid as
``weightgrid-regression-grid.png`` and ``.txt``, and the command lines, wall times and the
summary lines of each run in ``weightgrid-runs.txt``.
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

RULES = ("seed", "regression")
CAPTURE_1 = "greedy-random(capture=1)_score"


def shown(path: Path) -> str:
    """`path` relative to the repository when inside it (the commands run from its root)."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def train(out: Path, scratch: Path, rule: str, games: int, seed: int) -> tuple[str, Path]:
    """One training run; its log text and database."""
    name = f"weightgrid-{rule}"
    db = scratch / f"{name}.db"
    for old in scratch.glob(f"{name}.db*"):
        old.unlink()  # every run starts from an empty memory
    csv = out / f"{name}.csv"
    if csv.exists():
        csv.unlink()
    cmd = [
        sys.executable, "-m", "tools", "train", "--game", "othello",
        "--agent", f"weightgrid:rule={rule}", "--memory", name, "--games", str(games),
        "--db", shown(db), "--csv", shown(csv), "--plot", shown(out / f"{name}.png"),
        "--eval-every", "500", "--eval-games", "400", "--checkpoint", "500",
        "--workers", "1", "--seed", str(seed),
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    summary = proc.stdout.strip().splitlines()[-2:]
    return f"$ python {' '.join(cmd[1:])}\n# {elapsed:.1f} s wall\n" + "\n".join(summary) + "\n", db


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "docs" / "learning"))
    parser.add_argument("--games", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scratch",
        default=str(Path(tempfile.gettempdir()) / "bench_weightgrid"),
        help="directory for the scratch databases (one per rule, recreated each time)",
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)

    from engine.agents.othello.weightgrid import (
        GRID_KEY,
        decode_grid,
        normalised_grid,
        render_grid_text,
    )
    from tools.gridpicture import render_grid_png
    from tools.train_cli import StoreBackend
    from tools.training import plot_curves, read_csv

    log = []
    dbs = {}
    for rule in RULES:
        print(f"rule={rule} ...", flush=True)
        text, dbs[rule] = train(out, scratch, rule, args.games, args.seed)
        log.append(text)
        print(text, flush=True)

    curves = {rule: read_csv(str(out / f"weightgrid-{rule}.csv")) for rule in RULES}
    merged = [
        {"games": row["games"], **{f"rule={r}_score": curves[r][i][CAPTURE_1] for r in RULES}}
        for i, row in enumerate(curves[RULES[0]])
    ]
    plot_curves(
        merged, str(out / "weightgrid-rules.png"), "learned grid on every move vs greedy-random"
    )

    store = StoreBackend(str(dbs["regression"]))
    try:
        rows, games_done = store.load("weightgrid", "weightgrid-regression")
    finally:
        store.close()
    grid = decode_grid(rows.get(GRID_KEY))
    title = f"regression grid, {games_done} games"
    render_grid_png(grid, str(out / "weightgrid-regression-grid.png"), title)
    norm = normalised_grid(grid)
    numbers = "\n".join(" ".join(f"{v:+.2f}" for v in norm[rank]) for rank in range(7, -1, -1))
    text = render_grid_text(grid) + "\n\n" + numbers
    (out / "weightgrid-regression-grid.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    with open(out / "weightgrid-runs.txt", "a", encoding="utf-8") as f:
        f.write(f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores\n")
        f.write("\n".join(log) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
