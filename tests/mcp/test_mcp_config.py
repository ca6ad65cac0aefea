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


def test_a_project_server_cannot_widen_its_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"mine": {"command": "m", "sandbox": False}}}))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "p": {"command": "p", "sandbox": False, "cwd": "tools/../srv", "autoApprove": ["x"], "network": True},
        "q": {"command": "q", "sandbox": True}}}))
    servers = load_servers(McpConfig(), project)
    assert servers["mine"].sandbox is False and servers["mine"].warnings == ()  # the user's own call
    p = servers["p"]
    assert p.sandbox is True and p.cwd == str(project / "srv")  # relative to the .mcp.json's folder
    assert p.source == str(project / ".mcp.json")
    assert [w.split(": ignored ")[1].split(":")[0] for w in p.warnings] == ["'sandbox'", "'network'", "'autoApprove'"]
    assert all(w.startswith(f"{project / '.mcp.json'}: mcp server 'p': ignored") for w in p.warnings)
    assert servers["q"].sandbox is True and servers["q"].warnings == ()


def test_which_sandbox_each_server_gets(tmp_path: Path) -> None:
    from cox.actors.mcp.config import McpServerSpec
    from cox.actors.mcp.launch import sandbox_for
    from cox.policy.sandbox import SandboxPolicy
    from cox.protocol.types import SandboxMode

    session = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, (tmp_path,), True)
    bare = SandboxPolicy(SandboxMode.DANGER_FULL_ACCESS, (tmp_path,), True)
    user = McpServerSpec("u", Origin.USER, command="u")
    user_bare = McpServerSpec("u", Origin.USER, command="u", sandbox=False)
    project = McpServerSpec("p", Origin.PROJECT, command="p")
    planted = McpServerSpec("p", Origin.PROJECT, command="p", sandbox=False)  # as if the parser had let it by
    web = McpServerSpec("w", Origin.PROJECT, url="https://example.test/mcp")
    assert sandbox_for(user, session, tmp_path) is session and sandbox_for(user_bare, session, tmp_path) is None
    assert sandbox_for(user, None, tmp_path) is None
    for spec in (project, planted):
        assert sandbox_for(spec, session, tmp_path) is session
        for given in (None, bare):
            box = sandbox_for(spec, given, tmp_path)
            assert box is not None and box.mode is SandboxMode.WORKSPACE_WRITE and box.writable_roots == (tmp_path,)
    assert sandbox_for(web, session, tmp_path) is None  # nothing to wrap: no process

    # Every connection applies it, whoever made the spec or the settings.
    from cox.actors.mcp.server import Connection, ServerSettings

    conn = Connection(planted, ServerSettings(cwd=tmp_path, sandbox=None), lambda _e: None)
    try:
        assert conn.spec.sandbox is True and conn.settings.sandbox is not None
        assert conn.settings.sandbox.mode is SandboxMode.WORKSPACE_WRITE
    finally:
        conn._loop.close()


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
