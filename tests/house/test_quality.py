"""The repo's promises about style and shape: ruff (lint and format), mypy (strict everywhere) and
the layers (import-linter's contracts in pyproject.toml)."""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_lint_is_clean() -> None:
    proc = run("ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = run("ruff", "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    packages = ("engine", "tools", "db", "lobby", "cogs", "boot", "console")
    proc = run("mypy", *packages, "bot.py", "faults.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_hold() -> None:
    """Front ends over the lobby over the engine and the store, and no import cycle."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_no_import_cycle_type_only_imports_included() -> None:
    """No module of the packages import-linter checks, nor bot.py or faults.py, reaches itself
    through imports, those under TYPE_CHECKING included (a type-only import ties two modules
    as much as any other: neither can be read, moved or tested without the other). Each cycle
    found is printed with the import lines that make it."""
    imports, lines_of = module_imports()
    groups = sorted(sorted(g) for g in strongly_connected(imports) if len(g) > 1)
    lines = []
    for group in groups:
        cycle = shortest_cycle(imports, set(group))
        lines.append(" -> ".join([*cycle, cycle[0]]) + f"   (tied in it: {', '.join(group)})")
        lines += [f"    {lines_of(a, b)}" for a, b in itertools.pairwise([*cycle, cycle[0]])]
    assert {"bot", "faults", "cogs.client", "lobby.core"} <= imports.keys()
    assert not groups, f"{len(groups)} import cycles:\n" + "\n".join(lines)


def module_imports() -> tuple[dict[str, set[str]], Callable[[str, str], str]]:
    """Every module of the repository (the packages import-linter checks, and the modules at
    its top) with the modules of it that it imports, TYPE_CHECKING imports included; and
    where an import is written. grimp builds packages: a top module's imports are read here."""
    import grimp

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    graph = grimp.build_graph(
        *settings["root_packages"],
        include_external_packages=True,  # the packages' imports of the top modules
        exclude_type_checking_imports=False,
    )
    tops = {path.stem: path for path in ROOT.glob("*.py")}
    nodes = {m for m in graph.modules if not graph.is_module_squashed(m)} | tops.keys()
    imports = {m: graph.find_modules_directly_imported_by(m) & nodes for m in nodes - tops.keys()}
    written: dict[tuple[str, str], str] = {}
    for name, path in tops.items():
        imports[name] = set()
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                wanted = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for dotted in wanted:
                found = known_start(dotted, nodes)
                if found is not None and found != name:
                    imports[name].add(found)
                    line = text.splitlines()[node.lineno - 1].strip()
                    written[name, found] = f"{path.name}:{node.lineno}: {line}"

    def lines_of(importer: str, imported: str) -> str:
        if (importer, imported) in written:
            return written[importer, imported]
        details = graph.get_import_details(importer=importer, imported=imported)
        return "; ".join(f"{importer}:{d['line_number']}: {d['line_contents']}" for d in details)

    return imports, lines_of


def known_start(dotted: str, nodes: set[str]) -> str | None:
    """The longest start of `dotted` that is one of `nodes` (`from a import b` imports `a.b`
    if that is a module, else `a`); None if it is not the repository's."""
    parts = dotted.split(".")
    starts = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
    return next((start for start in starts if start in nodes), None)


def strongly_connected(imports: dict[str, set[str]]) -> list[set[str]]:
    """The graph's strongly connected components (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(imports[root])))]
        while work:
            node, todo = work[-1]
            nxt = next((m for m in todo if m in imports), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(imports[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def shortest_cycle(imports: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the first module of a strongly connected `group`; the module
    alone if it imports itself or nothing of the group (no cycle through two modules)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(imports[node] & group):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return [start]


def test_the_cycle_finder_finds_cycles() -> None:
    """The check above can fail: a cycle is found, and shown by a shortest path around it."""
    imports = {"a": {"b"}, "b": {"c", "a2"}, "c": {"a", "d"}, "a2": {"a"}, "d": set()}
    groups = strongly_connected(imports)
    assert sorted(map(sorted, groups)) == [["a", "a2", "b", "c"], ["d"]]
    assert shortest_cycle(imports, {"a", "a2", "b", "c"}) == ["a", "b", "a2"]
    assert shortest_cycle(imports, {"d"}) == ["d"]
    assert known_start("lobby.core.Lobby", {"lobby", "lobby.core"}) == "lobby.core"
    assert known_start("os.path", {"lobby", "lobby.core"}) is None
