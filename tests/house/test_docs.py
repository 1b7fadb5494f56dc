"""The documents code points at exist: docs/architecture.md and the sections named in comments."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tools import housemap

ROOT = Path(__file__).resolve().parents[2]
SKIP = {"data", "build", "dist"}  # and hidden folders (.git, .venv, caches)


def sources() -> list[Path]:
    return [
        p
        for p in ROOT.rglob("*")
        if p.suffix in (".py", ".toml", ".md")
        and not any(part in SKIP or part.startswith(".") for part in p.relative_to(ROOT).parts)
        and p.is_file()
    ]


def test_no_reference_to_a_design_document_outside_the_repository() -> None:
    here = Path(__file__).resolve()
    stale = [
        str(p.relative_to(ROOT))
        for p in sources()
        if p != here and "DESIGN.md" in p.read_text("utf-8")
    ]
    assert stale == []


def test_the_architecture_sections_that_code_names_exist() -> None:
    headings = {
        line.lstrip("#").strip()
        for line in (ROOT / "docs" / "architecture.md").read_text("utf-8").splitlines()
        if line.startswith("## ")
    }
    # A section name may wrap onto the next line of a docstring.
    cited = re.compile(r'docs/architecture\.md, ((?:"[^"]+"(?:\s+and\s+)?)+)')
    named = {
        section
        for p in sources()
        if p.suffix == ".py"
        for match in cited.finditer(p.read_text("utf-8"))
        for section in (" ".join(s.split()) for s in re.findall(r'"([^"]+)"', match.group(1)))
    }
    assert named, "no code names a section of docs/architecture.md"
    assert named <= headings, named - headings


#: How the work was done is not what the repository says: no doc speaks of sessions, issues,
#: notes or a machine's throw-away paths (the words below, in any case).
PROCESS_WORDS = re.compile(
    r"\bthis session\b|\bsession notes?\b|\bthe issue\b|\bissue notes?\b|\bin the notes\b"
    r"|\bclosing note\b|/tmp/|\bshared folder\b|\bthe team's\b",
    re.IGNORECASE,
)


def test_no_doc_speaks_of_how_it_was_made() -> None:
    docs = [p for p in sources() if p.suffix == ".md"]
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for p in docs
        for n, line in enumerate(p.read_text("utf-8").splitlines(), start=1)
        if PROCESS_WORDS.search(line)
    ]
    assert len(docs) >= 8 and found == []


PACKAGES = ("engine", "db", "lobby", "cogs", "console", "boot", "tools", "benchmarks", "tests")
NAMED = re.compile(r"`((?:[A-Za-z_<>][\w<>.-]*/)*[A-Za-z_][\w]*(?:\.py|/))`")


def _exists(name: str) -> bool:
    """A path from the root or inside a package (`<game>` stands for any game's folder), or a
    bare module name that some package holds (a doc's list of one package's modules names
    them bare)."""
    if "/" not in name.rstrip("/"):
        bare = name.rstrip("/")
        return (ROOT / bare).exists() or any(
            p.name == bare for pkg in PACKAGES for p in (ROOT / pkg).rglob(bare)
        )
    pattern = name.rstrip("/").replace("<game>", "*")
    # From the root, or inside a package (`connect4/solver.py` in a list of engine/agents/).
    return any(True for _ in ROOT.glob(pattern)) or any(
        True for pkg in PACKAGES for _ in (ROOT / pkg).glob(f"**/{pattern}")
    )


#: A dotted name of the house in backticks: `lobby.core`, `engine.warm.plain_budget` (not a
#: file's name: `bot.py`).
DOTTED = re.compile(
    r"`((?:engine|db|lobby|cogs|console|boot|tools|benchmarks|tests|bot|faults)(?:\.\w+)+)"
    r"(?<!\.py)(?<!\.md)`"
)


def _defines(path: Path, names: list[str]) -> bool:
    """Whether the module at `path` binds names[0] at its top (a definition, an assignment or
    an import), and a class there names[1] in its body."""
    body: list[ast.stmt] = ast.parse(path.read_text("utf-8")).body
    for depth, name in enumerate(names[:2]):
        found = None
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound = [node.name]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound = [(a.asname or a.name).split(".")[0] for a in node.names]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            else:
                continue
            if name in bound:
                found = node
        if found is None:
            return False
        if not isinstance(found, ast.ClassDef):
            return True  # what a function or a value holds is not read here
        body = found.body if depth == 0 else body
    return True


def _module_exists(dotted: str) -> bool:
    """A module named by its dotted path (`lobby.core`), or a name in one
    (`engine.warm.plain_budget`, `db.sqlite.translated`, `engine.hints.HintKit`)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:n])
        path = (
            base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        )
        if path.is_file():
            return n == len(parts) or _defines(path, parts[n:])
    return False


