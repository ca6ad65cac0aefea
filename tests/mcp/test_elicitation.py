"""MCP elicitation and resources against real server processes.

``servers/elicitserver.py`` (a Python MCP server) elicits a form and a URL and offers text and
blob resources; it writes what reached it to ``COX_TEST_ANSWERS``. The session is real (scripted
model), the McpServer actors are real, answers are given the way a surface gives them
(``Answer`` submissions), and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cox.actors.mcp import resource_tools
from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.supervisor import Backoff, McpManager, start_mcp
from cox.actors.mcp.trust import TrustStore
from cox.actors.tools.base import ToolEnv, ToolServices
from cox.actors.tools.registry import builtin_tools
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, ToolCall, ToolStatus
from cox.supervisors import CancelScope
from cox.surfaces.runtime import App
from tests.harness import run_session
from tests.waits import BOUND_S

SERVER = Path(__file__).parent / "servers" / "elicitserver.py"
FAST = Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0)
pytestmark = pytest.mark.xdist_group("mcp-elicit")


def spec(answers: Path, origin: Origin = Origin.USER, **env: str) -> McpServerSpec:
    return McpServerSpec("e", origin, command=sys.executable, args=(str(SERVER),),
                         env={"COX_TEST_ANSWERS": str(answers), **env})


@pytest.fixture
def app(cox_home: Path) -> Iterator[App]:
    app = App(cox_home)
    try:
        yield app
    finally:
        app.close()


def connect(app: App, tmp_path: Path, *, elicitation: bool = True, timeout_s: float = 30.0,
            origin: Origin = Origin.USER, **env: str) -> McpManager:
    server = spec(tmp_path / "answers.txt", origin, **env)
    store = TrustStore(tmp_path / "trust.json")
    if origin is Origin.PROJECT:  # a project server starts only once its launch is trusted
        store.accept_launch(server, tmp_path)
    manager = start_mcp(app.root, {"e": server}, timeout_s=timeout_s,
                        startup_timeout_s=30.0, cwd=tmp_path, backoff=FAST, elicitation=elicitation,
                        trust=store)
    manager.wait_settled(40)
    assert manager.state() == [{"name": "e", "status": "ready"}], manager.state()
    return manager


def answers(tmp_path: Path) -> list[Any]:
    path = tmp_path / "answers.txt"
    if not path.exists():
        return []
    return [line if line == "cancelled" else json.loads(line) for line in path.read_text().splitlines()]


def wait_for(check: Any, timeout: float = BOUND_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def session_tools(manager: McpManager) -> dict[str, Any]:
    return {**builtin_tools(), **resource_tools(manager), **manager.tools()}


SIGNUP = [{"tool_calls": [{"id": "s1", "name": "mcp__e__signup", "input": {}}]}, {"text": "Signed up."}]


def test_a_form_is_asked_field_by_field_and_only_the_server_gets_the_answers(app: App, tmp_path: Path,
                                                                            cox_home: Path) -> None:
    # mcp.timeout_s is 1 s, and the person takes longer than that over the first field.
    manager = connect(app, tmp_path, timeout_s=1.0)
    typed = iter(["Zebedee Quux", "abc", "41", "Blue", "", "send"])

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            if not run.of("question")[:-1]:
                time.sleep(1.5)
            handle.submit(m.Answer(question_id=event.question_id, answer=next(typed)))

    run = run_session(tmp_path, cox_home, SIGNUP, "sign me up", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, react=react, timeout=40)
    questions = run.of("question")
    assert [q.source for q in questions] == ["mcp:e"] * 6
    assert "(1/4) Name — your full name" in questions[0].prompt
    assert questions[2].prompt.startswith("✗ not a whole number; try again")
    assert [o["title"] for o in questions[3].schema["properties"]["colour"]["oneOf"]] == ["Red", "Green", "Blue"]
    assert "send Name, Age, Colour, Newsletter to mcp:e?" in questions[5].prompt
    done = run.of("tool_call_done")[0].result
    assert done.status is ToolStatus.OK and done.visible == "action=accept fields=age,colour,name,news", done.visible
    assert answers(tmp_path) == [{"action": "accept", "content": {"name": "Zebedee Quux", "age": 41,
                                                                  "colour": "b", "news": False}}]
    assert run.provider is not None
    assert "Zebedee" not in json.dumps([r.messages for r in run.provider.requests])
    assert not any("Zebedee" in line for line in run.lines)


def test_an_interrupt_cancels_the_question_and_the_call(app: App, tmp_path: Path, cox_home: Path) -> None:
    manager = connect(app, tmp_path)

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            handle.interrupt()

    run = run_session(tmp_path, cox_home, SIGNUP, "sign me up", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, react=react, timeout=30)
    assert run.of("turn_done")[-1].stop.value == "interrupted"
    # The open question closes on every surface, before the turn ends, saying why.
    asked, closed = run.of("question")[0], run.of("question_closed")
    assert [(c.question_id, c.reason) for c in closed] == [(asked.question_id, "interrupted")]
    assert run.types().index("question_closed") < run.types().index("turn_done")
    assert run.of("tool_call_done")[0].result.status is ToolStatus.ABORTED
    wait_for(lambda: answers(tmp_path) == ["cancelled"])  # the server's waiting request was cancelled
    # The connection is fine afterwards: the next call reaches the server and asks again.
    run = run_session(tmp_path, cox_home, SIGNUP, "again", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, timeout=30,
                      react=lambda e, h, r: e.type == "question" and h.submit(m.Answer(question_id=e.question_id,
                                                                                        declined=True)))
    assert run.of("tool_call_done")[0].result.visible == "action=cancel"


def test_a_server_that_gives_up_withdraws_its_question(app: App, tmp_path: Path, cox_home: Path) -> None:
    manager = connect(app, tmp_path, COX_TEST_WITHDRAW_S="0.5")
    replies = [{"tool_calls": [{"id": "w1", "name": "mcp__e__withdraw", "input": {}}]}, {"text": "ok"}]
    run = run_session(tmp_path, cox_home, replies, "ask", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, timeout=30)
    assert len(run.of("question")) == 1
    asked, closed = run.of("question")[0], run.of("question_closed")
    assert [(c.question_id, c.reason) for c in closed] == [(asked.question_id, "withdrawn")]
    assert run.of("tool_call_done")[0].result.visible == "gave up waiting"
    assert run.types().index("question_closed") < run.types().index("turn_done")


def test_an_answer_to_a_withdrawn_question_is_ignored_quietly(app: App, tmp_path: Path, cox_home: Path) -> None:
    # The person answers just as the server withdraws: the Answer reaches a closed question.
    manager = connect(app, tmp_path, COX_TEST_WITHDRAW_S="0.5")
    replies = [{"tool_calls": [{"id": "w1", "name": "mcp__e__withdraw", "input": {}}]}, {"text": "ok"}]

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question_closed":
            handle.submit(m.Answer(question_id=event.question_id, answer="too late"))

    run = run_session(tmp_path, cox_home, replies, "ask", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, react=react, timeout=30)
    assert [c.reason for c in run.of("question_closed")] == ["withdrawn"]
    assert not [n for n in run.of("notice") if "no open question" in n.message]
    assert run.of("tool_call_done")[0].result.visible == "gave up waiting"


def test_without_a_person_the_client_declares_no_elicitation_and_declines(app: App, tmp_path: Path,
                                                                         cox_home: Path) -> None:
    manager = connect(app, tmp_path, elicitation=False)
    run = run_session(tmp_path, cox_home, SIGNUP, "sign me up", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, timeout=30)
    assert not run.of("question")
    assert run.of("tool_call_done")[0].result.visible == "action=decline"
    assert answers(tmp_path) == [{"action": "decline"}]


def call(tool: Any, **inp: Any) -> Any:
    env = ToolEnv(roots=[Path.cwd()], cwd=Path.cwd(), cancel=CancelScope(),
                  services=ToolServices(archive=lambda data: f"A{len(data)}"))
    return tool.call(ToolCall(id="r", name=tool.name, input=inp), env)


def test_resources_are_listed_and_read(app: App, tmp_path: Path) -> None:
    manager = connect(app, tmp_path)
    tools = resource_tools(manager)
    assert set(tools) == {"list_mcp_resources", "read_mcp_resource"}
    assert all(t.risk({}) .value == "read_only" and t.parallel for t in tools.values())
    listed = call(tools["list_mcp_resources"])
    assert listed.ok, listed.visible
    assert "e: 4 resource(s), 1 template(s)" in listed.visible
    assert "  note://readme  readme  (text/plain) — A short text note." in listed.visible
    assert "  template note://items/{item}  item" in listed.visible
    read = tools["read_mcp_resource"]
    assert read.subject({"server": "e", "uri": "note://readme"}, None) == "e note://readme"  # type: ignore[arg-type]
    assert call(read, server="e", uri="note://readme").visible == "hello from the resource"
    assert call(read, server="e", uri="note://items/pear").visible == "item pear"
    text_blob = call(read, server="e", uri="blob://data.json")
    assert "blob, decoded as UTF-8:\n{\"k\": \"v\\u00e4\"}" in text_blob.visible, text_blob.visible
    image = call(read, server="e", uri="blob://pixel.png")
    assert image.images and image.images[0]["media_type"] == "image/png" and "image/png" in image.visible
    binary = call(read, server="e", uri="blob://raw.bin")
    assert "binary, application/octet-stream, 1 KiB; archived whole as #A1024" in binary.visible
    missing = call(read, server="e", uri="note://nope")
    assert missing.status is ToolStatus.ERROR and "refused resources/read" in missing.visible
    assert call(tools["list_mcp_resources"], server="x").status is ToolStatus.ERROR


def test_a_pending_servers_resources_stay_hidden(app: App, tmp_path: Path) -> None:
    manager = connect(app, tmp_path, origin=Origin.PROJECT)
    tools = resource_tools(manager)
    listed = call(tools["list_mcp_resources"])
    assert listed.visible == "e: pending trust; run: cox mcp trust e"
    read = call(tools["read_mcp_resource"], server="e", uri="note://readme")
    assert read.status is ToolStatus.ERROR and "cox mcp trust e" in read.visible
    manager.trust.accept("e", manager.server_tools("e"))  # cox mcp trust e
    assert call(tools["read_mcp_resource"], server="e", uri="note://readme").visible == "hello from the resource"


# ---------------------------------------------------------------- the command line


def cli_setup(tmp_path: Path, cox_home: Path, replies: list[dict[str, Any]]) -> tuple[Path, Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.e]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\nsandbox = false\n'
        f'env = {{ COX_TEST_ANSWERS = "{tmp_path / "answers.txt"}" }}\n'
        '[permissions]\nallow = ["mcp__e"]\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": replies}))
    env = {**os.environ, "HOME": str(tmp_path), "COX_HOME": str(cox_home)}
    return ws, script, env


def test_cox_run_p_declares_nothing_and_the_server_gets_decline(tmp_path: Path, cox_home: Path) -> None:
    ws, script, env = cli_setup(tmp_path, cox_home, SIGNUP)
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "sign up",
                        "--output-format", "stream-json"], cwd=ws, env=env, capture_output=True, text=True,
                       timeout=90)
    assert p.returncode == 0, p.stderr
    events = [json.loads(x) for x in p.stdout.splitlines()]
    assert not [e for e in events if e["type"] == "question"]
    assert {"list_mcp_resources", "read_mcp_resource", "mcp__e__signup"} <= set(events[0]["tools"])
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    assert done["result"]["visible"] == "action=decline"
    assert answers(tmp_path) == [{"action": "decline"}]


def test_plain_answers_a_form_and_a_url_on_stdin(tmp_path: Path, cox_home: Path) -> None:
    replies = [*SIGNUP, {"tool_calls": [{"id": "l1", "name": "mcp__e__login",
                                         "input": {"url": "https://exämple.com/login"}}]}, {"text": "Logged in."},
               {"tool_calls": [{"id": "s2", "name": "mcp__e__signup", "input": {}}]}, {"text": "Cancelled."}]
    ws, script, env = cli_setup(tmp_path, cox_home, replies)
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(f"import sys\nopen({str(opened)!r}, 'a').write(sys.argv[1] + '\\n')\n")
    env["BROWSER"] = f"{sys.executable} {recorder} %s"
    # name; a bad age, then 30; colour by number; newsletter yes; edit: keep, keep, Red, keep; send.
    # Then the URL: open. Then a second sign-up cancelled with an empty line. Then /quit.
    stdin = "sign me up\nZebedee\nabc\n30\n3\ny\nedit\n\n\nRed\n\nsend\nlog in\nopen\nagain\n\n/quit\n"
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--plain", "--script", str(script)],
                       cwd=ws, env=env, input=stdin, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr + p.stdout
    out = p.stdout
    assert "question from mcp:e:" in out and "(1/4) Name — your full name" in out
    assert "✗ not a whole number; try again" in out
    assert "1) Red   2) Green   3) Blue" in out
    assert "send Name, Age, Colour, Newsletter to mcp:e?" in out
    assert "open  https://xn--exmple-cua.com/login" in out and "host  xn--exmple-cua.com" in out
    assert "⚠ the host is punycode" in out
    assert "action=accept fields=age,colour,name,news" in out and "Logged in." in out
    assert answers(tmp_path) == [
        {"action": "accept", "content": {"name": "Zebedee", "age": 30, "colour": "r", "news": True}},
        {"action": "accept"},
        {"action": "cancel"},
    ]
    wait_for(lambda: opened.exists())
    assert opened.read_text() == "https://xn--exmple-cua.com/login\n"
    rollouts = list(cox_home.rglob("*.jsonl"))
    assert rollouts and not any("Zebedee" in r.read_text() for r in rollouts)


def test_an_untrusted_project_server_keeps_the_builtin_tools(tmp_path: Path, cox_home: Path) -> None:
    # Regression: the pending-trust warning loop reused the name of the tool dict, so a project
    # server waiting for `cox mcp trust` replaced every built-in tool of the session. Now such a
    # server is not even started: it has no tools, and the session says what to run.
    ws, script, env = cli_setup(tmp_path, cox_home, [{"text": "ok"}])
    (cox_home / "config.toml").write_text("")
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {"command": sys.executable,
                                                                   "args": [str(SERVER)]}}}))
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "hi",
                        "--output-format", "stream-json"], cwd=ws, env=env, capture_output=True, text=True,
                       timeout=90)
    assert p.returncode == 0, p.stderr
    assert "mcp server 'p'" in p.stderr and "not trusted; run: cox mcp trust p" in p.stderr
    started = json.loads(p.stdout.splitlines()[0])
    assert {"read", "bash"} <= set(started["tools"]), started["tools"]
    assert not any(t.startswith("mcp__p__") or t == "list_mcp_resources" for t in started["tools"])
    assert started["mcp_servers"] == [{"name": "p", "status": "failed: not trusted; run: cox mcp trust p"}]


def test_a_server_that_elicits_at_once_still_reaches_the_person(app: App, tmp_path: Path, cox_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The calling thread may be descheduled right after it hands the call to the connection's
    loop; a server that elicits at once must still find the session to ask (it used to get
    decline when its request beat the asker's registration)."""
    import asyncio

    from cox.actors.mcp import server as mcp_server

    real = asyncio.run_coroutine_threadsafe

    def slow_caller(coro: Any, loop: Any) -> Any:
        future = real(coro, loop)
        time.sleep(0.5)  # the server's elicitation arrives meanwhile
        return future

    manager = connect(app, tmp_path)
    monkeypatch.setattr(mcp_server.asyncio, "run_coroutine_threadsafe", slow_caller)

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            handle.submit(m.Answer(question_id=event.question_id, declined=True))

    run = run_session(tmp_path, cox_home, SIGNUP, "sign me up", tools=session_tools(manager), app=app,
                      mode=PermissionMode.BYPASS, react=react, timeout=30)
    assert run.of("question"), "the server's question never reached the session"
    assert answers(tmp_path) == [{"action": "cancel"}]
