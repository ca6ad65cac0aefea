"""tool_search: finds deferred tools by words or exact names and names the ones it enabled in its
result (``meta["activated"]``); it never writes into the session's services."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cox.actors.tools.base import DeferredTool, ToolEnv, ToolInputError, ToolServices
from cox.actors.tools.deferred import ToolSearchTool, activated
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus
from cox.supervisors import CancelScope

CATALOG = [
    {"name": "definition", "description": "Go to the definition of the symbol at a position, via the language server."},
    {"name": "references", "description": "Find every reference to the symbol at a position."},
    {"name": "rename_symbol", "description": "Rename a symbol across the workspace through the language server."},
    {"name": "mcp__github__list_issues", "description": "List issues of a GitHub repository."},
    {"name": "mcp__github__create_pull_request", "description": "Open a pull request."},
    {"name": "diagnostics", "description": "Errors and warnings of one file from its language server."},
]


@pytest.fixture
def env(tmp_path: Path) -> ToolEnv:
    return ToolEnv(roots=[tmp_path], cwd=tmp_path, cancel=CancelScope(),
                   services=ToolServices(deferred_tools=tuple(DeferredTool(**t) for t in CATALOG)))


def loaded(env: ToolEnv, *names: str) -> ToolEnv:
    """``env`` as the session builds it for a call after ``names`` were enabled."""
    return replace(env, services=replace(env.services, loaded=env.services.loaded | set(names)))


def search(env: ToolEnv, query: object, **more: object) -> ToolResult:
    return ToolSearchTool().call(ToolCall(id="t", name="tool_search", input={"query": query, **more}), env)


def test_words_find_tools_by_name_and_description(env: ToolEnv) -> None:
    res = search(env, "github issues")
    assert res.ok
    assert res.visible.splitlines()[0] == "mcp__github__list_issues: List issues of a GitHub repository."
    assert activated(res)[0] == "mcp__github__list_issues"
    assert "enabled: mcp__github__list_issues" in res.visible


def test_ranking_prefers_name_words(env: ToolEnv) -> None:
    res = search(env, "rename symbol", max_results=2)
    names = [line.split(":")[0] for line in res.visible.splitlines()[:2]]
    assert names[0] == "rename_symbol"
    assert res.meta["matches"] == 2 and len(activated(res)) == 2


def test_exact_name_and_select_syntax(env: ToolEnv) -> None:
    assert activated(search(env, "references")) == ["references"]
    res = search(loaded(env, "references"), "select:definition, diagnostics,references, nope")
    assert activated(res) == ["definition", "diagnostics"]
    assert "already enabled: references" in res.visible and "unknown: nope" in res.visible
    assert env.services.loaded == frozenset()  # the tool told; it changed nothing


def test_select_of_unknown_names_is_an_error(env: ToolEnv) -> None:
    res = search(env, "select:bogus")
    assert res.status is ToolStatus.ERROR and "no deferred tool named bogus" in res.visible
    assert activated(res) == []


def test_no_match_lists_what_there_is(env: ToolEnv) -> None:
    res = search(env, "kubernetes")
    assert res.ok and res.meta == {"matches": 0}
    assert "definition" in res.visible and activated(res) == []


def test_empty_catalog(tmp_path: Path) -> None:
    env = ToolEnv(roots=[tmp_path], cwd=tmp_path, cancel=CancelScope())
    assert "no deferred tools" in search(env, "anything").visible


def test_bad_input(env: ToolEnv) -> None:
    with pytest.raises(ToolInputError):
        search(env, "  ")
    with pytest.raises(ToolInputError):
        search(env, "x", max_results=0)


def test_the_services_cannot_be_written_by_a_tool(env: ToolEnv) -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        env.services.loaded = frozenset({"definition"})  # type: ignore[misc]


def test_contract(env: ToolEnv) -> None:
    call = ToolSearchTool().describe(ToolCall(id="t", name="tool_search", input={"query": "x"}), env)
    assert call.risk is Risk.READ_ONLY
