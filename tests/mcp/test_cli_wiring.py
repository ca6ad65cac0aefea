"""`cox run` with an MCP server in the user config: the model calls its tool through a real
session, and the session_started line lists the server's state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).parent / "servers" / "testserver.py"
pytestmark = pytest.mark.xdist_group("headless")


def test_an_mcp_tool_through_cox_run(tmp_path: Path, cox_home: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.test]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [
        {"tool_calls": [{"id": "m1", "name": "mcp__test__echo", "input": {"text": "hello over mcp"}}]},
        {"text": "echoed"},
    ]}))
    env = {**os.environ, "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "echo",
                        "--permission-mode", "bypassPermissions", "--output-format", "stream-json"],
                       cwd=ws, env=env, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    events = [json.loads(x) for x in p.stdout.splitlines()]
    started = events[0]
    assert started["mcp_servers"][0]["name"] == "test" and started["mcp_servers"][0]["status"] == "ready"
    assert "mcp__test__echo" in started["tools"]
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    assert done["result"]["status"] == "ok" and "hello over mcp" in done["result"]["visible"]


def test_doctor_reports_each_server(tmp_path: Path, cox_home: Path):
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.test]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        '[mcp.servers.broken]\ncommand = "/nonexistent/server"\n')
    marker = tmp_path / "MARKER"
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "repo": {"command": "sh", "args": ["-c", f'touch "{marker}"; exec "{sys.executable}" "{SERVER}"'],
                 "sandbox": False}}}))
    env = {**os.environ, "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "doctor"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=90)
    rows = {line.split()[2]: line for line in p.stdout.splitlines() if line[6:].startswith("mcp ")}
    assert "ready, 7 tools" in rows["test"] and rows["test"].startswith("ok")
    assert "failed" in rows["broken"]
    # The repository's server is reported, not started; its ignored field is named.
    assert f"not trusted; run: cox mcp trust repo (from {tmp_path / '.mcp.json'}; not started)" in p.stdout
    assert "mcp server 'repo': ignored 'sandbox'" in p.stdout
    assert not marker.exists()


def test_servers_only_the_claude_json_and_the_project_name_reach_cox_run(tmp_path: Path, cox_home: Path):
    # No server in cox's config: the run reads ~/.claude.json and .mcp.json because they exist
    # (a run with neither does not import the MCP config code at all).
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / ".claude.json").write_text(json.dumps({"mcpServers": {
        "fromclaude": {"command": sys.executable, "args": [str(SERVER)]}}}))
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {"command": sys.executable,
                                                                      "args": [str(SERVER)]}}}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [{"text": "ok"}]}))
    env = {**os.environ, "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "hi",
                        "--output-format", "stream-json"], cwd=ws, env=env, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    started = json.loads(p.stdout.splitlines()[0])
    states = {s["name"]: s["status"] for s in started["mcp_servers"]}
    assert states["fromclaude"] == "ready" and "mcp__fromclaude__echo" in started["tools"]
    assert "repo" in states and states["repo"] != "ready"  # a repository's server waits for cox mcp trust
