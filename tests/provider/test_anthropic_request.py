"""The Anthropic adapter's request side: the JSON and headers that reach the (loopback) API for a
multi-turn request, checked against the SDK — its headers, its own request building from the
same parameters, and its parameter types (the API's documented shape)."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
import typing_extensions

from cox.actors.provider.anthropic import API_VERSION, AnthropicProvider, thinking_config
from cox.actors.provider.transport import close_clients
from cox.actors.session.history import result_block
from cox.protocol.model import ModelRequest, ToolSpec
from cox.supervisors import CancelScope
from tests.provider.loopback import Loopback, Reply, sse

PNG_1X1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

TOOLS = [
    ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                      "required": ["path"]}),
    ToolSpec("write", "Write a file.", {"type": "object", "properties": {"path": {"type": "string"},
                                                                         "content": {"type": "string"}},
                                        "required": ["path", "content"]}),
]
SYSTEM = ['[{"name":"read"},{"name":"write"}]', "You are cox. (cox-system-prompt v1)",
          "# AGENTS.md instructions\n\nUse tabs.", "date: 2026-11-02\ncwd: /ws"]

HISTORY: list[dict[str, Any]] = [
    # turn 1
    {"role": "user", "content": [{"type": "text", "text": "show me a.txt"}], "_turn": 1},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Read it first.", "signature": "sig-1"},
        {"type": "thinking", "thinking": "an OpenAI reasoning summary", "signature": None,
         "id": "rs_1", "encrypted_content": "gAAA"},  # no signature: never sent to Anthropic
        {"type": "text", "text": ""},  # empty: never sent
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}, "input_error": "x"},
    ]},
    {"role": "user", "content": [
        {**result_block("toolu_1", "hello\n", False), "_archive": "arc_1", "_label": "read a.txt"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It says hello."}]},
    # turn 2
    {"role": "user", "content": [{"type": "text", "text": "and the picture?"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "signature": "", "redacted": "EncryptedRedactedData=="},
        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "p.png"}},
    ]},
    {"role": "user", "content": [
        result_block("toolu_2", "p.png: PNG image, 1x1", False, [{"media_type": "image/png", "data": PNG_1X1}])]},
]


def multi_turn(**kw: Any) -> ModelRequest:
    base: dict[str, Any] = dict(model="claude-test", system=list(SYSTEM), tools=list(TOOLS),
                                messages=[dict(m) for m in HISTORY], max_output_tokens=4096,
                                breakpoints=[(3, 0)], session_id="sess-1")
    base.update(kw)
    return ModelRequest(**base)


STREAM = sse([
    ("message_start", {"type": "message_start", "message": {
        "id": "m", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 1}}),
    ("message_stop", {"type": "message_stop"}),
])


@pytest.fixture(scope="module")
def shared_api() -> Any:
    with Loopback() as server:
        yield server


@pytest.fixture
def api(shared_api: Loopback) -> Any:
    yield shared_api
    close_clients()
    with shared_api.lock:
        shared_api.replies.clear()
        shared_api.requests.clear()


def send(api: Loopback, p: AnthropicProvider, req: ModelRequest) -> dict[str, Any]:
    """Run one request against the loopback server; what it received."""
    api.add(Reply(list(STREAM)))
    list(p.stream(req, CancelScope()))
    return api.requests[-1]


def marks(body: dict[str, Any]) -> list[str]:
    """Where ``cache_control`` sits, as readable paths."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if "cache_control" in node:
                assert node["cache_control"] == {"type": "ephemeral"}
                found.append(path)
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(body, "")
    return found


# -- the JSON --------------------------------------------------------------------------------------


def test_multi_turn_request_shape(api: Loopback) -> None:
    p = AnthropicProvider("claude-test", api_key="sk-test", base_url=api.url)
    got = send(api, p, multi_turn())
    body = got["json"]
    assert got["path"] == "/v1/messages"
    assert body == p.build_body(multi_turn())  # what build_body says is what goes on the wire
    assert body["model"] == "claude-test" and body["max_tokens"] == 4096 and body["stream"] is True
    assert "thinking" not in body and "temperature" not in body
    # tools natively, sorted, not the text of system[0]
    assert body["tools"] == [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                             for t in TOOLS]
    assert body["system"] == [
        {"type": "text", "text": SYSTEM[1]},
        {"type": "text", "text": SYSTEM[2], "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": SYSTEM[3]},
    ]
    assert not any(SYSTEM[0] in b["text"] for b in body["system"])
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert msgs[1]["content"] == [
        {"type": "thinking", "thinking": "Read it first.", "signature": "sig-1"},
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
    ]
    assert msgs[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello\n",
                                   "is_error": False}]
    assert msgs[5]["content"] == [
        {"type": "redacted_thinking", "data": "EncryptedRedactedData=="},
        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "p.png"}},
    ]
    assert msgs[6]["content"] == [{
        "type": "tool_result", "tool_use_id": "toolu_2", "is_error": False,
        "content": [{"type": "text", "text": "p.png: PNG image, 1x1"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}],
        "cache_control": {"type": "ephemeral"},
    }]
    # exactly three breakpoints: the stable system, the end of the last turn, the moving one
    assert marks(body) == ["system[1]", "messages[3].content[0]", "messages[6].content[0]"]
    # nothing private leaves the process
    text = json.dumps(body)
    for private in ("_archive", "_label", "_turn", "input_error", "encrypted_content", "rs_1", "redacted\""):
        assert private not in text


