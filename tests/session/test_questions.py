"""MCP elicitation inside the session: the dialogues (pure), the URL check, and the routing of a
tool's question through a real session — Question events out, Answer submissions in, the
outcome to the asker only (never the history or the rollout), an interrupt cancelling."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cox.actors.mcp.questions import Ask, Done, UrlRefused, check_url, dialogue_for
from cox.actors.tools.base import BaseTool, ToolEnv
from cox.actors.tools.registry import builtin_tools
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, Risk, ToolCall, ToolResult
from tests.harness import run_session

FORM = {"type": "object", "required": ["name", "age"], "properties": {
    "name": {"type": "string", "title": "Name", "minLength": 2},
    "age": {"type": "integer", "title": "Age", "minimum": 1, "maximum": 120},
    "colour": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
    "news": {"type": "boolean", "default": False},
    "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}},
    "when": {"type": "string", "format": "date"},
    "mail": {"type": "string", "format": "email"},
}}


def form(schema: dict[str, Any] | None = None) -> Any:
    return dialogue_for({"server": "s", "mode": "form", "message": "Please fill in", "schema": schema or FORM})


def walk(d: Any, answers: list[Any]) -> list[Any]:
    steps = [d.start()]
    for a in answers:
        steps.append(d.answer(a))
    return steps


def test_each_field_is_one_question_then_a_review_then_accept() -> None:
    steps = walk(form(), ["Zed", "30", "green", "y", "Alpha, 2", "2024-02-29", "z@example.com", "send"])
    asks = [s for s in steps if isinstance(s, Ask)]
    assert [list(a.schema["properties"]) for a in asks] == [
        ["name"], ["age"], ["colour"], ["news"], ["tags"], ["when"], ["mail"], ["action"]]
    assert "(2/7) Age" in asks[1].prompt and "from 1 to 120" in asks[1].prompt
    assert asks[0].schema["required"] == ["name"] and "required" not in asks[2].schema
    assert asks[-1].schema["x-cox"]["step"] == "review"
    assert "send Name, Age, colour, news, tags, when, mail to mcp:s?" in asks[-1].prompt
    done = steps[-1]
    assert isinstance(done, Done) and done.reply() == {"action": "accept", "content": {
        "name": "Zed", "age": 30, "colour": "g", "news": True, "tags": ["a", "b"], "when": "2024-02-29",
        "mail": "z@example.com"}}


@pytest.mark.parametrize(("field", "bad", "why"), [
    ("name", "Z", "at least 2 characters"), ("age", "abc", "not a whole number"), ("age", "500", "at most 120"),
    ("age", "-3", "at least 1"), ("colour", "blue", "not one of the choices: Red, Green"),
    ("news", "maybe", "answer yes or no"), ("tags", "Gamma", "not among the choices"),
    ("when", "yesterday", "not a date"), ("mail", "nobody", "not an email address"),
])
def test_a_bad_answer_is_asked_again_with_the_reason_not_the_answer(field: str, bad: str, why: str) -> None:
    d = form({"type": "object", "properties": {field: FORM["properties"][field]}})
    d.start()
    again = d.answer(bad)
    assert isinstance(again, Ask) and list(again.schema["properties"]) == [field]
    first = again.prompt.splitlines()[0]
    assert first.startswith("✗ ") and why in first and "try again" in first
    assert bad not in again.prompt  # the typed text is never echoed into a Question (it lands in the rollout)


def test_empty_answers_default_skip_required_and_keep_in_an_edit_round() -> None:
    d = form()
    d.start()
    assert "required" in d.answer("").prompt.splitlines()[0]  # name is required
    for a in ["Zed", "30", "", "", "", "", ""]:  # colour skipped, news default, the rest skipped
        step = d.answer(a)
    assert isinstance(step, Ask) and step.schema["x-cox"]["step"] == "review"
    assert "send Name, Age, news to mcp:s?" in step.prompt
    edit = d.answer("e")  # edit: ask again, an empty answer keeps the last one
    assert isinstance(edit, Ask) and edit.schema["x-cox"]["keep"] and "keeps the last one" in edit.prompt
    assert "Zed" not in edit.prompt  # the edit round does not repeat what was typed
    for a in ["", "31", "1", "", "", "", ""]:
        step = d.answer(a)
    done = d.answer("send")
    assert isinstance(done, Done)
    assert done.content == {"name": "Zed", "age": 31, "colour": "r", "news": False}


def test_decline_cancel_and_unsupported_forms() -> None:
    d = form({"type": "object", "properties": {"x": {"type": "string"}}})
    d.start()
    d.answer("hello")
    assert d.answer("decline").reply() == {"action": "decline"}
    d = form()
    d.start()
    assert d.answer("whatever", cancelled=True).reply() == {"action": "cancel"}
    nested = form({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}})
    out = nested.start()
    assert isinstance(out, Done) and out.action == "decline" and "cannot ask" in (out.note or "")
    empty = form({"type": "object", "properties": {}})
    review = empty.start()
    assert isinstance(review, Ask) and "send an empty answer to mcp:s?" in review.prompt
    assert empty.answer("s").reply() == {"action": "accept", "content": {}}


def test_url_check_normalises_warns_and_refuses() -> None:
    url, host, warnings = check_url("HTTPS://Exämple.COM/päth?q=1#f")
    assert url == "https://xn--exmple-cua.com/p%C3%A4th?q=1#f" and host == "xn--exmple-cua.com"
    assert any("punycode" in w for w in warnings)
    url, host, warnings = check_url("http://example.com:8080/x")
    assert (url, host) == ("http://example.com:8080/x", "example.com") and any("plain http" in w for w in warnings)
    _, host, warnings = check_url("https://google.com@evil.example/")
    assert host == "evil.example" and any("user name" in w for w in warnings)
    assert check_url("https://example.com/ok")[2] == []
    for bad, why in [("javascript:alert(1)", "not an http(s)"), ("file:///etc/passwd", "not an http(s)"),
                     ("https:///nohost", "no host"), ("https://a.com/a b", "spaces"),
                     ('https://a.com/"x"', "would not pass on"), ("https://a.com/%zz", "%-escape"),
                     ("https://a.com/\x1b[31m", "control")]:
        with pytest.raises(UrlRefused, match=re.escape(why)):
            check_url(bad)


def test_url_dialogue_open_decline_and_refused_unasked() -> None:
    d = dialogue_for({"server": "s", "mode": "url", "message": "Log in", "url": "http://exämple.com/x"})
    ask = d.start()
    assert isinstance(ask, Ask) and ask.url == "http://xn--exmple-cua.com/x"
    assert "open  http://xn--exmple-cua.com/x" in ask.prompt and "host  xn--exmple-cua.com" in ask.prompt
    assert sum(line.startswith("⚠") for line in ask.prompt.splitlines()) == 2
    assert "answer open or decline" in d.answer("maybe").prompt
    done = d.answer("open")
    assert isinstance(done, Done) and done.reply() == {"action": "accept"} and done.open_url == ask.url
    assert d.answer("d").reply() == {"action": "decline"}
    refused = dialogue_for({"server": "s", "mode": "url", "message": "x", "url": "ftp://example.com/"}).start()
    assert isinstance(refused, Done) and refused.action == "decline" and "without asking" in (refused.note or "")


# ---------------------------------------------------------------- through a real session


class AskingTool(BaseTool):
    """Stands in for an MCP tool whose server elicits: asks through ``env.services.ask`` and
    returns only the outcome's action and field names (as the test server does)."""

    name = "asking"
    description = "asks the person"
    input_schema = {"type": "object", "properties": {}}

    def __init__(self, request: dict[str, Any], got: list[dict[str, Any]]) -> None:
        self.request = request
        self.got = got

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        assert env.services.ask is not None
        reply = env.services.ask(dict(self.request))
        outcome = reply.result(timeout=15)
        self.got.append(outcome)
        return ToolResult(visible=f"action={outcome['action']} fields={','.join(sorted(outcome.get('content') or {}))}")


