"""Drop numba's cached kernels when the engine's source changed.

numba keeps each kernel's machine code beside its source (`__pycache__/*.nbi`, `*.nbc`) and
checks only the timestamp of the file that defines the kernel. A kernel that calls (or inlines)
a function from another file would go on running the old machine code after an update that
changed only that other file: the pattern evaluation sped up 4x in `patterns.py` but the search
in `minimax.py` kept the old copy. So the cache is tied to the whole engine's source: a digest of
every `.py` file under `engine/` is kept in `engine/__pycache__/kernels.stamp`, and when it
differs every cached kernel is deleted (the next calls compile, as on a first run).

`engine/games/bits.py`, which every kernel module imports, calls `drop_stale_kernels()` before
any kernel runs. This module imports neither numba nor numpy: `bot.py` asks it whether a run
will compile before showing its first screen.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

ENGINE = Path(__file__).resolve().parent
STAMP = Path("__pycache__") / "kernels.stamp"


def source_digest(root: Path = ENGINE) -> str:
    """A digest of every Python file under `root` (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def is_stale(root: Path = ENGINE) -> bool:
    """Whether the cached kernels under `root` (if any) were built from other source."""
    try:
        return (root / STAMP).read_text(encoding="ascii").strip() != source_digest(root)
    except OSError:
        return True


def drop_stale_kernels(root: Path = ENGINE) -> bool:
    """Delete the cached kernels under `root` if its source changed since they were cached,
    and note the current source; whether anything was dropped. A tree that cannot be written
    (an installed copy) is left alone: numba then caches elsewhere, or not at all."""
    if not is_stale(root):
        return False
    try:
        for cached in [*root.rglob("__pycache__/*.nbi"), *root.rglob("__pycache__/*.nbc")]:
            cached.unlink(missing_ok=True)
        stamp = root / STAMP
        stamp.parent.mkdir(exist_ok=True)
        part = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        part.write_text(source_digest(root), encoding="ascii")
        part.replace(stamp)  # atomic: a process starting meanwhile reads the old or the new
    except OSError:
        return False
    return True
