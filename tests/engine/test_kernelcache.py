"""numba's cache and updates: a kernel whose callee lives in another file kept the old machine
code after that file changed, and every clone compiled everything again. The engine caches its
kernels once per user, one folder per module and version of the module and of what it imports
(engine/kernelcache.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import kernelcache
from engine.kernelcache import cache_folder, imports_of, mark, marked, module_digest, prune

ROOT = Path(__file__).resolve().parents[2]

CALLEE = "from numba import njit\n\n@njit(cache=True)\ndef value():\n    return {n}\n"
KERNEL = (
    "from numba import njit\nfrom pkg.callee import value\n\n"
    "@njit(cache=True)\ndef kernel():\n    return value() * 10\n"
)
RUN = (
    "import sys; sys.path.insert(0, {root!r})\n"
    "from pathlib import Path\n"
    "from engine import kernelcache\n"
    "if {install}: kernelcache.install(Path({root!r}), Path({cache!r}), package='pkg')\n"
    "from pkg.kernel import kernel\n"
    "print(kernel(), kernel.stats.cache_hits.get((), 0))\n"
)


def _run(root: Path, cache: Path, install: bool) -> tuple[int, int]:
    """(the kernel's value, whether it was loaded from the cache) in a fresh process."""
    code = RUN.format(root=str(root), cache=str(cache), install=install)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    value, hits = proc.stdout.split()[-2:]
    return int(value), int(hits)


def _package(root: Path, n: int = 1) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "kernel.py").write_text(KERNEL)
    (root / "pkg" / "callee.py").write_text(CALLEE.format(n=n))
    return root


def test_a_changed_callee_reaches_a_cached_kernel_only_with_the_engines_cache(
    tmp_path: Path,
) -> None:
    for install in (False, True):
        root = _package(tmp_path / f"clone-{install}")
        cache = tmp_path / f"cache-{install}"
        assert _run(root, cache, install) == (10, 0)
        assert _run(root, cache, install) == (10, 1)  # loaded, not compiled
        (root / "pkg" / "callee.py").write_text(CALLEE.format(n=2))  # only the callee changes
        # numba alone keeps the old machine code (why engine/kernelcache.py exists) ...
        assert _run(root, cache, install)[0] == (20 if install else 10)


def test_another_clone_of_the_same_code_loads_what_the_first_compiled(tmp_path: Path) -> None:
    first, second = _package(tmp_path / "a"), tmp_path / "elsewhere" / "b"
    cache = tmp_path / "cache"
    assert _run(first, cache, True) == (10, 0)
    shutil.copytree(first, second)
    os.utime(second / "pkg" / "kernel.py", (1, 1))  # a clone's files have other times
    assert _run(second, cache, True) == (10, 1)
    (second / "pkg" / "callee.py").write_text(CALLEE.format(n=3))  # an update of one clone
    assert _run(second, cache, True) == (30, 0)
    assert _run(first, cache, True) == (10, 1)  # the other keeps its own version


def test_the_digest_covers_what_a_module_imports_and_nothing_else(tmp_path: Path) -> None:
    root = _package(tmp_path)
    (root / "pkg" / "other.py").write_text("x = 1\n")
    (root / "pkg" / "rel.py").write_text("from . import callee\nfrom .other import (\n x,\n)\n")
    kernel, callee = root / "pkg" / "kernel.py", root / "pkg" / "callee.py"
    rel, other = root / "pkg" / "rel.py", root / "pkg" / "other.py"
    assert imports_of(kernel, root) == {callee.resolve(), (root / "pkg/__init__.py").resolve()}
    assert {p.name for p in imports_of(rel, root)} == {"__init__.py", "callee.py", "other.py"}
    before = module_digest(kernel, root)
    for cached in (module_digest, imports_of, kernelcache._file_digest, kernelcache._modules):
        cached.cache_clear()
    other.write_text("x = 2\n")  # not imported by the kernel's module
    assert module_digest(kernel, root) == before
    for cached in (module_digest, imports_of, kernelcache._file_digest, kernelcache._modules):
        cached.cache_clear()
    callee.write_text(CALLEE.format(n=5))
    after = module_digest(kernel, root)
    assert after != before
    assert cache_folder(kernel, root, tmp_path).name == f"pkg.kernel-{after[:20]}"


def test_older_versions_of_a_module_are_pruned(tmp_path: Path) -> None:
    folders = []
    for i in range(5):
        folder = tmp_path / f"engine.games.bits-{i:020d}"
        folder.mkdir()
        os.utime(folder, (i, i))
        folders.append(folder)
    (tmp_path / "engine.games.c4kernels-0").mkdir()  # another module: not touched
    prune(folders[-1], keep=3)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [
        "engine.games.bits-00000000000000000002",
        "engine.games.bits-00000000000000000003",
        "engine.games.bits-00000000000000000004",
        "engine.games.c4kernels-0",
    ]


