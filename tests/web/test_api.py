"""``cox serve``'s HTTP API against the real server (a subprocess) with a real client (httpx):
every route, every 422, the Host, Origin and token checks, approvals each way, busy sessions,
cancel on disconnect. One server for the module; each scenario is its own session, whose
scripted replies are keyed by the session's first prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.procs import pids_with
from tests.waits import BOUND_S

from .served import Served, events, script, text_of

SLEEP = "sleep 97.25"
AGENTS: dict[str, list[dict[str, Any]]] = {
    "hello": [{"text": "Hello from cox", "chunk": 4}],
    "think": [{"thinking": "pondering", "signature": "sig-1", "text": "Thought done"}],
    "touch": [{"tool_calls": [{"name": "bash", "input": {"command": "touch yes.txt"}}]}, {"text": "touched"}],
    "deny": [{"tool_calls": [{"name": "bash", "input": {"command": "touch no.txt"}}]}, {"text": "unreachable"}],
    "always": [{"tool_calls": [{"name": "bash", "input": {"command": "touch always.txt"}}]},
               {"tool_calls": [{"name": "bash", "input": {"command": "touch always.txt"}}]}, {"text": "twice"}],
    "refuse": [{"text": "I won't", "stop": "refusal"}],
    "put kindly": [{"text": "rephrased, answered"}],  # the refused turn is rolled back: this one is the first prompt
    "sleep": [{"tool_calls": [{"name": "bash", "input": {"command": SLEEP}}]}, {"text": "after the sleep"}],
}
# The chat's replies are keyed by each conversation's first prompt (as a subagent's are), so each
# test gets its own whichever worker runs it and in whatever order: xdist spreads a module's tests
# over both workers, each with its own server.
CHAT: dict[str, list[dict[str, Any]]] = {
    "chat hi": [{"text": "chat reply", "chunk": 5}],
    "chat first": [{"thinking": "hmm", "signature": "sig-c", "text": "answer"}],
    "chat q": [{"thinking": "hidden", "signature": "sig-h", "text": "shown"}],
    "chat bad": [{"text": "I can't help with that", "stop": "refusal"}],
    "chat none": [],  # no reply at all: the model call fails
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve")
    ws = root / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Always answer in haiku.\n", encoding="utf-8")
    s = Served(ws, script(root / "script.json", [], {**AGENTS, **CHAT}), root)
    s.ws = ws  # type: ignore[attr-defined]
    yield s
    assert s.stop() == 0, "".join(s.stderr)


def test_the_page_carries_the_token_and_may_not_be_framed(server: Served) -> None:
    r = server.client.get("/")
    assert r.status_code == 200 and server.token in r.text
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert "connect-src 'self'" in r.headers["content-security-policy"]


def test_config_lists_models_efforts_and_modes(server: Served) -> None:
    r = server.client.get("/api/config")
    assert r.status_code == 200
    c = r.json()
    assert c["models"] == ["scripted"] and c["default_model"] == "scripted"
    assert c["efforts"] == ["low", "medium", "high"] and c["default_effort"] == {"scripted": "high"}
    assert c["modes"] == ["default", "accept-edits"]
    assert "key" not in r.text.lower()


def test_a_turn_streams_start_blocks_deltas_and_done(server: Served) -> None:
    sid = server.session(mode="default", effort="low", thinking_display="summarized")
    frames = server.turn(sid, "hello there")
    names = [n for n, _ in frames]
    assert names[0] == "start" and names[-1] == "done"
    assert names[1] == "block" and frames[1][1] == {"index": 0, "block": {"type": "text"}}
    assert text_of(frames) == "Hello from cox"
    assert sum(1 for n in names if n == "delta") == 4  # streamed in the script's chunks, not at once
    assert frames[-1][1]["stop"] == "end_turn"


def test_thinking_and_text_are_separate_blocks(server: Served) -> None:
    frames = server.turn(server.session(), "think about it")
    blocks = [d["block"]["type"] for n, d in frames if n == "block"]
    assert blocks == ["thinking", "text"]
    assert [d["index"] for n, d in frames if n == "delta"] == [0, 1]


def test_a_refused_turn_is_rolled_back(server: Served) -> None:
    sid = server.session()
    done = server.turn(sid, "refuse this")[-1][1]
    assert done["rolled_back"] is True and "rephrase" in done["reason"]
    again = server.turn(sid, "put kindly")[-1][1]
    assert again["rolled_back"] is False and again["stop"] == "end_turn"


def test_approval_yes_runs_the_call(server: Served) -> None:
    sid = server.session()
    frames = server.turn(sid, "touch it", {"touch yes.txt": "yes"})
    names = [n for n, _ in frames]
    assert names.index("tool_call") < names.index("approval") < names.index("tool_output")
    done = [d for n, d in frames if n == "tool_output" and d.get("done")]
    assert done[0]["status"] == "ok"
    assert (server.ws / "yes.txt").exists()  # type: ignore[attr-defined]
    assert text_of(frames) == "touched"


def test_approval_no_denies_the_call(server: Served) -> None:
    frames = server.turn(server.session(), "deny it", {"touch no.txt": "no"})
    done = [d for n, d in frames if n == "tool_output" and d.get("done")]
    assert done[0]["status"] == "denied"
    assert frames[-1][1]["stop"] == "denied"
    assert not (server.ws / "no.txt").exists()  # type: ignore[attr-defined]


def test_approval_always_is_the_session_grant(server: Served) -> None:
    frames = server.turn(server.session(), "always touch", {"touch always.txt": "always"})
    assert [n for n, _ in frames].count("approval") == 1  # the second, same call did not ask
    assert [d["status"] for n, d in frames if n == "tool_output" and d.get("done")] == ["ok", "ok"]
    assert text_of(frames) == "twice"


def test_answers_to_what_does_not_wait_are_refused(server: Served) -> None:
    sid = server.session()
    r = server.post(f"/api/agent/sessions/{sid}/approvals/toolu_0001", {"answer": "yes"})
    assert r.status_code == 404 and "no approval" in r.json()["error"]
    r = server.post("/api/agent/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV/turns", {"prompt": "hi"})
    assert r.status_code == 404 and "no session" in r.json()["error"]
    r = server.post("/api/agent/sessions/..%2F..%2Fetc/turns", {"prompt": "hi"})
    assert r.status_code == 404
    assert server.client.get("/api/nowhere").status_code == 404
    assert server.client.get("/api/agent/sessions").status_code == 405


def test_closing_the_stream_cancels_the_turn(server: Served) -> None:
    sid = server.session()
    path = f"/api/agent/sessions/{sid}/turns"
    with server.client.stream("POST", path, json={"prompt": "sleep a while"},
                              headers={"X-Cox-Token": server.token}) as r:
        stream = events(r)  # kept: a dropped generator closes the response
        for name, _data in stream:
            if name == "tool_call":  # sleep is read-only: it runs without asking
                break
        assert not _wait(lambda: bool(pids_with(SLEEP))), "the sleep never started"
        busy = server.post(path, {"prompt": "second"})
        assert busy.status_code == 409 and "running a turn" in busy.json()["error"]
        stream.close()
    assert not _wait(lambda: not pids_with(SLEEP)), "closing the stream left the sleep running"
    frames = server.turn(sid, "and now")  # waits for the interrupted turn to end; the session goes on
    assert text_of(frames) == "after the sleep"
    from cox.actors.store.layout import Layout

    lines = [json.loads(x) for x in Layout(server.cox_home).rollout(sid).read_text().splitlines() if x.strip()]
    stops = [x["stop"] for x in lines if x.get("type") == "turn_done"]
    assert stops == ["interrupted", "end_turn"]
    sleep_done = [x for x in lines if x.get("type") == "tool_call_done"]
    assert [x["result"]["status"] for x in sleep_done] == ["aborted"]  # the unfinished call: recorded as interrupted


def _wait(ready: Any) -> bool:
    """Poll ``ready`` until true; True when the outer bound passed first (a hang)."""
    import threading
    import time

    deadline = time.monotonic() + BOUND_S
    tick = threading.Event()
    while not ready():
        if time.monotonic() > deadline:
            return True
        tick.wait(0.02)
    return False


BAD_SESSIONS = [({"model": "gpt-nope"}, "model"), ({"effort": "max"}, "effort"), ({"mode": "bypass"}, "mode"),
                ({"thinking_display": "full"}, "thinking_display"), ({"bogus": 1}, "unknown field")]


@pytest.mark.parametrize(("body", "says"), BAD_SESSIONS)
def test_bad_session_requests_are_422(server: Served, body: dict[str, Any], says: str) -> None:
    r = server.post("/api/agent/sessions", body)
    assert r.status_code == 422 and says in r.json()["error"]


def test_bad_turns_and_answers_are_422(server: Served) -> None:
    sid = server.session()
    for body, says in (({"prompt": ""}, "prompt"), ({"prompt": 5}, "prompt"), ({}, "prompt"),
                       ({"prompt": "x", "effort": "ultra"}, "effort"), ({"prompt": "x", "extra": 1}, "unknown")):
        r = server.post(f"/api/agent/sessions/{sid}/turns", body)
        assert r.status_code == 422 and says in r.json()["error"], body
    r = server.post(f"/api/agent/sessions/{sid}/approvals/toolu_1", {"answer": "maybe"})
    assert r.status_code == 422 and "yes, no, always" in r.json()["error"]
    for raw in (b"not json", b"[1, 2]"):
        r = server.client.post("/api/agent/sessions", content=raw, headers={"X-Cox-Token": server.token})
        assert r.status_code == 422 and "JSON" in r.json()["error"]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_chat_422s_come_before_any_model_call_then_the_chat_streams(server: Served) -> None:
    big = "x" * (8 * 1024 * 1024 + 1)
    bad: list[tuple[dict[str, Any], str]] = [
        ({"model": "claude-nope", "messages": [_user("chat hi")]}, "model"),
        ({"effort": "max", "messages": [_user("chat hi")]}, "effort"),
        ({"messages": [{"role": "assistant", "content": "hi"}, _user("chat hi")]}, "start and end"),
        ({"messages": [_user("chat hi"), {"role": "assistant", "content": "hi"}]}, "start and end"),
        ({"messages": [_user("  ")]}, "empty content"),
        ({"messages": [{"role": "user", "content": []}]}, "empty content"),
        ({"messages": []}, "non-empty"),
        ({"messages": [{"role": "system", "content": "x"}]}, "role"),
        ({"messages": [_user(big)]}, "8 MB"),
    ]
    for body, says in bad:
        r = server.post("/api/chat", body)
        assert r.status_code == 422 and says in r.json()["error"], (body if len(str(body)) < 200 else "big", r.text[:200])

    def chunked() -> Iterator[bytes]:  # a body with no Content-Length is counted as it arrives
        yield b'{"messages": [{"role": "user", "content": "chat hi '
        for _ in range(9):
            yield b"y" * (1024 * 1024)
        yield b'"}]}'

    r = server.client.post("/api/chat", content=chunked(), headers={"X-Cox-Token": server.token})
    assert r.status_code == 422 and "8 MB" in r.json()["error"]
    # none of those reached the model: the first valid request gets that prompt's one reply
    frames = list(server.stream("/api/chat", {"messages": [_user("chat hi")]}))
    assert frames[0] == ("start", {"model": "scripted"})
    assert text_of(frames) == "chat reply"
    done = frames[-1][1]
    assert frames[-1][0] == "done" and done["stop_reason"] == "end_turn"
    assert done["history"] == [_user("chat hi"), {"role": "assistant", "content": [{"type": "text", "text": "chat reply"}]}]


def test_chat_echoes_thinking_with_its_signature_and_can_hide_it(server: Served) -> None:
    history = [_user("chat first"), {"role": "assistant", "content": [{"type": "text", "text": "x"}]}, _user("second")]
    frames = list(server.stream("/api/chat", {"messages": history, "effort": "low"}))
    kinds = [d["kind"] for n, d in frames if n == "delta"]
    assert "thinking" in kinds and "text" in kinds
    content = frames[-1][1]["history"][-1]["content"]
    assert content[0]["type"] == "thinking" and content[0]["signature"] == "sig-c"
    assert frames[-1][1]["history"][:3] == history  # the posted history comes back exactly
    frames = list(server.stream("/api/chat", {"messages": [_user("chat q")], "thinking_display": "omitted"}))
    assert [d["kind"] for n, d in frames if n == "delta"] == ["text"]
    assert frames[-1][1]["history"][-1]["content"][0]["thinking"] == "hidden"  # kept for the next request


def test_a_refused_chat_turn_has_no_history(server: Served) -> None:
    frames = list(server.stream("/api/chat", {"messages": [_user("chat bad")]}))
    done = frames[-1][1]
    assert done["stop_reason"] == "refusal" and done["history"] is None


def test_a_failed_model_call_is_an_error_event(server: Served) -> None:
    frames = list(server.stream("/api/chat", {"messages": [_user("chat none")]}))  # the script has no reply for it
    assert [n for n, _ in frames] == ["start", "error"]
    assert "no reply #1" in frames[-1][1]["message"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", ""])
def test_a_foreign_host_is_refused_on_every_route(server: Served, host: str) -> None:
    headers = {"Host": host.format(port=server.port), "X-Cox-Token": server.token}
    for method, path in (("GET", "/"), ("GET", "/api/config"), ("POST", "/api/agent/sessions"), ("POST", "/api/chat")):
        r = server.client.request(method, path, headers=headers, json={"messages": [_user("hi")]})
        assert r.status_code == 403 and "Host" in r.json()["error"], (method, path)


def test_loopback_names_are_accepted(server: Served) -> None:
    for host in ("localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "LOCALHOST"):
        assert server.client.get("/api/config", headers={"Host": host.format(port=server.port)}).status_code == 200


def test_posts_need_this_process_token_and_own_origin(server: Served) -> None:
    other = server.token[:-1] + ("B" if server.token.endswith("A") else "A")  # one character off, never the same
    for headers in ({}, {"X-Cox-Token": ""}, {"X-Cox-Token": other}, {"X-Cox-Token": "x" * 43}):
        r = server.client.post("/api/agent/sessions", json={}, headers=headers)
        assert r.status_code == 403 and "X-Cox-Token" in r.json()["error"]
    for origin in ("https://evil.example", "http://localhost:1", "null"):  # another site, another local app, a sandbox
        r = server.client.post("/api/agent/sessions", json={}, headers={"X-Cox-Token": server.token, "Origin": origin})
        assert r.status_code == 403 and "another site" in r.json()["error"], origin
    ok = server.client.post("/api/agent/sessions", json={},
                            headers={"X-Cox-Token": server.token, "Origin": server.url})
    assert ok.status_code == 201


def test_the_server_listens_on_loopback_only(server: Served) -> None:
    import socket

    addrs = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)} - {"127.0.0.1", "::1"}
    for addr in sorted(addrs)[:1]:  # another address of this machine, when it has one
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://{addr}:{server.port}/api/config", timeout=5)
