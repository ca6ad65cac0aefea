"""cox's MCP client against the reference server ``@modelcontextprotocol/server-everything``.

The server comes from npm (``package.json`` / ``package-lock.json`` at the repository root;
``scripts/_env`` runs ``npm ci`` when node and npm exist) and runs as a real ``node`` process in
stdio mode, started by cox's own supervisor and actor. The tests skip, saying why, when node or
``node_modules`` is missing.

cox's client exposes tools only (no ``resources/list`` or ``resources/read``), so resources are
checked where cox meets them: embedded resources and resource links inside tool results.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.supervisor import Backoff, McpManager, start_mcp
from cox.actors.tools.base import ToolEnv
from cox.protocol.types import Risk, ToolCall, ToolStatus
from cox.supervisors import CancelScope, SupervisorHandle

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything"
ENTRY = PACKAGE / "dist" / "index.js"  # package.json "bin": {"mcp-server-everything": "dist/index.js"}
NODE = shutil.which("node")
FAST = Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0)

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed: the reference MCP server "
                                            "@modelcontextprotocol/server-everything needs it"),
    pytest.mark.skipif(not ENTRY.is_file(), reason=f"{ENTRY.relative_to(ROOT)} is missing: run scripts/test "
                                                   "(its set-up runs `npm ci`) or `npm ci` in the repository"),
]


def everything() -> McpServerSpec:
    assert NODE is not None
    return McpServerSpec("everything", Origin.USER, command=NODE, args=(str(ENTRY), "stdio"))


@pytest.fixture
def mcp(root: SupervisorHandle, tmp_path: Path) -> McpManager:
    manager = start_mcp(root, {"everything": everything()}, timeout_s=30.0, startup_timeout_s=30.0,
                        cwd=tmp_path, backoff=FAST)
    manager.wait_settled(40)
    assert manager.state() == [{"name": "everything", "status": "ready"}], manager.state()
    return manager


def run(mcp: McpManager, tool: str, output: list[str] | None = None, **inp: object):
    name = f"mcp__everything__{tool}"
    sink = output.append if output is not None else (lambda _chunk: None)
    env = ToolEnv(roots=[Path.cwd()], cwd=Path.cwd(), cancel=CancelScope(), output=sink)
    return mcp.tools()[name].call(ToolCall(id="c", name=name, input=dict(inp)), env)


def test_lists_its_tools_with_schemas_and_risk(mcp: McpManager) -> None:
    tools = mcp.tools()
    for name in ("echo", "get-sum", "get-tiny-image", "trigger-long-running-operation",
                 "get-resource-reference", "get-resource-links", "get-structured-content"):
        assert f"mcp__everything__{name}" in tools, sorted(tools)
    echo = tools["mcp__everything__echo"]
    assert echo.description and echo.input_schema["type"] == "object"
    assert "message" in echo.input_schema["properties"]
    # Annotations drive risk: the long-running operation says it is read-only.
    assert tools["mcp__everything__trigger-long-running-operation"].risk({}) is Risk.READ_ONLY
    mcp.stop()


def test_echo_and_sum(mcp: McpManager) -> None:
    result = run(mcp, "echo", message="hello everything")
    assert result.status is ToolStatus.OK, result.visible
    assert "hello everything" in result.visible
    total = run(mcp, "get-sum", a=2, b=40)
    assert total.ok and "42" in total.visible, total.visible
    mcp.stop()


def test_long_running_operation_streams_progress_to_the_output(mcp: McpManager) -> None:
    output: list[str] = []
    result = run(mcp, "trigger-long-running-operation", output, duration=1, steps=3)
    assert result.ok, result.visible
    assert "Long running operation completed" in result.visible
    assert output == ["[1/3]\n", "[2/3]\n", "[3/3]\n"], output
    mcp.stop()


def test_image_content_becomes_an_image(mcp: McpManager) -> None:
    result = run(mcp, "get-tiny-image")
    assert result.ok and result.images, result
    assert result.images[0]["media_type"] == "image/png" and result.images[0]["data"]
    assert "[image image/png]" in result.visible
    mcp.stop()


def test_resources_inside_tool_results(mcp: McpManager) -> None:
    embedded = run(mcp, "get-resource-reference", resourceType="Text", resourceId=1)
    assert embedded.ok, embedded.visible
    # An embedded text resource: its URI, then its text.
    assert "[resource demo://resource/dynamic/text/1]\nResource 1: This is a plaintext resource" in embedded.visible
    blob = run(mcp, "get-resource-reference", resourceType="Blob", resourceId=2)
    assert blob.ok and "[resource demo://resource/dynamic/blob/2 (binary)]" in blob.visible, blob.visible
    links = run(mcp, "get-resource-links", count=2)
    assert links.ok, links.visible
    assert "[resource Blob Resource 1: demo://resource/dynamic/blob/1]" in links.visible, links.visible
    assert "[resource Text Resource 2: demo://resource/dynamic/text/2]" in links.visible, links.visible
    mcp.stop()


def test_structured_content_and_a_tool_error(mcp: McpManager) -> None:
    structured = run(mcp, "get-structured-content", location="New York")
    assert structured.ok and '"temperature"' in structured.visible, structured.visible
    bad = run(mcp, "get-resource-reference", resourceType="Text", resourceId=-1)
    assert bad.status is ToolStatus.ERROR and "resourceId" in bad.visible, bad.visible
    again = run(mcp, "echo", message="still here")
    assert again.ok and "still here" in again.visible
    mcp.stop()