def test_a_note_holds_until_its_modules_change(tmp_path: Path) -> None:
    bits = kernelcache.ENGINE / "games" / "bits.py"
    assert not marked("a-step", tmp_path)
    mark("a-step", [bits], tmp_path)
    assert marked("a-step", tmp_path)
    note = tmp_path / "warmed" / "a-step.json"
    note.write_text(note.read_text().replace('": "', '": "0'))  # as if the code had changed
    assert not marked("a-step", tmp_path)
    note.write_text("not json")
    assert not marked("a-step", tmp_path)


def test_the_engine_caches_its_kernels_in_the_user_cache_folder() -> None:
    from engine.games import bits

    kernel: Any = bits.popcount
    folder = Path(kernel._cache._cache_path)
    assert folder.parent == kernelcache.CACHE
    assert folder.name.startswith("engine.games.bits-")
    assert not any((kernelcache.ENGINE / "games" / "__pycache__").glob("*.nbi"))


@pytest.mark.parametrize("jit", [True, False])
def test_a_typed_kernel_compiles_on_first_use_and_only_its_signature(jit: bool) -> None:
    """Nothing compiles at import (a process compiles only what it runs), and with numba's
    JIT off every kernel, the hardware bit counts included, runs as plain Python."""
    code = (
        "import numpy as np\n"
        "from engine.agents.othello import endgame as eg\n"
        "from engine.games import bits\n"
        "if hasattr(eg._sort_search, 'signatures'):\n"
        "    assert not eg._sort_search.signatures\n"
        "x = np.uint64(0b101100)\n"
        "print(bits.popcnt(x), bits.lsb_index(x), bits.msb_index(x), bits.popcount(x))\n"
        "print(eg.legal_mask(np.uint64(0x0000000810000000), np.uint64(0x0000001008000000)))\n"
    )
    env = dict(os.environ)
    if not jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["3", "2", "5", "3", str(0x0000102004080000)]


WATCHED = (
    "import sys; sys.path.insert(0, {root!r})\n"
    "from pathlib import Path\n"
    "from engine import kernelcache\n"
    "from engine.warm import CompileWatch\n"
    "kernelcache.install(Path({root!r}), Path({cache!r}), package='pkg')\n"
    "ends = []\n"
    "watch = CompileWatch(on_end=ends.append).install()\n"
    "from pkg.kernel import kernel\n"
    "kernel()\n"
    "print(watch.count, watch.loads, ends.count(None))\n"
)


def test_a_load_from_the_cache_is_an_event_of_its_own_and_no_compile(tmp_path: Path) -> None:
    """A job's cap waits for loads as for compiles (the engine pool hears of both), but only a
    compile makes a decision think again."""
    root, cache = _package(tmp_path / "clone"), tmp_path / "cache"
    code = WATCHED.format(root=str(root), cache=str(cache))
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(tuple(map(int, proc.stdout.split()[-3:])))
    compiled, loaded = runs
    assert compiled[:2] == (1, 0)  # one chain compiled (the kernel and its callee), no load
    assert loaded == (0, 1, 1)  # one chain loaded both, and said so as a load


NAMED = (
    "import sys; sys.path.insert(0, {root!r})\n"
    "from pathlib import Path\n"
    "from engine import kernelcache\n"
    "from engine.warm import CompileWatch\n"
    "kernelcache.install(Path({root!r}), Path({cache!r}), package='pkg')\n"
    "ready = []\n"
    "CompileWatch(on_kernel=lambda *kernel: ready.append(kernel), package='pkg').install()\n"
    "from pkg.kernel import kernel\n"
    "kernel()\n"
    "print(ready)\n"
)


def test_each_kernel_compiled_or_loaded_is_heard_of_by_name_and_signature(
    tmp_path: Path,
) -> None:
    """The warm-up's progress counts kernels: a compile names the kernel and its callee (each
    compiled), a load from the cache the kernel alone (it holds its callee's machine code)."""
    root, cache = _package(tmp_path / "clone"), tmp_path / "cache"
    code = NAMED.format(root=str(root), cache=str(cache))
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(proc.stdout.strip().splitlines()[-1])
    assert runs[0] == "[('pkg.callee.value()', True), ('pkg.kernel.kernel()', True)]"
    assert runs[1] == "[('pkg.kernel.kernel()', False)]"
