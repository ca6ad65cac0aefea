"""``/init``: one turn that has the model survey the repository and write its AGENTS.md.

A fixed prompt, so the file is written through the normal ``write``/``edit`` tools and their
approvals, like any change the model makes. An existing AGENTS.md is never silently replaced:
the prompt says it exists and asks for an improvement made with ``edit``, keeping what the
people who wrote it decided.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["init_prompt"]

_SURVEY = """Survey this repository and {task}

Look before you write: the README and docs, the build and package files (pyproject.toml,
package.json, Makefile, Cargo.toml, go.mod …), the CI configuration, the test folders, linter and
formatter settings, and a few representative source files. Run read-only commands only.

AGENTS.md is read by coding agents before they work here, so keep it short, concrete and true:
- how to build, run and install the project (exact commands);
- how to run the tests, a single test, and the linters/type checkers (exact commands);
- the code conventions a newcomer would get wrong (style, naming, error handling, imports);
- the layout: which folder holds what, and where the entry points are;
- anything surprising: generated files not to edit, required environment, slow or flaky suites.
Do not invent commands you have not seen evidence for; leave out generic advice."""


def init_prompt(cwd: Path) -> str:
    """The user turn of ``/init`` for the workspace ``cwd``."""
    existing = cwd / "AGENTS.md"
    if existing.exists() or existing.is_symlink():
        task = (f"improve its existing AGENTS.md ({existing}). The file already exists: read it first, keep what "
                "is still right, and change it with `edit`; do not overwrite it with `write` or start it over.")
    else:
        task = f"write an AGENTS.md at its root ({existing}) with the `write` tool."
    return _SURVEY.format(task=task)
