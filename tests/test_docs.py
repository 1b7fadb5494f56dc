"""The documents code points at exist: docs/architecture.md and the sections named in comments."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


def test_every_module_and_folder_the_docs_name_exists() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = sorted(
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in docs
        for name in set(NAMED.findall(doc.read_text("utf-8")))
        if not _exists(name)
    )
    assert missing == []


def test_the_module_check_can_fail() -> None:
    assert _exists("lobby/core.py") and _exists("core.py") and _exists("engine/agents/<game>/")
    assert _exists("connect4/solver.py") and not _exists("connect4/nosuch.py")
    assert not _exists("lobby/nosuch.py") and not _exists("nosuch.py")