def test_breakpoints_skip_thinking_and_never_exceed_four() -> None:
    p = AnthropicProvider("m", api_key="k")
    # the end of the last turn points at a thinking block: the mark moves to the block before it
    msgs = [{"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                              {"type": "thinking", "thinking": "t", "signature": "s"}]},
            {"role": "user", "content": [{"type": "text", "text": "next"}]}]
    body = p.build_body(ModelRequest(model="m", system=SYSTEM, tools=TOOLS, messages=msgs, breakpoints=[(1, 1)]))
    assert marks(body) == ["system[1]", "messages[1].content[0]", "messages[2].content[0]"]
    # first request of a session: no earlier turn, two marks
    body = p.build_body(ModelRequest(model="m", system=SYSTEM, tools=TOOLS, messages=msgs[:1]))
    assert marks(body) == ["system[1]", "messages[0].content[0]"]
    # the breakpoint is the last block itself: one mark there, not two
    body = p.build_body(ModelRequest(model="m", system=SYSTEM, tools=TOOLS, messages=msgs, breakpoints=[(2, 0)]))
    assert marks(body) == ["system[1]", "messages[2].content[0]"]
    # no stable system text at all: the tools end the stable prefix
    body = p.build_body(ModelRequest(model="m", system=["[]", "", "", "vol"], tools=TOOLS, messages=msgs))
    assert marks(body) == ["tools[1]", "messages[2].content[0]"]
    assert body["system"] == [{"type": "text", "text": "vol"}]  # empty blocks are not sent
    for b in (body,):
        assert len(marks(b)) <= 4


def test_thinking_settings() -> None:
    assert thinking_config(0, False, 8192) == (None, 8192)
    assert thinking_config(0, True, 8192) == ({"type": "adaptive"}, 8192)
    assert thinking_config(16_000, False, 32_000) == ({"type": "enabled", "budget_tokens": 16_000}, 32_000)
    assert thinking_config(100, False, 8192) == ({"type": "enabled", "budget_tokens": 1024}, 8192)
    # the budget must stay below max_tokens, leaving room for the answer
    assert thinking_config(16_000, False, 8192) == ({"type": "enabled", "budget_tokens": 7168}, 8192)
    assert thinking_config(16_000, False, 1500) == ({"type": "enabled", "budget_tokens": 1024}, 1500)
    assert thinking_config(16_000, False, 1000) == ({"type": "enabled", "budget_tokens": 1024}, 2048)
    p = AnthropicProvider("m", api_key="k", max_output_tokens=20_000)
    body = p.build_body(multi_turn(thinking_budget=8000, max_output_tokens=64_000))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8000} and body["max_tokens"] == 20_000
    assert "temperature" not in body and "top_k" not in body and "top_p" not in body
    body = AnthropicProvider("m", api_key="k", thinking=True).build_body(multi_turn())
    assert body["thinking"] == {"type": "adaptive"}


def test_tool_result_edge_cases() -> None:
    p = AnthropicProvider("m", api_key="k")
    msgs = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}},
                                              {"type": "tool_use", "id": "b", "name": "read", "input": {}}]},
            {"role": "user", "content": [result_block("a", "", False), result_block("b", "", True)]}]
    body = p.build_body(ModelRequest(model="m", system=SYSTEM, tools=TOOLS, messages=msgs))
    ok, failed = body["messages"][2]["content"]
    assert ok == {"type": "tool_result", "tool_use_id": "a", "is_error": False}
    assert failed["is_error"] is True and failed["content"]  # the API refuses an empty error result


# -- against the SDK -------------------------------------------------------------------------------


def sdk_request(api: Loopback, **client_kw: Any) -> dict[str, Any]:
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the oracle for these tests")
    api.add(Reply(list(STREAM)))
    with anthropic.Anthropic(base_url=api.url, max_retries=0, **client_kw) as client:
        with client.messages.stream(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]) as s:
            s.get_final_message()
    return api.requests[-1]


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


@pytest.mark.parametrize("credential", [{"api_key": "sk-ant-key"}, {"auth_token": "oauth-token"}])
def test_headers_are_the_sdks(api: Loopback, credential: dict[str, str]) -> None:
    import anthropic

    sdk = lower(sdk_request(api, **credential)["headers"])
    p = AnthropicProvider("m", **{"api_key": None, **credential}, base_url=api.url)
    ours = lower(send(api, p, multi_turn())["headers"])
    for name in ("authorization", "x-api-key", "anthropic-version", "anthropic-beta", "content-type"):
        assert ours.get(name) == sdk.get(name), name
    assert API_VERSION == anthropic._constants.ANTHROPIC_API_VERSION
    assert ours["accept"] == "text/event-stream" and ours["user-agent"].startswith("cox/")
    assert not any(k.startswith("x-stainless") for k in ours)  # the SDK's telemetry is not ours to send


