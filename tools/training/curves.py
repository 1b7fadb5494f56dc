"""Learning curves: evaluation rows appended to a CSV, read back, and drawn to a PNG."""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from typing import Any


def append_csv(path: str, row: Mapping[str, Any]) -> None:
    """Append an evaluation row (header first if the file is new or empty)."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


def read_csv(path: str) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def plot_curves(rows: Sequence[Mapping[str, Any]], path: str, title: str) -> None:
    """Learning curves (learner score against each evaluation opponent) to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [k[: -len("_score")] for k in rows[0] if k.endswith("_score")] if rows else []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [int(r["games"]) for r in rows]
    for label in labels:
        ax.plot(xs, [100 * float(r[f"{label}_score"]) for r in rows], marker="o", label=label)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("training games")
    ax.set_ylabel("learner score % (win 1, draw 1/2)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
