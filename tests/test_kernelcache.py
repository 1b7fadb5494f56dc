"""numba's cache and updates: a kernel whose callee lives in another file kept the old machine
code after that file changed; the engine drops its cached kernels when its source changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.kernelcache import drop_stale_kernels, is_stale

CALLEE = "from numba import njit\n\n@njit(cache=True)\ndef value():\n    return {n}\n"
KERNEL = (
    "from numba import njit\nfrom pkg.callee import value\n\n"
    "@njit(cache=True)\ndef kernel():\n    return value() * 10\n"
)
RUN = (
    "import sys; sys.path.insert(0, {root!r})\n"
    "from engine.kernelcache import drop_stale_kernels\n"
    "from pathlib import Path\n"
    "if {drop}: drop_stale_kernels(Path({root!r}) / 'pkg')\n"
    "from pkg.kernel import kernel\nprint(kernel())\n"
)


def _run(root: Path, drop: bool) -> int:
    code = RUN.format(root=str(root), drop=drop)
    engine_root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=engine_root, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1])


def _update(root: Path, n: int) -> None:
    callee = root / "pkg" / "callee.py"
    callee.write_text(CALLEE.format(n=n))


def test_a_changed_callee_reaches_a_cached_kernel_only_with_the_stamp(tmp_path: Path) -> None:
    for drop, root in ((False, tmp_path / "plain"), (True, tmp_path / "stamped")):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
        (root / "pkg" / "kernel.py").write_text(KERNEL)
        _update(root, 1)
        assert _run(root, drop) == 10
        _update(root, 2)  # an update that changes only the callee's file
        # numba alone keeps the old machine code (why engine/kernelcache.py exists) ...
        assert _run(root, drop) == (20 if drop else 10)


def test_the_stamp_drops_kernels_once_per_change(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    cache = tmp_path / "sub" / "__pycache__"
    cache.mkdir(parents=True)
    (tmp_path / "sub" / "b.py").write_text("y = 1\n")
    kept = cache / "b.cpython-311.pyc"
    for name in ("b.k-1.py311.nbi", "b.k-1.py311.1.nbc", "b.cpython-311.pyc"):
        (cache / name).write_bytes(b"x")
    assert is_stale(tmp_path) and drop_stale_kernels(tmp_path)
    assert sorted(p.name for p in cache.iterdir()) == [kept.name]  # only numba's files go
    assert not is_stale(tmp_path) and not drop_stale_kernels(tmp_path)
    (cache / "b.k-1.py311.nbi").write_bytes(b"x")
    assert not drop_stale_kernels(tmp_path)  # same source: the cache stays
    assert (cache / "b.k-1.py311.nbi").exists()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    assert is_stale(tmp_path) and drop_stale_kernels(tmp_path)
    assert not (cache / "b.k-1.py311.nbi").exists()


def test_the_engine_checks_its_stamp_before_any_kernel_runs() -> None:
    import engine.games.bits  # noqa: F401 - what every kernel module imports first

    assert not is_stale()
