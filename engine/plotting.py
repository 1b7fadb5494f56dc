"""matplotlib is an optional extra (`plots`): only the tools draw (`arena --plot`, `train
--plot`, the benchmarks), never the bot, so a plain install goes without it. A tool asked to draw
checks first, and says in one line what to install instead of failing after a long run."""

from __future__ import annotations

import importlib.util

INSTALL = "pip install -e '.[plots]'"


def missing_matplotlib(option: str = "--plot") -> str | None:
    """The one-line problem when matplotlib is not installed, None when it is."""
    if importlib.util.find_spec("matplotlib") is None:
        return f"{option} needs matplotlib, an optional extra: {INSTALL}"
    return None
