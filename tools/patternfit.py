"""`python -m tools othello-eval`: the Othello pattern weights built from labelled self-play
games (`engine.agents.othello.pattern_fit`), played on worker processes and written in chunks
as they come (``<out>.parts/``), so a rerun goes on where it stopped; then the fit writes the
weights.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.agents.othello.pattern_fit import fit, play_game
from tools.pool import as_done, pool

CHUNK = 250  # games per work file
HOLD_OUT = 10  # one game in this many is kept out of the fit to measure it
MIN_GAMES = HOLD_OUT  # fewer games hold none out: the fit could not be measured


def _chunk(first: int, count: int, path: str) -> int:
    parts = [play_game(first + g) for g in range(count)]
    np.savez_compressed(
        path,
        me=np.concatenate([p[0] for p in parts]),
        opp=np.concatenate([p[1] for p in parts]),
        label=np.concatenate([p[2] for p in parts]),
        game=np.concatenate([np.full(len(p[0]), first + g) for g, p in enumerate(parts)]),
    )
    return count


def generate(
    out: Path, games: int, workers: int, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Play `games` labelled games in chunks under ``<out>.parts`` (existing chunks count)."""
    parts = out.with_suffix(out.suffix + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    todo = [
        c for c in range(0, games, CHUNK) if not (parts / f"chunk-{c // CHUNK:05d}.npz").exists()
    ]
    done = games - sum(min(CHUNK, games - c) for c in todo)
    if progress:
        progress(done, games)
    jobs = [(c, min(CHUNK, games - c), str(parts / f"chunk-{c // CHUNK:05d}.npz")) for c in todo]
    with pool(workers) as executor:
        for count in as_done(executor, _chunk, jobs):
            done += count
            if progress:
                progress(done, games)
    return parts


Positions = tuple[
    npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.float32], npt.NDArray[np.int64]
]


def load_positions(parts: Path, games: int) -> Positions:
    """(mover's discs, opponent's, label, game number) of every position of the chunks."""
    files = [parts / f"chunk-{c // CHUNK:05d}.npz" for c in range(0, games, CHUNK)]
    cols: dict[str, list[npt.NDArray[np.generic]]] = {"me": [], "opp": [], "label": [], "game": []}
    for f in files:
        with np.load(f) as data:
            for key, got in cols.items():
                got.append(data[key])
    return (
        np.concatenate(cols["me"]).astype(np.uint64),
        np.concatenate(cols["opp"]).astype(np.uint64),
        np.concatenate(cols["label"]).astype(np.float32),
        np.concatenate(cols["game"]).astype(np.int64),
    )


def build(out: Path, games: int, workers: int = os.cpu_count() or 1) -> list[float]:
    """Generate (resumably) and fit; write the weights to `out`."""
    if games < MIN_GAMES:
        raise ValueError(
            f"--games must be at least {MIN_GAMES}: one game in {HOLD_OUT} is held out to "
            "measure the fit"
        )
    t0 = time.monotonic()

    def bar(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(1, total)
        rate = done / max(1e-9, time.monotonic() - t0)
        print(
            f"\rgames [{'#' * filled}{'.' * (width - filled)}] {done}/{total} ({rate:.0f}/s)",
            end="",
            file=sys.stderr,
            flush=True,
        )

    parts = generate(out, games, workers, bar)
    print(file=sys.stderr)
    me, opp, label, game = load_positions(parts, games)
    held_out = game % HOLD_OUT == HOLD_OUT - 1  # every tenth game checks the fit
    weights, errors = fit(me, opp, label, held_out, lambda line: print(line, file=sys.stderr))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, weights=weights, games=np.int64(games), errors=np.array(errors))
    tmp.replace(out)
    return errors