REPLIES = [{"tool_calls": [{"id": "a1", "name": "asking", "input": {}}]}, {"text": "done"}]
SIGNUP = {"server": "demo", "mode": "form", "message": "Sign up", "schema": {
    "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}}


def tools_with(tool: BaseTool) -> dict[str, Any]:
    return {**builtin_tools(), tool.name: tool}


def test_answers_go_to_the_asker_only(tmp_path: Path, cox_home: Path) -> None:
    got: list[dict[str, Any]] = []
    typed = iter(["Zebedee-the-secret", "not a number", "41", "send"])

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            handle.submit(m.Answer(question_id=event.question_id, answer=next(typed)))

    run = run_session(tmp_path, cox_home, REPLIES, "sign me up", tools=tools_with(AskingTool(SIGNUP, got)),
                      mode=PermissionMode.BYPASS, react=react)
    questions = run.of("question")
    assert [q.source for q in questions] == ["mcp:demo"] * 4
    assert "✗ not a whole number" in questions[2].prompt
    assert got[-1] == {"action": "accept", "content": {"name": "Zebedee-the-secret", "age": 41}}
    assert run.of("tool_call_done")[0].result.visible == "action=accept fields=age,name"
    # Nothing typed reaches the history (what the model is sent), the events or the rollout.
    assert run.provider is not None
    assert "Zebedee" not in json.dumps([r.messages for r in run.provider.requests])
    assert not any("Zebedee" in line or "not a number" in line for line in run.lines)
    rollouts = list(cox_home.rglob("*.jsonl"))
    assert rollouts and all("Zebedee" not in r.read_text() for r in rollouts)
    assert any('"type":"question"' in r.read_text() for r in rollouts)  # the questions themselves are recorded


def test_interrupt_cancels_the_open_question(tmp_path: Path, cox_home: Path) -> None:
    got: list[dict[str, Any]] = []

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            handle.interrupt()

    run = run_session(tmp_path, cox_home, REPLIES, "sign me up", tools=tools_with(AskingTool(SIGNUP, got)),
                      mode=PermissionMode.BYPASS, react=react)
    assert run.of("turn_done")[-1].stop.value == "interrupted"
    assert got == [{"action": "cancel"}]
    assert run.of("tool_call_done")[0].result.status.value == "aborted"


def test_esc_cancels_and_a_stale_answer_is_refused(tmp_path: Path, cox_home: Path) -> None:
    got: list[dict[str, Any]] = []
    seen: list[str] = []

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            seen.append(event.question_id)
            handle.submit(m.Answer(question_id=event.question_id, declined=True))
            handle.submit(m.Answer(question_id=event.question_id, answer="late"))

    run = run_session(tmp_path, cox_home, REPLIES, "sign me up", tools=tools_with(AskingTool(SIGNUP, got)),
                      mode=PermissionMode.BYPASS, react=react)
    assert got == [{"action": "cancel"}] and len(seen) == 1
    assert any(f"no open question with id {seen[0]}" in n.message for n in run.of("notice"))
    assert run.of("turn_done")[-1].stop.value == "end_turn"


def test_a_url_is_opened_only_on_open(tmp_path: Path, cox_home: Path) -> None:
    got: list[dict[str, Any]] = []
    opened: list[str] = []
    request = {"server": "demo", "mode": "url", "message": "Log in", "url": "https://example.com/login"}
    answers = iter(["decline", "open"])

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            assert event.url == "https://example.com/login" and not opened
            handle.submit(m.Answer(question_id=event.question_id, answer=next(answers)))

    replies = [*REPLIES[:1], {"text": "declined"}, {"tool_calls": [{"id": "a2", "name": "asking", "input": {}}]},
               {"text": "opened"}]
    run_session(tmp_path, cox_home, replies, ["first", "second"], tools=tools_with(AskingTool(request, got)),
                mode=PermissionMode.BYPASS, react=react, open_url=lambda url: opened.append(url))
    assert got == [{"action": "decline"}, {"action": "accept"}]
    assert opened == ["https://example.com/login"]


def test_a_refused_url_is_declined_without_a_question(tmp_path: Path, cox_home: Path) -> None:
    got: list[dict[str, Any]] = []
    request = {"server": "demo", "mode": "url", "message": "x", "url": "javascript:alert(1)"}
    run = run_session(tmp_path, cox_home, REPLIES, "go", tools=tools_with(AskingTool(request, got)),
                      mode=PermissionMode.BYPASS)
    assert got == [{"action": "decline"}] and not run.of("question")
    assert any("declined without asking" in n.message for n in run.of("notice"))
