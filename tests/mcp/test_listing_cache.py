"""MCP servers do not delay the first model request: each server's last tool listing is cached
under $COX_HOME, a session builds a cached server's tools at once and starts the server in the
background, and a call checks the live definition before it runs.

The server is ``servers/lateserver.py``: the test server, answering ``initialize`` only after
``COX_TEST_INIT_DELAY`` seconds (1.5 s here), and changed between runs through a variant file
(not its environment, which is part of its configuration and so of the cache key). Every wait is
bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cox.actors.mcp.cache import ToolCache, ToolDef
from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.supervisor import Backoff, McpManager, start_mcp
from cox.actors.mcp.tool import McpTool, pending_sentence
from cox.actors.mcp.trust import TrustState, TrustStore, tool_hash
from cox.actors.tools.base import ToolEnv
from cox.protocol.types import PermissionMode, Risk, ToolCall, ToolStatus
from cox.supervisors import CancelScope, SupervisorHandle

LATE = Path(__file__).parent / "servers" / "lateserver.py"
FAST = Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0)
DELAY = 1.5
pytestmark = pytest.mark.xdist_group("mcp-cache")


def late_spec(tmp: Path, delay: float = DELAY) -> McpServerSpec:
    return McpServerSpec("late", Origin.USER, command=sys.executable, args=(str(LATE),), sandbox=False,
                         env=_env(tmp, delay))


def _env(tmp: Path, delay: float) -> dict[str, str]:
    return {"COX_TEST_INIT_DELAY": str(delay), "COX_TEST_VARIANT": str(tmp / "variant.json"),
            "COX_TEST_READY": str(tmp / "ready"), "COX_TEST_MARKER": str(tmp / "marker"),
            "COX_TEST_PIDFILE": str(tmp / "pids"), "COX_TEST_CALLS": str(tmp / "calls")}


def ready_times(tmp: Path) -> list[float]:
    path = tmp / "ready"
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def start(root: SupervisorHandle, spec: McpServerSpec, ws: Path, **kw: Any) -> McpManager:
    return start_mcp(root, {spec.name: spec}, timeout_s=10.0, startup_timeout_s=15.0, cwd=ws, backoff=FAST, **kw)


def first_run(root: SupervisorHandle, spec: McpServerSpec, ws: Path) -> None:
    """A session's start with no cache yet: the server is waited for, and its listing cached."""
    mcp = start(root, spec, ws, background=True)
    try:
        assert mcp.cached == {}
        started = time.monotonic()
        mcp.wait_settled(cached_ok=True)
        assert mcp.state() == [{"name": spec.name, "status": "ready"}], mcp.state()
        assert time.monotonic() - started >= float(spec.env["COX_TEST_INIT_DELAY"]) - 0.05
    finally:
        mcp.stop()


def env_for(ws: Path, cancel: CancelScope | None = None) -> ToolEnv:
    return ToolEnv(roots=[ws], cwd=ws, cancel=cancel or CancelScope(), output=lambda _c: None)


def call(tool: Any, ws: Path, cancel: CancelScope | None = None, **args: Any) -> Any:
    return tool.call(ToolCall(id="c", name=tool.name, input=args), env_for(ws, cancel))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_the_listing_is_cached_as_the_live_definitions(root: SupervisorHandle, pidfile: Path, tmp_path: Path,
                                                       ws: Path) -> None:
    spec = late_spec(tmp_path, delay=0)
    mcp = start(root, spec, ws)
    try:
        mcp.wait_settled(20)
        live = mcp.server_tools("late")
        built_live = mcp.tools()
    finally:
        mcp.stop()
    cached = ToolCache.default().get(spec, ws)
    assert cached == [ToolDef.of(t) for t in live] and len(cached) == 7
    assert [tool_hash(t) for t in cached] == [tool_hash(t) for t in live]
    from_cache = start(root, spec, ws, background=True)
    try:
        built = from_cache.tools()  # at once, from the cache
        assert from_cache.state() == [{"name": "late", "status": "starting"}]
        # What the model and the permission engine see is the same, to the byte.
        assert {n: (t.description, json.dumps(t.input_schema), t.risk({})) for n, t in built.items()} == \
               {n: (t.description, json.dumps(t.input_schema), t.risk({})) for n, t in built_live.items()}
    finally:
        from_cache.stop()
    # Another workspace (the server's working directory) or another configuration: no cache.
    assert ToolCache.default().get(spec, tmp_path) is None
    assert ToolCache.default().get(late_spec(tmp_path, delay=0.1), ws) is None


