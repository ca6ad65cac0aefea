"""The built-in tools' specs (``cox.actors.tools.catalog``) and the registry's lazy entries: each
spec is written once, the entry the session holds says exactly what the tool says, and a tool's
module is imported only when a call needs more than its spec."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cox.actors.tools import catalog
from cox.actors.tools.base import BaseTool
from cox.actors.tools.catalog import Spec
from cox.actors.tools.registry import (
    LazyTool,
    agent_tools,
    builtin_tools,
    deferred_builtin_tools,
    skill_tools,
    tool_search,
)
from cox.agents.skills import load_skills


def _said(tool: BaseTool) -> tuple[object, ...]:
    return tool.name, tool.description, tool.input_schema, tool.parallel, tool.required


def _skills(tmp_path: Path) -> object:
    path = tmp_path / "ws" / ".cox" / "skills" / "notes" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: notes\ndescription: writes release notes\n---\nWrite them.\n")
    return load_skills(tmp_path / "ws", tmp_path / "home", cox_home=tmp_path / "cox")


def test_every_entry_says_what_its_tool_says(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    sets = [builtin_tools(), deferred_builtin_tools(), agent_tools(), agent_tools({"reviewer": "reviews a diff"}),
            skill_tools(skills), {"tool_search": tool_search("3 more MCP tools are deferred (github: 3)")}]  # type: ignore[arg-type]
    seen: set[int] = set()
    for tools in sets:
        for name, entry in tools.items():
            assert isinstance(entry, LazyTool) and not entry.resolved, name
            tool = entry.resolve()
            assert type(tool).spec is entry.entry and entry.resolved
            assert _said(entry) == _said(tool), name  # what the first request carries is the tool's own spec
            seen.add(id(entry.entry))
    entries = [v for v in vars(catalog).values() if isinstance(v, Spec)]
    assert {id(e) for e in entries} == seen  # no spec the registry leaves out
    assert "reviewer: reviews a diff" in agent_tools({"reviewer": "reviews a diff"})["agent"].description
    assert "notes: writes release notes" in skill_tools(skills)["skill"].description  # type: ignore[arg-type]
    assert "(github: 3)" in tool_search("3 more MCP tools are deferred (github: 3)").description


def test_an_entry_whose_words_are_not_its_tools_is_refused() -> None:
    wrong = LazyTool(catalog.AGENT, {"explore": "x"}, description=catalog.agent_description({"other": "y"}))
    with pytest.raises(RuntimeError, match="is not the tool the catalog's 'agent' names"):
        wrong.resolve()


def test_an_entry_is_made_once_whichever_thread_asks_first() -> None:
    entry = builtin_tools()["grep"]
    assert isinstance(entry, LazyTool)
    start = threading.Barrier(8)
    made: list[BaseTool] = []

    def ask() -> None:
        start.wait()
        made.append(entry.resolve())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 8 and len({id(t) for t in made}) == 1


LISTED_THEN_CHECKED = """
import sys
from cox.actors.tools.registry import builtin_tools, deferred_builtin_tools, specs
tools = {**builtin_tools(), **deferred_builtin_tools()}
listed = specs(tools)
def code():
    return sorted(m for m in sys.modules if m.startswith("cox.actors.tools.")
                  and m.rsplit(".", 1)[1] not in ("base", "catalog", "registry"))
print(len(listed), code())
tools["read"].check({"path": "a"})
print(code())
"""


def test_listing_the_tools_imports_none_and_a_check_imports_only_its_tool() -> None:
    out = subprocess.run([sys.executable, "-c", LISTED_THEN_CHECKED], capture_output=True, text=True, timeout=60,
                         check=True)
    listed, checked = out.stdout.splitlines()
    assert listed == "16 []"
    assert "cox.actors.tools.files" in checked and "cox.actors.tools.bash" not in checked
    assert "cox.actors.tools.navigate" not in checked


def test_what_else_a_surface_asks_of_an_entry_is_its_tools() -> None:
    bash = builtin_tools()["bash"]
    assert isinstance(bash, LazyTool) and not bash.resolved
    assert callable(bash._prepare)  # cox acp's terminal runs bash's own preparation
    assert bash.resolved

