"""cox's MCP client against the reference server ``@modelcontextprotocol/server-everything``.

The server comes from npm (``package.json`` / ``package-lock.json`` at the repository root;
``scripts/_env`` runs ``npm ci`` when node and npm exist) and runs as a real ``node`` process in
stdio mode, started by cox's own supervisor and actor. The tests skip, saying why, when node or
``node_modules`` is missing.

Resources are checked where cox meets them: embedded resources and resource links inside tool
results, and the two resource tools (``list_mcp_resources``, ``read_mcp_resource``) listing and
reading the server's text and blob resources. Elicitation runs through a real session: the
server registers its elicitation tools only for a client that declares the capability.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.supervisor import Backoff, McpManager, start_mcp
from cox.actors.tools.base import ToolEnv, ToolServices
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


# ---------------------------------------------------------------- resources and elicitation


def resource_call(mcp: McpManager, tool: str, **inp: object):
    from cox.actors.mcp import resource_tools

    env = ToolEnv(roots=[Path.cwd()], cwd=Path.cwd(), cancel=CancelScope(), services=ToolServices(archive=lambda d: "X"))
    return resource_tools(mcp)[tool].call(ToolCall(id="r", name=tool, input=dict(inp)), env)


def test_resources_list_and_read_text_and_blob(mcp: McpManager) -> None:
    listed = resource_call(mcp, "list_mcp_resources")
    assert listed.ok, listed.visible
    assert "demo://resource/static/document/architecture.md" in listed.visible, listed.visible
    assert "template demo://resource/dynamic/text/{resourceId}" in listed.visible, listed.visible
    doc = resource_call(mcp, "read_mcp_resource", server="everything",
                        uri="demo://resource/static/document/architecture.md")
    assert doc.ok and len(doc.visible) > 200, doc.visible
    text = resource_call(mcp, "read_mcp_resource", server="everything", uri="demo://resource/dynamic/text/3")
    assert text.ok and text.visible.startswith("Resource 3: This is a plaintext resource"), text.visible
    blob = resource_call(mcp, "read_mcp_resource", server="everything", uri="demo://resource/dynamic/blob/4")
    assert blob.ok and "blob, decoded as UTF-8:\nResource 4: This is a base64 blob" in blob.visible, blob.visible
    mcp.stop()


def test_elicitation_tools_exist_only_when_the_client_declares_it(mcp: McpManager, root: SupervisorHandle,
                                                                  tmp_path: Path) -> None:
    assert "mcp__everything__trigger-elicitation-request" not in mcp.tools()
    mcp.stop()
    asking = start_mcp(root, {"everything": everything()}, timeout_s=30.0, startup_timeout_s=30.0, cwd=tmp_path,
                       backoff=FAST, elicitation=True)
    asking.wait_settled(40)
    assert {"mcp__everything__trigger-elicitation-request",
            "mcp__everything__trigger-url-elicitation"} <= set(asking.tools())
    asking.stop()


def test_elicitation_form_and_url_through_a_session(tmp_path: Path, cox_home: Path) -> None:
    from cox.actors.mcp import resource_tools
    from cox.actors.tools.registry import builtin_tools
    from cox.protocol import messages as m
    from cox.protocol.types import PermissionMode
    from cox.surfaces.runtime import App
    from tests.harness import run_session

    app = App(cox_home)
    try:
        manager = start_mcp(app.root, {"everything": everything()}, timeout_s=30.0, startup_timeout_s=30.0,
                            cwd=tmp_path, backoff=FAST, elicitation=True)
        manager.wait_settled(40)
        tools = {**builtin_tools(), **resource_tools(manager), **manager.tools()}
        typed = {"name": "Ada Lovelace", "check": "y", "firstLine": "", "email": "ada@example.com",
                 "homepage": "https://ada.example", "birthdate": "1815-12-10", "integer": "", "number": "2.5",
                 "untitledSingleSelectEnum": "Joey", "untitledMultipleSelectEnum": "Piano, Drums",
                 "titledSingleSelectEnum": "Wonder Woman", "titledMultipleSelectEnum": "1,3",
                 "legacyTitledEnum": "Dogs"}
        opened: list[str] = []

        def react(event: object, handle: object, run: object) -> None:
            if getattr(event, "type", "") != "question":
                return
            props = event.schema["properties"]  # type: ignore[attr-defined]
            field = next(iter(props))
            if field == "action":
                answer = "send" if event.url is None else "open"  # type: ignore[attr-defined]
            else:
                answer = typed[field]
            handle.submit(m.Answer(question_id=event.question_id, answer=answer))  # type: ignore[attr-defined]

        replies = [{"tool_calls": [{"id": "e1", "name": "mcp__everything__trigger-elicitation-request",
                                    "input": {}}]},
                   {"tool_calls": [{"id": "u1", "name": "mcp__everything__trigger-url-elicitation",
                                    "input": {"url": "https://example.com/auth", "message": "Authorise"}}]},
                   {"text": "done"}]
        run = run_session(tmp_path, cox_home, replies, "ask me", tools=tools, app=app, timeout=60,
                          mode=PermissionMode.BYPASS, react=react, open_url=lambda url: opened.append(url))
        questions = run.of("question")
        assert len(questions) == len(typed) + 2, [q.prompt for q in questions]
        form, url = run.of("tool_call_done")
        assert "User provided the requested information" in form.result.visible, form.result.visible
        raw = json.loads(form.result.visible.split("Raw result:", 1)[1])
        assert raw["content"] == {
            "name": "Ada Lovelace", "check": True, "firstLine": "It was a dark and stormy night.",
            "email": "ada@example.com", "homepage": "https://ada.example", "birthdate": "1815-12-10",
            "integer": 42, "number": 2.5, "untitledSingleSelectEnum": "Joey",
            "untitledMultipleSelectEnum": ["Piano", "Drums"], "titledSingleSelectEnum": "hero-3",
            "titledMultipleSelectEnum": ["fish-1", "fish-3"], "legacyTitledEnum": "pet-2"}
        assert "User completed the URL elicitation flow" in url.result.visible, url.result.visible
        assert questions[-1].url == "https://example.com/auth" and opened == ["https://example.com/auth"]
    finally:
        app.close()