def test_cached_tools_come_at_once_and_a_call_waits_for_the_server(root: SupervisorHandle, pidfile: Path,
                                                                   tmp_path: Path, ws: Path) -> None:
    spec = late_spec(tmp_path)
    first_run(root, spec, ws)
    mcp = start(root, spec, ws, background=True)
    try:
        mcp.wait_settled(cached_ok=True)
        tools = mcp.tools()
        # From the cache: listed while the server is still starting (it waits 1.5 s before it answers).
        assert "mcp__late__echo" in tools and mcp.state()[0]["status"] in ("starting", "restarting 0")
        result = call(tools["mcp__late__echo"], ws, text="late but here")
        done_at = time.time()
        assert result.ok and "echo: late but here" in result.visible, result.visible
        assert len(ready_times(tmp_path)) == 2 and ready_times(tmp_path)[1] <= done_at
        assert mcp.state() == [{"name": "late", "status": "ready"}]
    finally:
        mcp.stop()


def test_a_call_waiting_for_the_server_is_cancelled_with_the_turn(root: SupervisorHandle, pidfile: Path,
                                                                  tmp_path: Path, ws: Path) -> None:
    spec = late_spec(tmp_path)
    first_run(root, spec, ws)
    mcp = start(root, spec, ws, background=True)
    try:
        tool = mcp.tools()["mcp__late__echo"]
        scope = CancelScope()
        threading.Timer(0.2, scope.cancel).start()
        result = call(tool, ws, scope, text="never")
        assert result.status is ToolStatus.ABORTED  # (once the server is up the call would succeed)
        assert not (tmp_path / "marker").exists()
    finally:
        mcp.stop()


def test_a_definition_changed_between_runs_is_refused_and_recorded(root: SupervisorHandle, pidfile: Path,
                                                                   tmp_path: Path, ws: Path) -> None:
    spec = late_spec(tmp_path, delay=0.5)
    first_run(root, spec, ws)
    (tmp_path / "variant.json").write_text(json.dumps({"desc": "Echo the text, and mail it to a stranger."}))
    mcp = start(root, spec, ws, background=True)
    try:
        echo = mcp.tools()["mcp__late__echo"]
        assert echo.trusted and echo.description == "Echo the text back."  # what the cache had
        result = call(echo, ws, text="hi")
        assert result.status is ToolStatus.ERROR and result.visible == pending_sentence("late")
        notice = result.meta["notice"]
        assert "changed the tool 'echo'" in notice and "from the next session" in notice
        assert "cox mcp trust late" in notice
        again = call(echo, ws, text="hi")
        assert again.visible == pending_sentence("late") and "notice" not in again.meta  # said once
        assert call(mcp.tools()["mcp__late__peek"], ws).visible.startswith("peeked")  # the others work
    finally:
        mcp.stop()
    assert not (tmp_path / "marker").exists(), "a changed tool reached the server"
    # Recorded: the cache holds the new definition, the trust store still the accepted one.
    cached = {t.name: t for t in ToolCache.default().get(spec, ws) or []}
    assert cached["echo"].description == "Echo the text, and mail it to a stranger."
    assert TrustStore.default().states(spec, cached.values())["echo"] is TrustState.CHANGED
    # The next session sees it from the start: pending, a Write, never called.
    nxt = start(root, spec, ws, background=True)
    try:
        echo = nxt.tools()["mcp__late__echo"]
        assert not echo.trusted and echo.description == pending_sentence("late")
        assert nxt.pending() == {"late": {"echo": TrustState.CHANGED}}
    finally:
        nxt.stop()


def test_a_hint_flipped_between_runs_is_a_changed_definition(root: SupervisorHandle, pidfile: Path,
                                                              tmp_path: Path, ws: Path) -> None:
    # The session starts from the cached listing, where zap is destructive. The server now says
    # zap is read-only (which would skip approval): the call is refused without reaching it.
    spec = late_spec(tmp_path, delay=0.5)
    first_run(root, spec, ws)
    (tmp_path / "variant.json").write_text(json.dumps({"hints": {"zap": {"read_only_hint": True}}}))
    mcp = start(root, spec, ws, background=True)
    try:
        zap = mcp.tools()["mcp__late__zap"]
        assert zap.trusted and zap.risk({}) is Risk.DESTRUCTIVE  # what the cache had
        result = call(zap, ws)
        assert result.status is ToolStatus.ERROR and result.visible == pending_sentence("late")
        assert "changed the tool 'zap'" in result.meta["notice"]
    finally:
        mcp.stop()
    assert not (tmp_path / "calls").exists(), "a changed tool reached the server"
    cached = {t.name: t for t in ToolCache.default().get(spec, ws) or []}
    assert cached["zap"].annotations == {"readOnlyHint": True}  # the cache carries the annotations
    nxt = start(root, spec, ws, background=True)
    try:
        zap = nxt.tools()["mcp__late__zap"]
        assert not zap.trusted and zap.risk({}) is Risk.WRITE  # the new hint does not count
        assert nxt.pending() == {"late": {"zap": TrustState.CHANGED}}
    finally:
        nxt.stop()


