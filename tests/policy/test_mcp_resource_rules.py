"""Rules for the MCP resource tools use Claude Code's names: ListMcpResourcesTool and
ReadMcpResourceTool, whose subject is ``<server>`` / ``<server> <uri>``."""

from __future__ import annotations

from pathlib import Path

from cox.policy.permission import Engine
from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk, SandboxMode, ToolCall


def decide(engine: Engine, name: str, subject: str) -> tuple[str, list[str]]:
    call = ToolCall(id="c", name=name, risk=Risk.READ_ONLY, subject=subject)
    out = engine.decide(call, PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE, [])
    return str(getattr(out.kind, "value", out.kind)), engine.grants_for(call)


def test_resource_tools_are_read_only_and_named_like_claude_code(tmp_path: Path) -> None:
    plain = Engine.compile([], [], [], home=tmp_path, roots=[tmp_path])
    assert decide(plain, "read_mcp_resource", "docs note://a")[0] == "allow"
    engine = Engine.compile([], ["ReadMcpResourceTool(docs:*)"], ["ListMcpResourcesTool"], home=tmp_path,
                            roots=[tmp_path])
    assert decide(engine, "read_mcp_resource", "docs note://a") == ("ask", ["ReadMcpResourceTool(docs note://a)"])
    assert decide(engine, "read_mcp_resource", "other note://a")[0] == "allow"
    assert decide(engine, "list_mcp_resources", "")[0] == "deny"
