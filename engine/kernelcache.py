"""Where numba keeps the engine's compiled kernels, and which of them are out of date.

numba's own cache has two faults for this engine. It checks only the source of the file that
defines a kernel: a kernel that calls (or inlines) a function of another file went on running
the old machine code after an update that changed only that other file (the pattern evaluation
sped up 4x in `patterns.py` while the search in `minimax.py` kept the old copy). And it keeps
the code beside the source, or in a folder named after the source's absolute path, so every
clone compiled everything again.

So the engine's kernels are cached once per user, in `CACHE` (platformdirs'
`user_cache_dir("boardbot")/kernels`, or `$NUMBA_CACHE_DIR/kernels`), in one folder per module
and version of its code: `engine.games.c4kernels-<digest>`, where the digest covers the module's
source and the source of every engine module it imports, directly or not (a kernel can only
call what its module imports). An update recompiles exactly the modules whose code or callees
changed; another clone of the same version finds them compiled. Older versions of a module are
deleted when a new one is made, beyond the newest `KEEP`.

`install()` hands this to numba (`engine/games/bits.py` calls it before any kernel is made).
The rest of this module imports neither numba nor numpy. The warm-up notes here what it
finished (`mark`, `marked`), which is how the engine pool knows at start what will compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import platformdirs

ENGINE = Path(__file__).resolve().parent
#: The package the engine's imports are resolved in (`engine.x.y` is ROOT/engine/x/y.py).
PACKAGE_ROOT = ENGINE.parent
CACHE = Path(os.environ.get("NUMBA_CACHE_DIR") or platformdirs.user_cache_dir("boardbot")) / (
    "kernels"
)
#: Versions of one module's kernels kept (two clones on different versions both stay warm).
KEEP = 3
#: Where the warm-up notes what it finished (`mark`, `marked`).
_MARKS = "warmed"
#: What the cache of an older version of this engine left in the source tree.
_OLD_STAMP = Path("__pycache__") / "kernels.stamp"


def module_name(path: Path, root: Path = PACKAGE_ROOT) -> str:
    """`engine/games/bits.py` -> `engine.games.bits` (a package's `__init__.py` -> the package)."""
    parts = list(path.resolve().relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_file(name: str, root: Path) -> Path | None:
    return _modules(root).get(name)


@cache
def _modules(root: Path) -> dict[str, Path]:
    """Every module of the packages under `root` the engine can import (by dotted name)."""
    out: dict[str, Path] = {}
    root = root.resolve()
    for package in root.iterdir():
        if (package / "__init__.py").is_file():
            for path in package.rglob("*.py"):
                parts = list(path.relative_to(root).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                out[".".join(parts)] = path
    return out


#: An import statement (a scan of the text: parsing every module costs a start 0.3 s).
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)|import[ \t]+([^\n#]*))",
    re.MULTILINE,
)


@cache
def imports_of(path: Path, root: Path = PACKAGE_ROOT) -> frozenset[Path]:
    """The files under `root` that the module at `path` imports (every import statement,
    wherever it is; `from a import b` counts `a` and, if it is a module, `a.b`)."""
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package.pop()
    names: set[str] = set()
    for base, items, plain in _IMPORT.findall(path.read_text(encoding="utf-8")):
        if plain:
            names.update(item.split()[0] for item in plain.split(",") if item.strip())
            continue
        level = len(base) - len(base.lstrip("."))
        if level:
            base = ".".join([*package[: len(package) - level + 1], base[level:]]).strip(".")
        names.add(base)
        for item in items.strip("()").replace("\\", " ").split(","):
            if item.split():
                names.add(f"{base}.{item.split()[0]}")
    found: set[Path] = set()
    for name in names:
        parts = name.split(".")  # a package's __init__ runs on the way to its submodule
        for i in range(1, len(parts) + 1):
            file = _module_file(".".join(parts[:i]), root)
            if file is not None:
                found.add(file)
    found.discard(path.resolve())
    return frozenset(found)


@cache
def module_digest(path: Path, root: Path = PACKAGE_ROOT) -> str:
    """A digest of the module at `path` and of every module under `root` it imports, directly
    or not (names and contents)."""
    seen: set[Path] = set()
    todo = [path.resolve()]
    while todo:
        file = todo.pop()
        if file not in seen:
            seen.add(file)
            todo.extend(imports_of(file, root))
    digest = hashlib.sha256()
    for file in sorted(seen):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0" + _file_digest(file))
    return digest.hexdigest()


@cache
def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def cache_folder(path: Path, root: Path = PACKAGE_ROOT, cache_dir: Path = CACHE) -> Path:
    """The folder that holds the kernels of the module at `path`, as its code is now."""
    return cache_dir / f"{module_name(path, root)}-{module_digest(path, root)[:20]}"


def prune(folder: Path, keep: int = KEEP) -> None:
    """Delete the folders of older versions of `folder`'s module, beyond the newest `keep`."""
    module = folder.name.rpartition("-")[0]
    try:
        others = [p for p in folder.parent.glob(f"{module}-*") if p.is_dir() and p != folder]
        others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in others[max(0, keep - 1) :]:
        shutil.rmtree(old, ignore_errors=True)


# -- notes of what the warm-up finished -------------------------------------------------------


def _mark_file(key: str, cache_dir: Path) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
    return cache_dir / _MARKS / f"{safe}.json"


def mark(key: str, paths: list[Path], cache_dir: Path = CACHE) -> None:
    """Note that everything `key` (a step of the warm-up) needs from the modules at `paths` and
    their imports is compiled, as their code is now."""
    digests = {module_name(p): module_digest(p) for p in paths}
    target = _mark_file(key, cache_dir)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f"{target.name}.{os.getpid()}")
        part.write_text(json.dumps(digests, sort_keys=True), encoding="utf-8")
        part.replace(target)  # atomic: a process reading meanwhile sees the old or the new
    except OSError:  # a cache that cannot be written: only the estimates are worse
        pass


def marked(key: str, cache_dir: Path = CACHE) -> bool:
    """Whether `mark(key, ...)` was called since the code of its modules (or of what they
    import) last changed."""
    try:
        digests = json.loads(_mark_file(key, cache_dir).read_text(encoding="utf-8"))
        for name, digest in digests.items():
            path = _module_file(name, PACKAGE_ROOT)
            if path is None or module_digest(path) != digest:
                return False
        return bool(digests)
    except (OSError, ValueError, AttributeError, SyntaxError):
        return False


# -- numba's side ------------------------------------------------------------------------------

_installed: list[tuple[Path, Path]] = []  # (package root, cache folder) pairs installed


def install(root: Path = PACKAGE_ROOT, cache_dir: Path = CACHE, package: str = "engine") -> None:
    """Make numba cache the kernels of the files under `root/package` in `cache_dir`, as this
    module's docstring says (idempotent; imports numba)."""
    from numba.core import caching

    key = (root.resolve(), cache_dir)
    scope = (root / package).resolve()
    if key in _installed:
        return
    _installed.append(key)
    if scope == ENGINE:
        _forget_in_tree(ENGINE)

    class Locator(caching._CacheLocator):
        """The engine's kernels: one folder per module and version, a content stamp."""

        def __init__(self, py_func: Any, py_file: str) -> None:
            self._py_file = Path(py_file).resolve()
            self._lineno = py_func.__code__.co_firstlineno
            self._folder = cache_folder(self._py_file, key[0], cache_dir)

        def ensure_cache_path(self) -> None:
            fresh = not self._folder.is_dir()
            super().ensure_cache_path()  # type: ignore[no-untyped-call]
            if fresh:  # a new version of this module: older ones can go
                prune(self._folder)

        def get_cache_path(self) -> str:
            return str(self._folder)

        def get_source_stamp(self) -> str:
            return module_digest(self._py_file, key[0])

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Locator | None:
            path = Path(py_file)
            if not path.is_file() or not path.resolve().is_relative_to(scope):
                return None
            locator = cls(py_func, py_file)
            try:
                locator.ensure_cache_path()
            except OSError:  # cannot be written: numba's own places, or no cache
                return None
            return locator

    impl: Any = getattr(caching, "CacheImpl", None) or vars(caching)["_CacheImpl"]  # (<0.61)
    impl._locator_classes.insert(0, Locator)


def _forget_in_tree(root: Path) -> None:
    """Delete what an older version's cache left in the source tree (once: it goes with its
    stamp), so no stale copy lies about."""
    stamp = root / _OLD_STAMP
    if not stamp.exists():
        return
    try:
        for old in [*root.rglob("__pycache__/*.nbi"), *root.rglob("__pycache__/*.nbc")]:
            old.unlink(missing_ok=True)
        stamp.unlink(missing_ok=True)
    except OSError:
        pass
