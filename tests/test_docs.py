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
