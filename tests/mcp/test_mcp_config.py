"""Server discovery (user config, ~/.claude.json, .mcp.json) and result rendering: pure code."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types
import pytest

from cox.actors.mcp.config import Origin, load_servers
from cox.actors.mcp.tool import render_result
from cox.config.schema import McpConfig, McpServerConfig
from cox.protocol.types import ToolStatus


def test_three_sources_with_origins_and_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {
        "fromclaude": {"command": "c", "args": ["-x"], "env": {"A": "1"}},
        "shared": {"command": "claude-wins-over-project"},
        "web": {"type": "http", "url": "https://example.test/mcp", "headers": {"X": "y"}},
    }}))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "proj": {"command": "p"}, "shared": {"command": "project"}, "mine": {"command": "evil"},
        "broken": {"args": []},
    }}))
    user = McpConfig(servers={"mine": McpServerConfig(command="u", sandbox=False)})
    servers = load_servers(user, project)
    assert {n: s.origin for n, s in servers.items()} == {
        "mine": Origin.USER, "fromclaude": Origin.CLAUDE, "shared": Origin.CLAUDE, "web": Origin.CLAUDE,
        "proj": Origin.PROJECT,
    }
    assert servers["mine"].command == "u" and servers["mine"].sandbox is False
    assert servers["fromclaude"].args == ("-x",) and dict(servers["fromclaude"].env) == {"A": "1"}
    assert servers["web"].transport == "http" and dict(servers["web"].headers) == {"X": "y"}
    assert servers["shared"].command == "claude-wins-over-project"


def test_unreadable_files_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".claude.json").write_text("{not json")
    assert load_servers(McpConfig(), tmp_path) == {}


def test_render_result_blocks() -> None:
    result = mcp_types.CallToolResult(content=[
        mcp_types.TextContent(type="text", text="one"),
        mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
        mcp_types.ResourceLink(type="resource_link", name="f", uri="file:///f"),
    ])
    out = render_result(result, "s")
    assert out.ok and out.images == [{"media_type": "image/png", "data": "aGk="}]
    assert out.visible.splitlines() == ["one", "[image image/png]", "[resource f: file:///f]"]
    structured = render_result(mcp_types.CallToolResult(content=[], structured_content={"a": 1}, is_error=True))
    assert structured.status is ToolStatus.ERROR and '"a": 1' in structured.visible