def test_every_module_and_folder_the_docs_name_exists() -> None:
    docs = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    docs += sorted((ROOT / "docs").glob("*.md"))
    missing = sorted(
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in docs
        for name in set(NAMED.findall(doc.read_text("utf-8")))
        if not _exists(name)
    )
    missing += sorted(
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in docs
        for name in set(DOTTED.findall(doc.read_text("utf-8")))
        if not _module_exists(name)
    )
    assert missing == []


def test_the_module_check_can_fail() -> None:
    assert _exists("lobby/core.py") and _exists("core.py") and _exists("engine/agents/<game>/")
    assert _exists("connect4/solver.py") and not _exists("connect4/nosuch.py")
    assert not _exists("lobby/nosuch.py") and not _exists("nosuch.py")
    assert _module_exists("lobby.core") and _module_exists("engine.games")
    assert _module_exists("engine.warm.plain_budget") and _module_exists("engine.hints.HintKit")
    assert _module_exists("lobby.core.Lobby.play") and not _module_exists("lobby.core.Lobby.nosuch")
    assert not _module_exists("lobby.nosuch") and not _module_exists("engine.warm.nosuch")


def test_the_architecture_picture_is_what_the_code_gives() -> None:
    """The layers and the walk of a click in docs/architecture.md are made by
    `python -m tools.housemap`; a change of the code they show makes them again."""
    doc = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    assert housemap.block_of(doc) == housemap.generated(), "stale: python -m tools.housemap"


def test_a_step_the_code_does_not_hold_stops_the_picture() -> None:
    good = housemap.WALK[8]  # Lobby.play -> Matches.play
    housemap.check(good)
    moved = housemap.Step(good.caller, "lobby/matches.py:Matches.nosuch", good.does)
    uncalled = housemap.Step(good.caller, "lobby/matches.py:Matches.commit", good.does)
    unhanded = housemap.Step(
        good.caller, good.callee, good.does, calls="play", handed="lobby/core.py:Lobby.resign"
    )
    for step in (moved, uncalled, unhanded):
        with pytest.raises(housemap.WalkError):
            housemap.check(step)


def test_a_climb_is_a_call_into_a_module_above_the_caller() -> None:
    graph = housemap.Graph.read()
    assert graph.above("cogs.editor", "lobby.announce")
    assert not graph.above("lobby.announce", "cogs.editor")
    done = housemap.walk(graph)
    climbs = [(done.steps[i].caller, done.steps[i].callee) for i in done.package_climbs]
    assert ("lobby/announce.py:Announcer.match", "cogs/editor.py:BoardEditor.submit") in climbs


def _unlisted_benchmarks(readme: str) -> list[str]:
    """The runnable benchmarks (a module that runs as a program, or a script) that
    benchmarks/README.md names neither by module (`python -m ...`) nor by file name."""
    found = []
    for path in sorted((ROOT / "benchmarks").rglob("*")):
        runs = path.suffix == ".sh" or (
            path.suffix == ".py" and 'if __name__ == "__main__":' in path.read_text("utf-8")
        )
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if runs and f"python -m {module}" not in readme and path.name not in readme:
            found.append(str(path.relative_to(ROOT)))
    return found


def test_the_benchmarks_readme_lists_every_benchmark() -> None:
    readme = (ROOT / "benchmarks" / "README.md").read_text("utf-8")
    assert _unlisted_benchmarks(readme) == []
    assert _unlisted_benchmarks(readme.replace("benchmarks.speed.c4_rules", "")) == [
        "benchmarks/speed/c4_rules.py"
    ]
