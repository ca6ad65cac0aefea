"""MCP tools past ``mcp.max_loaded_tools`` wait behind ``tool_search`` (issue 18, item 8): a real
``cox run`` with two real MCP servers (38 tools) against a model API on 127.0.0.1, so what is
checked is the request body the model really gets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.provider import chat_text
from cox.actors.tools.base import BaseTool
from cox.actors.tools.deferral import split_deferred
from cox.protocol.types import ToolCall, ToolResult
from tests.harness import run_session
from tests.provider.loopback import Loopback, Reply
from tests.provider.test_cli_e2e import chat_tool

SERVERS = Path(__file__).parent / "servers"
pytestmark = pytest.mark.xdist_group("headless")


def _config(cox_home: Path, extra: str = "") -> None:
    cox_home.mkdir(parents=True, exist_ok=True)
    marker = cox_home.parent / "ws" / "MARKER"  # in the workspace: the sandboxed server may write it
    (cox_home / "config.toml").write_text(
        f"{extra}\n"
        f'[mcp.servers.many]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "manytools.py"}"]\n'
        f"[mcp.servers.many.env]\nCOX_TEST_MARKER = {json.dumps(str(marker))}\n"
        f'[mcp.servers.test]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "testserver.py"}"]\n')


def _run(tmp_path: Path, cox_home: Path, replies: list[list[bytes]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    with Loopback() as api:
        for reply in replies:
            api.add(Reply(reply))
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
        env.update({"HOME": str(tmp_path), "COX_HOME": str(cox_home), "OPENAI_API_KEY": "k",
                    "OPENAI_BASE_URL": api.url + "/v1", "COX_CORE_MODEL": "local-model"})
        p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "what is the weather in Oslo",
                            "--permission-mode", "bypassPermissions", "--output-format", "stream-json"],
                           cwd=ws, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr + p.stdout[-3000:]
        return [json.loads(x) for x in p.stdout.splitlines()], [r["json"] for r in api.requests]


def _tools(request: dict[str, Any]) -> dict[str, str]:
    return {t["function"]["name"]: t["function"]["description"] for t in request["tools"]}


def test_past_the_count_mcp_tools_are_found_loaded_and_called(tmp_path: Path, cox_home: Path):
    _config(cox_home, "[mcp]\nmax_loaded_tools = 3\n")
    events, requests = _run(tmp_path, cox_home, [
        chat_tool("c1", "tool_search", {"query": "weather forecast"}),
        chat_tool("c2", "mcp__many__weather_forecast", {"city": "Oslo"}),
        chat_text(["Sunny."]),
    ])
    first = _tools(requests[0])
    mcp = sorted(n for n in first if n.startswith("mcp__"))
    assert mcp == ["mcp__many__t00", "mcp__many__t01", "mcp__many__t02"]  # the allowed count, in order
    assert {"read", "bash", "tool_search", "list_mcp_resources"} <= set(first)
    # the model is told what waits, and where
    assert "35 more MCP tools are deferred (many: 28, test: 7)" in first["tool_search"]
    started = events[0]
    assert "mcp__many__weather_forecast" not in started["tools"] and "mcp__many__t00" in started["tools"]
    # tool_search found it; the next request carries its spec; the call reached the server
    done = {e["call_id"]: e["result"] for e in events if e["type"] == "tool_call_done"}
    assert "mcp__many__weather_forecast: Forecast the weather for a city." in done["c1"]["visible"]
    assert "enabled: mcp__many__weather_forecast" in done["c1"]["visible"]
    second = _tools(requests[1])
    assert "mcp__many__weather_forecast" in second and len(second) == len(first) + 1
    assert done["c2"]["status"] == "ok" and "sunny in Oslo" in done["c2"]["visible"]
    assert (tmp_path / "ws" / "MARKER").read_text() == "Oslo\n"
    assert any(e["type"] == "notice" and "tools added: mcp__many__weather_forecast" in e["message"] for e in events)
    assert "sunny in Oslo" in json.dumps(requests[2]["messages"])


def test_under_the_count_every_tool_is_loaded_and_nothing_is_deferred(tmp_path: Path, cox_home: Path):
    _config(cox_home)  # the default count (40) is above the 38 tools of the two servers
    events, requests = _run(tmp_path, cox_home, [
        chat_tool("c1", "tool_search", {"query": "weather"}), chat_text(["ok"])])
    first = _tools(requests[0])
    assert len([n for n in first if n.startswith("mcp__")]) == 38
    assert "deferred (" not in first["tool_search"]
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    # No MCP tool waits behind tool_search; only cox's own work-graph tool does.
    assert "no deferred tool matches 'weather'" in done["result"]["visible"]
    assert "mcp__" not in done["result"]["visible"]


class _Fake(BaseTool):
    def __init__(self, name: str, server: str) -> None:
        self.name, self.server, self.description = name, server, f"fake {name}"
        self.input_schema = {"type": "object", "properties": {}}

    def call(self, call: ToolCall, env: Any) -> ToolResult:
        return ToolResult(visible=f"{self.name} ran")


def test_a_deferred_tool_called_directly_says_how_to_load_it(tmp_path: Path, cox_home: Path):
    from cox.actors.tools.registry import builtin_tools

    mcp = {f"mcp__s__x{i}": _Fake(f"mcp__s__x{i}", "s") for i in range(4)}
    tools, deferred = split_deferred({**builtin_tools(), **mcp}, 1)
    assert sorted(deferred) == ["mcp__s__x1", "mcp__s__x2", "mcp__s__x3"]
    ws = tmp_path / "ws"
    ws.mkdir()
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "d1", "name": "mcp__s__x2", "input": {}}]},
        {"tool_calls": [{"id": "d2", "name": "tool_search", "input": {"query": "select:mcp__s__x2"}}]},
        {"tool_calls": [{"id": "d3", "name": "mcp__s__x2", "input": {}}]},
        {"text": "done"},
    ], "go", tools=tools, deferred=deferred, allow=["mcp__s__x2"])
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert not done["d1"].ok and "select:mcp__s__x2" in done["d1"].visible
    assert done["d3"].ok and done["d3"].visible == "mcp__s__x2 ran"
    names = [[t.name for t in r.tools] for r in run.provider.requests]
    assert "mcp__s__x2" not in names[0] and "mcp__s__x2" in names[2]


def test_split_keeps_builtins_and_resource_tools_and_is_identity_under_the_count():
    from cox.actors.tools.registry import builtin_tools

    base = {**builtin_tools(), "list_mcp_resources": _Fake("list_mcp_resources", ""),
            **{f"mcp__a__t{i}": _Fake(f"mcp__a__t{i}", "a") for i in range(3)}}
    tools, deferred = split_deferred(base, 3)
    assert deferred == {} and tools == base and tools["tool_search"] is base["tool_search"]
    tools, deferred = split_deferred(base, 0)
    assert sorted(deferred) == ["mcp__a__t0", "mcp__a__t1", "mcp__a__t2"]
    assert set(tools) == set(builtin_tools()) | {"list_mcp_resources"}
    assert "3 more MCP tools are deferred (a: 3)" in tools["tool_search"].description
    assert "deferred" not in base["tool_search"].description  # the shared built-in is not changed


def test_a_project_may_lower_the_count_never_raise_it(tmp_path: Path, cox_home: Path):
    from cox.config import load_config

    ws = tmp_path / "ws"
    (ws / ".cox").mkdir(parents=True)
    cox_home.mkdir()
    (cox_home / "config.toml").write_text("[mcp]\nmax_loaded_tools = 10\n")
    (ws / ".cox" / "config.toml").write_text("[mcp]\nmax_loaded_tools = 500\n")
    config = load_config(ws, cox_home=cox_home, env={}, user_home=tmp_path)
    assert config.mcp.max_loaded_tools == 10
    assert any("max_loaded_tools" in w and "only lower" in w for w in config.warnings)
    (ws / ".cox" / "config.toml").write_text("[mcp]\nmax_loaded_tools = 2\n")
    assert load_config(ws, cox_home=cox_home, env={}, user_home=tmp_path).mcp.max_loaded_tools == 2


def _fakes(n: int) -> dict[str, BaseTool]:
    from cox.actors.tools.registry import builtin_tools

    return {**builtin_tools(), **{f"mcp__s__x{i}": _Fake(f"mcp__s__x{i}", "s") for i in range(n)}}


def test_a_resumed_session_loads_again_the_deferred_tools_it_called(tmp_path: Path, cox_home: Path):
    from cox.actors.session.resume import rebuild
    from cox.actors.store.rollout import read_rollout

    ws = tmp_path / "ws"
    ws.mkdir()
    tools, deferred = split_deferred(_fakes(4), 1)
    first = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "a1", "name": "tool_search", "input": {"query": "select:mcp__s__x3"}}]},
        {"tool_calls": [{"id": "a2", "name": "mcp__s__x3", "input": {}}]},
        {"text": "done"},
    ], "go", tools=tools, deferred=deferred, allow=["mcp__s__x3"])
    sid = first.settings.session_id
    rebuilt = rebuild(read_rollout(cox_home / "sessions" / f"{sid}.jsonl").events)
    tools, deferred = split_deferred(_fakes(4), 1)  # a new process: nothing activated yet
    again = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "b1", "name": "mcp__s__x3", "input": {}}]},
        {"text": "again"},
    ], "once more", tools=tools, deferred=deferred, allow=["mcp__s__x3"], resumed=rebuilt, session_id=sid)
    names = [t.name for t in again.provider.requests[0].tools]
    assert "mcp__s__x3" in names and "mcp__s__x2" not in names
    done = {e.call_id: e.result for e in again.of("tool_call_done")}
    assert done["b1"].ok and done["b1"].visible == "mcp__s__x3 ran"


def test_tools_pending_trust_take_a_loaded_place_last():
    from cox.actors.tools.registry import builtin_tools

    pending = _Fake("mcp__repo__p0", "repo")
    pending.trusted = False  # type: ignore[attr-defined]
    base = {**builtin_tools(), "mcp__repo__p0": pending, "mcp__mine__ok": _Fake("mcp__mine__ok", "mine")}
    tools, deferred = split_deferred(base, 1)
    assert "mcp__mine__ok" in tools and list(deferred) == ["mcp__repo__p0"]


@pytest.mark.parametrize("rules", [{"deny": ["mcp__s__x2"]}, {}])
def test_a_tool_loaded_by_tool_search_is_judged_like_any_other(tmp_path: Path, cox_home: Path,
                                                               rules: dict[str, list[str]]):
    # loading a tool is no permission to run it: a deny rule still refuses it, and with no
    # rule it asks (here nobody answers: approval policy never)
    from cox.protocol.types import ApprovalPolicy

    ws = tmp_path / "ws"
    ws.mkdir()
    ran: list[str] = []

    class Spy(_Fake):
        def call(self, call: ToolCall, env: Any) -> ToolResult:
            ran.append(self.name)
            return super().call(call, env)

    tools, deferred = split_deferred({**_fakes(2), "mcp__s__x2": Spy("mcp__s__x2", "s")}, 1)
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "d1", "name": "tool_search", "input": {"query": "select:mcp__s__x2"}}]},
        {"tool_calls": [{"id": "d2", "name": "mcp__s__x2", "input": {}}]},
        {"text": "done"},
    ], "go", tools=tools, deferred=deferred, policy=ApprovalPolicy.NEVER, **rules)
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert "enabled: mcp__s__x2" in done["d1"].visible
    assert done["d2"].status.value == "denied" and ran == []