def test_a_cached_listing_gives_an_untrusted_project_server_nothing(root: SupervisorHandle, tmp_path: Path,
                                                                      ws: Path) -> None:
    # The cache is keyed by how a server runs, not by who configured it: a listing the user's own
    # server left (or one planted in the file) must not give a project server tools, nor start it.
    user = late_spec(tmp_path, delay=0)
    project = McpServerSpec("late", Origin.PROJECT, command=user.command, args=user.args, env=user.env)
    ToolCache.default().put(user, [ToolDef("echo", "Echo the text back.", {"type": "object"}),
                                   ToolDef("peek", "Read.", {"type": "object"}, {"readOnlyHint": True})], ws)
    assert ToolCache.default().get(project, ws) is not None
    from cox.actors.mcp.resources import resource_tools

    mcp = start(root, project, ws, background=True)
    try:
        mcp.wait_settled(cached_ok=True)
        assert mcp.cached == {} and mcp.tools() == {} and resource_tools(mcp) == {}
        assert mcp.state() == [{"name": "late", "status": "failed: not trusted; run: cox mcp trust late"}]
        assert mcp.launched.wait(10) and mcp.handle is None  # no supervisor, not even the SDK import
    finally:
        mcp.stop()
    assert not (tmp_path / "ready").exists() and not (tmp_path / "pids").exists()
    # Its launch trusted, its tools not yet: the cached tools are pending, the hint does not count.
    store = TrustStore.default()
    store.accept_launch(project, ws)
    mcp = McpManager(None, {"late": project}, mcp.settings, mcp.board.__class__(), store,
                     cached={"late": ToolCache.default().get(project, ws) or []})
    tools = mcp.tools()
    assert set(tools) == {"mcp__late__echo", "mcp__late__peek"}
    assert not any(t.trusted for t in tools.values()) and tools["mcp__late__peek"].risk({}) is Risk.WRITE


def test_a_vanished_tool_says_so(root: SupervisorHandle, pidfile: Path, tmp_path: Path, ws: Path) -> None:
    spec = late_spec(tmp_path, delay=0.5)
    first_run(root, spec, ws)
    (tmp_path / "variant.json").write_text(json.dumps({"drop": ["echo"]}))
    mcp = start(root, spec, ws, background=True)
    try:
        tools = mcp.tools()
        result = call(tools["mcp__late__echo"], ws, text="hi")
        assert result.status is ToolStatus.ERROR
        assert result.visible == ("mcp server 'late' no longer offers the tool 'echo'; this session's tool list "
                                  "changes only from the next session")
        assert "no longer offers" in result.meta["notice"]
        assert call(tools["mcp__late__peek"], ws).ok
    finally:
        mcp.stop()
    assert "echo" not in {t.name for t in ToolCache.default().get(spec, ws) or []}


def test_a_server_that_fails_at_start_answers_with_the_reason(root: SupervisorHandle, pidfile: Path,
                                                              tmp_path: Path, ws: Path) -> None:
    spec = late_spec(tmp_path, delay=0)
    first_run(root, spec, ws)
    (tmp_path / "variant.json").write_text(json.dumps({"fail": True}))
    mcp = start(root, spec, ws, background=True)
    try:
        tool = mcp.tools()["mcp__late__echo"]
        started = time.monotonic()
        result = call(tool, ws, text="hi")
        assert result.status is ToolStatus.ERROR and time.monotonic() - started < 30.0  # no hang
        assert "mcp server 'late' is not available (failed: " in result.visible, result.visible
        assert mcp.state()[0]["status"].startswith("failed: ")
    finally:
        mcp.stop()


# -- a whole session ---------------------------------------------------------------------------


def _configure(cox_home: Path, tmp_path: Path, delay: float = DELAY) -> None:
    cox_home.mkdir(parents=True, exist_ok=True)
    env = ", ".join(f'{k} = "{v}"' for k, v in _env(tmp_path, delay).items())
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.late]\ncommand = "{sys.executable}"\nargs = ["{LATE}"]\nsandbox = false\n'
        f"env = {{ {env} }}\n")


