"""The README and docs/ say what is built: every relative link leads to a file in the repository
(a clone has no ``../shared/``), every Submission type and field a stream-json script may send is
documented, and so are the instruction files a session really loads."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from cox.actors.session import instructions
from cox.protocol import messages as m

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_relative_link_resolves_inside_the_repository() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert ROOT / "docs" / "DESIGN.md" in pages
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target).resolve()
            if not path.exists() or ROOT not in path.parents:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
    assert "../shared" not in README and "docs/DESIGN.md" in README


def test_every_submission_type_and_field_is_documented() -> None:
    table = README.split("each stdin line is one Submission", 1)[1].split("```", 1)[0]
    rows = {line.split("|")[1].strip().strip("`"): line for line in table.splitlines() if line.startswith("| `") and not line.startswith("| `type`")}
    assert sorted(rows) == m.SUBMISSION_TYPES
    for tag in m.SUBMISSION_TYPES:
        cls = m._KINDS["submission"][tag]
        for f in dataclasses.fields(cls):
            if f.name != "type" and not (f.metadata.get("cox") or {}).get("internal"):  # the program's, not the wire's
                assert f"`{f.name}`" in rows[tag], f"{tag}.{f.name} is not documented"


def test_the_instruction_files_are_documented_as_loaded() -> None:
    section = README.split("**Instruction files.**", 1)[1].split("\n\n", 1)[0]
    for name in instructions.FOLDER_FILES:
        assert f"`{name}`" in section
    assert f"{instructions.LIMIT_BYTES // 1024} KiB" in section
