"""The weight grid of the `weightgrid` agent as a labelled heat map (a PNG, with matplotlib):
what the training tools and benchmarks draw."""

from __future__ import annotations

from engine.agents.othello.weightgrid import Grid, normalised_grid


def render_grid_png(grid: Grid, path: str, title: str = "weight grid (normalised)") -> None:
    """Draw the normalised grid as a labelled heat map (rank 8 on top) to a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = normalised_grid(grid)
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    image = ax.imshow(g[::-1], cmap="coolwarm", vmin=-1, vmax=1)
    ax.set_xticks(range(8), list("abcdefgh"))
    ax.set_yticks(range(8), [str(r) for r in range(8, 0, -1)])
    for r in range(8):
        for f in range(8):
            ax.text(f, 7 - r, f"{g[r, f]:+.2f}", ha="center", va="center", fontsize=7)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