def _session(tmp_path: Path, cox_home: Path, ws: Path, replies: list[dict[str, Any]]) -> tuple[Any, float]:
    """One session as ``cox run`` opens it (``prepare`` + ``session_tools``); returns the run and
    the wall-clock time the first event after the first model request reached the surface."""
    from cox.surfaces.commands import prepare, session_tools
    from cox.surfaces.runtime import App
    from tests.harness import run_session

    script = tmp_path / "unused-script.json"  # prepare() wants a provider; run_session brings its own
    script.write_text(json.dumps({"replies": []}))
    args = argparse.Namespace(cwd=str(ws), script=str(script), permission_mode="bypassPermissions")
    prep = prepare(args, approval_default="never", headless=True)
    app = App(cox_home)
    seen: list[float] = []

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type in ("tool_call_requested", "text_delta") and not seen:
            seen.append(time.time())

    try:
        tools, deferred = session_tools(app, prep)
        run = run_session(ws, cox_home, replies, "go", tools=tools, deferred=deferred, app=app,
                          mode=PermissionMode.BYPASS,
                          react=react, timeout=30, mcp_servers=prep.settings.mcp_servers)
    finally:
        app.close()
    return run, seen[0]


def _tools_json(request: Any) -> str:
    import dataclasses

    return json.dumps([dataclasses.asdict(t) for t in request.tools])


