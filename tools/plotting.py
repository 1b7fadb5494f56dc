"""matplotlib is an optional extra (`plots`): only the tools draw (`arena --plot`, `train
--plot`, the benchmarks), never the bot, so a plain install goes without it. A tool asked to draw
checks first, and says in one line what to install instead of failing after a long run. The
same goes for the file name: a wrong suffix or a missing folder is said before the work."""

from __future__ import annotations

import importlib.util
from pathlib import Path

INSTALL = "pip install -e '.[plots]'"


def missing_matplotlib(option: str = "--plot") -> str | None:
    """The one-line problem when matplotlib is not installed, None when it is."""
    if importlib.util.find_spec("matplotlib") is None:
        return f"{option} needs matplotlib, an optional extra: {INSTALL}"
    return None


def file_problem(option: str, path: str, suffix: str | None = None) -> str | None:
    """The one-line problem with writing a file to `path`, None if there is none: its folder
    must exist and, given a `suffix` (".gif"), the name must end in it (the content is that
    format, whatever the name says)."""
    if suffix is not None and Path(path).suffix.lower() != suffix:
        kind = suffix[1:].upper()
        return f"{option} writes a {kind} file: give a name ending in {suffix}, not {path}"
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        return f"{option}: the folder {folder} does not exist"
    return None


def plot_problem(path: str, option: str = "--plot") -> str | None:
    """The one-line problem with drawing a PNG to `path` (its name, its folder, matplotlib)."""
    return file_problem(option, path, ".png") or missing_matplotlib(option)