def test_a_key_wins_over_a_token_as_in_the_sdk(api: Loopback, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-key")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "oauth-token")
    sdk = lower(sdk_request(api)["headers"])  # the SDK resolving both from the environment
    p = AnthropicProvider("m", api_key="sk-ant-key", auth_token="oauth-token", base_url=api.url)
    assert lower(send(api, p, multi_turn())["headers"])["authorization"] == sdk["authorization"]


def test_the_sdk_builds_the_same_body_from_the_same_parameters(api: Loopback) -> None:
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the oracle for these tests")
    p = AnthropicProvider("claude-test", api_key="sk-test", base_url=api.url)
    for req in (multi_turn(), multi_turn(thinking_budget=2048)):
        ours = send(api, p, req)["json"]
        params = {k: v for k, v in ours.items() if k != "stream"}
        api.add(Reply(list(STREAM)))
        with anthropic.Anthropic(api_key="sk-test", base_url=api.url, max_retries=0) as client:
            with client.messages.stream(**params) as s:
                s.get_final_message()
        assert api.requests[-1]["json"] == ours


def test_every_field_is_one_the_sdk_types_define() -> None:
    """Each object in the body checked against the SDK's parameter TypedDicts: no field they do
    not define, every field they require, and the right ``type`` literal."""
    pytest.importorskip("anthropic", reason="the anthropic SDK is the oracle for these tests")
    from anthropic import types as t
    from anthropic.types import message_create_params as mcp

    blocks = {"text": t.TextBlockParam, "thinking": t.ThinkingBlockParam,
              "redacted_thinking": t.RedactedThinkingBlockParam, "tool_use": t.ToolUseBlockParam,
              "tool_result": t.ToolResultBlockParam, "image": t.ImageBlockParam}

    def check(obj: dict[str, Any], cls: Any, where: str) -> None:
        hints = typing.get_type_hints(cls, include_extras=True)
        assert set(obj) <= set(hints), f"{where}: {set(obj) - set(hints)} not in {cls.__name__}"
        required = {k for k, v in hints.items() if typing_extensions.get_origin(v) is typing_extensions.Required}
        assert required <= set(obj), f"{where}: missing {required - set(obj)}"
        for key, hint in hints.items():
            if key not in obj:
                continue
            if typing_extensions.get_origin(hint) in (typing_extensions.Required, typing_extensions.NotRequired):
                hint = typing_extensions.get_args(hint)[0]
            if typing_extensions.get_origin(hint) is typing.Literal:
                assert obj[key] in typing_extensions.get_args(hint), f"{where}.{key} = {obj[key]!r}"
        if "cache_control" in obj:
            check(obj["cache_control"], t.CacheControlEphemeralParam, f"{where}.cache_control")

    for budget, enabled in ((0, False), (4096, False), (0, True)):
        p = AnthropicProvider("m", api_key="k", thinking=enabled)
        body = p.build_body(multi_turn(thinking_budget=budget))
        check(body, mcp.MessageCreateParamsStreaming, "body")
        for i, block in enumerate(body["system"]):
            check(block, t.TextBlockParam, f"system[{i}]")
        for i, tool in enumerate(body["tools"]):
            check(tool, t.ToolParam, f"tools[{i}]")
        if "thinking" in body:
            cls = t.ThinkingConfigEnabledParam if body["thinking"]["type"] == "enabled" else t.ThinkingConfigAdaptiveParam
            check(body["thinking"], cls, "thinking")
        for mi, msg in enumerate(body["messages"]):
            role_cls = t.UserMessageParam if msg["role"] == "user" else t.AssistantMessageParam
            check(msg, role_cls, f"messages[{mi}]")
            for bi, block in enumerate(msg["content"]):
                where = f"messages[{mi}].content[{bi}]"
                check(block, blocks[block["type"]], where)
                if block["type"] == "tool_result" and isinstance(block.get("content"), list):
                    for ci, inner in enumerate(block["content"]):
                        check(inner, blocks[inner["type"]], f"{where}.content[{ci}]")
                        if inner["type"] == "image":
                            check(inner["source"], t.Base64ImageSourceParam, f"{where}.content[{ci}].source")


def test_importing_the_adapter_loads_neither_the_sdk_nor_httpx() -> None:
    """The first request must leave within 150 ms of launch: the SDK (~1.1 s) is never imported
    by cox, and httpx only when the first request is sent."""
    import subprocess
    import sys

    code = ("import sys, cox.actors.provider.anthropic; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx', 'httpx2')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