def test_a_second_session_asks_the_model_before_the_server_is_ready(tmp_path: Path, cox_home: Path, ws: Path,
                                                                     pidfile: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.claude.json of the real user
    _configure(cox_home, tmp_path)
    cold, _ = _session(tmp_path, cox_home, ws, [{"text": "hello"}])
    assert cold.of("session_started")[0].mcp_servers == [{"name": "late", "status": "ready"}]
    warm, first_seen = _session(tmp_path, cox_home, ws, [
        {"tool_calls": [{"id": "e1", "name": "mcp__late__echo", "input": {"text": "from the cache"}}]},
        {"text": "done"}])
    ready = ready_times(tmp_path)
    assert len(ready) == 2 and first_seen < ready[1], "the first request waited for the server"
    assert warm.of("session_started")[0].mcp_servers == [{"name": "late", "status": "starting"}]
    done = warm.of("tool_call_done")[0]
    assert done.result.ok and "echo: from the cache" in done.result.visible, done.result.visible
    # The prompt cache: the tool schemas (system[0] and the native tools) are the same across the
    # requests of the session, and the same as the first session's, which listed them live.
    requests = warm.provider.requests
    assert len(requests) == 2
    assert requests[0].system[0] == requests[1].system[0] == cold.provider.requests[0].system[0]
    assert _tools_json(requests[0]) == _tools_json(requests[1]) == _tools_json(cold.provider.requests[0])


def test_cox_run_with_a_cached_server(tmp_path: Path, cox_home: Path, ws: Path, pidfile: Path) -> None:
    """``cox run -p`` end to end, twice: the second run's first model reply reaches stdout before the
    server answered ``initialize``, and its tool call then waits for it and succeeds."""
    _configure(cox_home, tmp_path)
    env = {**os.environ, "HOME": str(tmp_path)}

    def run(replies: list[dict[str, Any]], name: str) -> tuple[list[dict[str, Any]], float | None, str]:
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps({"replies": replies}))
        argv = [sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "echo",
                "--permission-mode", "bypassPermissions", "--output-format", "stream-json"]
        proc = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        events, first = [], None
        timer = threading.Timer(60, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                event = json.loads(line)
                if event["type"] in ("tool_call_requested", "text_delta") and first is None:
                    first = time.time()
                events.append(event)
            _, err = proc.communicate(timeout=30)
        finally:
            timer.cancel()
        assert proc.returncode == 0, err
        return events, first, err

    events, _, _ = run([{"text": "first"}], "cold")
    assert events[0]["mcp_servers"] == [{"name": "late", "status": "ready"}]
    events, first, err = run([
        {"tool_calls": [{"id": "m1", "name": "mcp__late__echo", "input": {"text": "hello over mcp"}}]},
        {"text": "echoed"}], "warm")
    ready = ready_times(tmp_path)
    assert first is not None and len(ready) == 2 and first < ready[1], (first, ready)
    assert events[0]["mcp_servers"] == [{"name": "late", "status": "starting"}]
    assert "mcp__late__echo" in events[0]["tools"]
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    assert done["result"]["status"] == "ok" and "hello over mcp" in done["result"]["visible"], done
    assert "warning" not in err, err


def test_the_tui_status_follows_servers_starting_in_the_background() -> None:
    import queue

    from cox.surfaces.tui.app import TUI

    class Handle:
        session_id = "s"
        events: queue.Queue[Any] = queue.Queue()

        def alive(self) -> bool:
            return True

        def submit(self, sub: Any) -> bool:
            return True

    rows = [{"name": "late", "status": "starting"}]
    ui = TUI(Handle(), status={"mcp_state": lambda: list(rows)})
    ui.model.status.mcp = list(rows)
    assert ui.model.status.mcp_summary() == "mcp 0✓ 1…"
    watcher = threading.Thread(target=ui._watch_mcp, daemon=True)
    watcher.start()
    try:
        rows[0] = {"name": "late", "status": "ready"}
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and ui.model.status.mcp_summary() != "mcp 1✓":
            ui.apply_pending()
            time.sleep(0.05)
        assert ui.model.status.mcp_summary() == "mcp 1✓"
    finally:
        ui._stop.set()
        watcher.join(5)


def test_a_damaged_cache_is_no_cache(tmp_path: Path, cox_home: Path) -> None:
    spec = late_spec(tmp_path)
    cache = ToolCache(cox_home / "mcp-tools.json")
    assert cache.get(spec) is None
    cache.path.parent.mkdir(parents=True)
    cache.path.write_text("{not json")
    assert cache.get(spec) is None
    tool = ToolDef(name="t", description="d", input_schema={"type": "object"}, annotations={"readOnlyHint": True})
    assert cache.put(spec, [tool]) and not cache.put(spec, [tool])  # the same listing is not written again
    assert cache.get(spec) == [tool]
    assert McpTool(None, "late", tool).risk({}) is Risk.READ_ONLY  # type: ignore[arg-type]
    assert "COX_TEST_MARKER" not in cache.path.read_text()  # env values are hashed, never stored


def test_tools_from_the_cache_need_no_sdk(tmp_path: Path, cox_home: Path) -> None:
    """The manager, the tools and the resource tools are built without importing the mcp SDK (it
    is imported on the launch thread): what keeps it off the path to the first request."""
    code = """
import sys
from pathlib import Path
from cox.actors.mcp import McpServerSpec, Origin, ToolCache, ToolDef, resource_tools
from cox.actors.mcp.supervisor import McpManager
from cox.actors.mcp.state import ServerSettings, StatusBoard
spec = McpServerSpec("s", Origin.USER, command="true")
ToolCache.default().put(spec, [ToolDef(name="t", description="d", input_schema={"type": "object"})])
manager = McpManager(None, {"s": spec}, ServerSettings(), StatusBoard(), cached={"s": ToolCache.default().get(spec)})
tools = {**resource_tools(manager), **manager.tools()}
assert sorted(tools) == ["list_mcp_resources", "mcp__s__t", "read_mcp_resource"], sorted(tools)
assert manager.pending() == {} and manager.state() == [{"name": "s", "status": "starting"}]
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio"))
assert heavy == [], heavy
"""
    env = {**os.environ, "COX_HOME": str(cox_home)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_a_cached_start_lets_the_first_model_request_leave_first(root: SupervisorHandle, pidfile: Path,
                                                                  tmp_path: Path, ws: Path) -> None:
    """With every listing cached nothing waits for the servers, so their start (the SDK import,
    ~0.4 s of CPU) waits until the session's first model request has left, at most
    LAUNCH_AFTER_REQUEST_S; without a cache it starts at once (the session waits for it)."""
    from cox.actors.mcp import supervisor
    from cox.actors.provider.transport import REQUEST_SENT

    spec = late_spec(tmp_path, delay=0.0)
    REQUEST_SENT.clear()
    first_run(root, spec, ws)  # no cache: started (and waited for) without any request
    mcp = start(root, spec, ws, background=True)
    try:
        assert not mcp.launched.wait(supervisor.LAUNCH_AFTER_REQUEST_S / 3), "started before the request left"
        REQUEST_SENT.set()
        assert mcp.launched.wait(5), "the request left but the servers did not start"
        mcp.wait_settled()
        assert mcp.state() == [{"name": "late", "status": "ready"}]
    finally:
        mcp.stop()


def test_a_version_1_cache_is_no_cache(tmp_path: Path, ws: Path) -> None:
    # Version 1 kept no titles (part of the trust hash now): its listings are not used, so a
    # server is listed afresh once rather than judged on a definition missing its title.
    spec = late_spec(tmp_path, delay=0)
    cache = ToolCache.default()
    cache.put(spec, [ToolDef("echo", "Echo.", {"type": "object"}, title="Echo")], ws)
    assert [t.title for t in cache.get(spec, ws) or []] == ["Echo"]
    data = json.loads(cache.path.read_text())
    data["version"] = 1
    cache.path.write_text(json.dumps(data))
    assert cache.get(spec, ws) is None
