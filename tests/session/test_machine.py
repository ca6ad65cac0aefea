"""The TurnMachine alone: feed it messages, read the effects. No actors, no threads, no files
but an empty workspace for the instruction block.

Every stop reason, steering, each kind of approval, an interrupt in every state, the batch's
read/write order, hooks at the choke point, and a stream that dies: the machine decides all of
them, so each is a plain sequence of ``on`` calls here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cox.actors.provider.stream import StreamResult
from cox.actors.session import messages as fx
from cox.actors.session.dedup import ReadCache
from cox.actors.session.machine import TurnMachine
from cox.actors.session.request import Assembler
from cox.actors.session.settings import SessionSettings
from cox.protocol import messages as m
from cox.protocol.model import ProviderError, UsageDelta
from cox.protocol.types import Decision, PermissionMode, Risk, StopReason, ToolCall, ToolResult

RISK = {"read": Risk.READ_ONLY, "grep": Risk.READ_ONLY, "write": Risk.WRITE, "bash": Risk.EXEC}


class Outcome:
    def __init__(self, kind: str, reason: str = "because") -> None:
        self.kind, self.reason = kind, reason


class Ports:
    """Judgements on a table: ``verdicts`` per tool name (allow unless said), grants by name."""

    provider_name = "scripted"

    def __init__(self) -> None:
        self.verdicts: dict[str, str] = {}
        self.decided: list[tuple[str, PermissionMode, list[str]]] = []

    def describe(self, call: ToolCall) -> ToolCall:
        if "bad" in call.input:
            raise ValueError("bad is not a field")
        return replace(call, risk=RISK.get(call.name, Risk.EXEC), subject=str(call.input.get("path", "")))

    def writes(self, call: ToolCall) -> list[Path] | None:
        return [Path(call.input["path"])] if "path" in call.input else None

    def decide(self, call: ToolCall, mode: PermissionMode, grants: list[str], turn_allow: list[str]) -> Outcome:
        self.decided.append((call.name, mode, list(grants)))
        if call.name in grants or call.name in turn_allow:
            return Outcome("allow")
        return Outcome(self.verdicts.get(call.name, "allow"))

    def grants_for(self, call: ToolCall) -> list[str]:
        return [call.name]

    def parallel(self, name: str) -> bool:
        return name in ("read", "grep")

    def specs(self, tools: dict[str, Any]) -> list[Any]:
        return []


def machine(tmp_path: Path, hooks: bool = False, **settings: Any) -> tuple[TurnMachine, Ports]:
    s = SessionSettings(session_id="S", cwd=tmp_path, roots=[tmp_path], model="scripted", **settings)
    ports = Ports()
    tools = {name: object() for name in ("read", "grep", "write", "bash")}
    return TurnMachine(s, tools, {"lazy": object()}, ports, Assembler("scripted", [], tmp_path), ReadCache(8), None,
                       has_hooks=hooks), ports


def events(effects: list[Any]) -> list[Any]:
    return [e.event for e in effects if isinstance(e, fx.Emit)]


def types(effects: list[Any]) -> list[str]:
    return [e.event.type if isinstance(e, fx.Emit) else type(e).__name__ for e in effects]


def of(effects: list[Any], kind: type) -> list[Any]:
    return [e for e in effects if isinstance(e, kind)]


def turn_done(effects: list[Any]) -> m.TurnDone:
    done = [e for e in events(effects) if e.type == "turn_done"]
    assert len(done) == 1, types(effects)
    return done[0]


def use(call_id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": input}


def end(sm: TurnMachine, *content: dict[str, Any], stop: str = "end_turn", **kw: Any) -> list[Any]:
    turn = sm.active
    assert turn is not None
    return sm.on(fx.StreamEnd(StreamResult(turn.stream_id, content=list(content), stop=stop, **kw)))


def start(sm: TurnMachine, text: str = "hi") -> list[Any]:
    return sm.on(m.UserTurn(text=text))


# ---------------------------------------------------------------- a turn and its stop reasons


def test_a_text_turn_starts_a_stream_and_ends_after_the_reply(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    out = start(sm)
    assert types(out) == ["BeginTurn", "turn_started", "user_message", "Store", "StartStream", "Mark"]
    stream = of(out, fx.StartStream)[0]
    assert stream.kind == "stream" and stream.request.messages[-1]["content"][0]["text"] == "hi"
    first = sm.on(fx.StreamText(stream.stream_id, "hel"))
    assert of(first, fx.Emit)[0].breathe is True  # the reply's first words go out at once
    assert of(sm.on(fx.StreamText(stream.stream_id, "lo")), fx.Emit)[0].breathe is False
    assert sm.on(fx.StreamText(stream.stream_id + 7, "stale")) == []  # not this turn's stream
    out = end(sm, {"type": "text", "text": "hello"})
    assert types(out) == ["assistant_message", "Hold", "Cancel", "CloseQuestions", "EndTurn", "SettleMarkers",
                          "turn_done"]
    assert turn_done(out).stop is StopReason.END_TURN
    assert of(out, fx.CloseQuestions)[0].reason == "turn_ended"
    assert sm.active is None and [msg["role"] for msg in sm.history] == ["user", "assistant"]


def test_a_provider_error_ends_the_turn_with_error_and_keeps_the_partial_text(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    sid = of(start(sm), fx.StartStream)[0].stream_id
    sm.on(fx.StreamText(sid, "half"))
    out = end(sm, error=ProviderError("HTTP 500"))
    assert "error" in types(out) and turn_done(out).stop is StopReason.ERROR
    assert sm.history[-1]["content"] == [{"type": "text", "text": "half"}]


def test_max_turns_stops_before_the_next_request(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path, max_turns=1)
    start(sm)
    out = end(sm, use("c1", "read", path="a"))
    call = of(out, fx.StartCall)[0]
    out = sm.on(fx.ToolDone(call.gen, "c1", ToolResult(visible="A"), 1.0))
    assert not of(out, fx.StartStream)
    done = turn_done(out)
    assert done.stop is StopReason.MAX_TURNS and "limit of 1" in (done.reason or "")


def test_the_budget_stops_the_next_request_that_would_pass_it(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path, budget_usd=0.000001,
                    model_overrides={"scripted": {"input": 1000.0, "output": 1000.0}})
    start(sm)
    out = end(sm, use("c1", "read", path="a"), usage=UsageDelta(input_tokens=1000, output_tokens=10))
    assert of(out, fx.Store), "the usage row goes to the store"
    usage = [e for e in events(out) if e.type == "usage"][0]
    assert usage.usage.cost_usd > 0
    call = of(out, fx.StartCall)[0]
    out = sm.on(fx.ToolDone(call.gen, "c1", ToolResult(visible="A"), 1.0))
    done = turn_done(out)
    assert done.stop is StopReason.BUDGET and "session budget" in (done.reason or "")


def test_a_reply_cut_by_max_tokens_ends_with_a_note(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = end(sm, {"type": "text", "text": "and then"}, stop="max_tokens")
    assert turn_done(out).stop is StopReason.MAX_TOKENS
    assert any(e.type == "notice" and "max_tokens" in e.message for e in events(out))


def test_a_call_cut_by_max_tokens_is_not_run(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = end(sm, use("c1", "write", path="a"), stop="max_tokens")
    assert not of(out, fx.StartCall)
    done = [e for e in events(out) if e.type == "tool_call_done"][0]
    assert "cut off" in done.result.visible
    assert of(out, fx.StartStream), "the model hears why and tries again"


def test_a_refusal_rolls_the_turn_back(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = end(sm, {"type": "text", "text": "no"}, stop="refusal")
    assert "rewound" in types(out) and turn_done(out).stop is StopReason.ERROR
    assert sm.history == [] and 1 not in sm.turn_starts


def test_pause_turn_samples_again(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = end(sm, {"type": "text", "text": "thinking"}, stop="pause_turn")
    assert of(out, fx.StartStream) and sm.active is not None


# ---------------------------------------------------------------- steering


def test_a_message_during_a_turn_is_seen_at_the_next_step(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = sm.on(m.UserTurn(text="also this"))
    assert [e.message for e in events(out)] == ["message queued; the model sees it at its next step"]
    out = end(sm, {"type": "text", "text": "ok"})  # no tool call, but a steering message waits
    steered = [e for e in events(out) if e.type == "user_message"]
    assert steered and steered[0].steered and steered[0].text == "also this"
    assert of(out, fx.StartStream) and not [e for e in events(out) if e.type == "turn_done"]


def test_a_message_typed_after_the_last_step_starts_the_next_turn(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    end(sm, use("c1", "read", path="a"))
    sm.on(m.UserTurn(text="next"))
    sm.active.steer.clear()  # type: ignore[union-attr]
    sm.pending_inputs.append("next")
    call = sm.active.batch.calls[0]  # type: ignore[union-attr]
    out = sm.on(fx.ToolDone(sm.active.gen, call.id, ToolResult(visible="A"), 1.0))  # type: ignore[union-attr]
    out = end(sm, {"type": "text", "text": "done"})
    kinds = types(out)
    assert kinds.index("turn_done") < kinds.index("turn_started")  # one turn ends, the next begins
    assert sm.active is not None and sm.active.turn == 2


def test_a_turns_allow_rules_reach_the_engine_for_that_turn_only_and_a_steering_message_grants_nothing(
        tmp_path: Path) -> None:
    sm, ports = machine(tmp_path)
    ports.verdicts["bash"] = "ask"
    sm.on(m.UserTurn(text="go", allow=["bash"]))
    out = sm.on(m.UserTurn(text="and this", allow=["write"]))
    assert any("grant nothing" in e.message for e in events(out) if e.type == "notice")
    out = end(sm, use("c1", "bash", command="make"))
    assert not [e for e in events(out) if e.type == "approval_required"]  # pre-approved: it runs
    assert sm.active is not None and sm.active.allow == ["bash"]
    sm.on(fx.ToolDone(sm.active.gen, "c1", ToolResult(visible="ok"), 1.0))
    end(sm, {"type": "text", "text": "done"})  # the steered message joined the step after the call
    assert sm.active is None
    sm.on(m.UserTurn(text="again"))
    out = end(sm, use("c2", "bash", command="make"))
    assert [e for e in events(out) if e.type == "approval_required"]  # the grant ended with its turn


def test_a_turns_own_effort_reaches_its_requests_and_ends_with_it(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    first = of(sm.on(m.UserTurn(text="think hard", effort="high")), fx.StartStream)[0]
    assert first.request.effort == "high"
    assert of(sm.on(m.UserTurn(text="and this", effort="low")), fx.StartStream) == []  # it steers: no new turn
    steered = of(end(sm, {"type": "text", "text": "so far"}), fx.StartStream)[0]  # the same turn goes on
    assert steered.request.effort == "high"  # still the turn's own: a steering message's changes nothing
    end(sm, {"type": "text", "text": "done"})
    assert sm.active is None
    assert of(start(sm), fx.StartStream)[0].request.effort == ""  # the next turn: the session's own


def test_a_turns_images_follow_its_text_and_a_bad_one_is_said(tmp_path: Path) -> None:
    import base64

    sm, _ = machine(tmp_path)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 8).decode()
    out = sm.on(m.UserTurn(text="look", images=[{"media_type": "image/png", "data": png},
                                                {"media_type": "image/png", "data": "not base64!"}]))
    content = sm.history[-1]["content"]
    assert content[0] == {"type": "text", "text": "look"}
    assert content[1] == {"type": "image", "media_type": "image/png", "data": png}
    assert "image 2 of the message was left out" in content[2]["text"] and "base64" in content[2]["text"]
    assert any("image 2" in e.message for e in events(out) if e.type == "notice")


# ---------------------------------------------------------------- approvals


def asked(tmp_path: Path) -> tuple[TurnMachine, Ports, list[Any]]:
    sm, ports = machine(tmp_path)
    ports.verdicts["write"] = "ask"
    start(sm)
    return sm, ports, end(sm, use("c1", "write", path="a"))


def test_an_ask_waits_for_the_person(tmp_path: Path) -> None:
    sm, _, out = asked(tmp_path)
    assert "approval_required" in types(out) and not of(out, fx.StartCall)
    assert "c1" in sm.active.batch.awaiting_approval  # type: ignore[union-attr]


def test_approve_allow_runs_the_call(tmp_path: Path) -> None:
    sm, ports, _ = asked(tmp_path)
    out = sm.on(m.Approve(call_id="c1", decision=Decision.ALLOW))
    assert of(out, fx.StartCall)[0].call.id == "c1"
    assert sm.grants == []


def test_approve_for_the_session_grants_the_next_one(tmp_path: Path) -> None:
    sm, ports, _ = asked(tmp_path)
    out = sm.on(m.Approve(call_id="c1", decision=Decision.ALLOW_FOR_SESSION))
    assert of(out, fx.StartCall) and sm.grants == ["write"]
    out = sm.on(fx.ToolDone(of(out, fx.StartCall)[0].gen, "c1", ToolResult(visible="ok"), 1.0))
    out = end(sm, use("c2", "write", path="b"))
    assert of(out, fx.StartCall), "granted: no second question"
    assert ports.decided[-1][2] == ["write"]


def test_approve_with_an_edit_runs_the_edited_call_and_says_so(tmp_path: Path) -> None:
    sm, _, _ = asked(tmp_path)
    out = sm.on(m.Approve(call_id="c1", decision=Decision.EDIT, edited_input={"path": "b"}))
    assert "tool_call_edited" in types(out)
    assert of(out, fx.StartCall)[0].call.input == {"path": "b"}
    assert sm.history[-1]["content"][0]["input"] == {"path": "b"}  # the model's own call shows the edit


def test_deny_ends_the_turn_after_the_step(tmp_path: Path) -> None:
    sm, _, _ = asked(tmp_path)
    out = sm.on(m.Approve(call_id="c1", decision=Decision.DENY))
    done = [e for e in events(out) if e.type == "tool_call_done"][0]
    assert done.result.status.value == "denied"
    assert turn_done(out).stop is StopReason.DENIED


def test_deny_with_a_message_gives_it_to_the_model_and_the_turn_goes_on(tmp_path: Path) -> None:
    sm, _, _ = asked(tmp_path)
    out = sm.on(m.Approve(call_id="c1", decision=Decision.DENY, message="use the read tool instead"))
    done = [e for e in events(out) if e.type == "tool_call_done"][0]
    assert done.result.status.value == "denied" and done.result.visible == "use the read tool instead"
    assert "turn_done" not in types(out) and of(out, fx.StartStream)  # the model is asked again
    assert sm.history[-1]["content"][0]["content"] == "use the read tool instead"


def test_a_message_goes_with_deny_only() -> None:
    import pytest

    with pytest.raises(ValueError, match="'message' goes with decision 'deny' only"):
        m.Approve(call_id="c1", decision=Decision.ALLOW, message="why")


def test_an_approval_for_no_waiting_call_is_a_warning(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    out = sm.on(m.Approve(call_id="nope", decision=Decision.ALLOW))
    assert [e.level for e in events(out)] == ["warning"]


def test_a_denied_call_is_recorded_and_the_model_hears_it(tmp_path: Path) -> None:
    sm, ports = machine(tmp_path)
    ports.verdicts["bash"] = "deny"
    start(sm)
    out = end(sm, use("c1", "bash", command="rm -rf /"))
    assert not of(out, fx.StartCall) and of(out, fx.StartStream)
    assert sm.denials and sm.denials[0]["tool_use_id"] == "c1"


# ---------------------------------------------------------------- interrupts, in every state


def test_an_interrupt_with_nothing_running_does_nothing(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    assert sm.on(m.Interrupt()) == []


def test_an_interrupt_while_streaming_keeps_what_was_said(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    sid = of(start(sm), fx.StartStream)[0].stream_id
    sm.on(fx.StreamText(sid, "part"))
    out = sm.on(m.Interrupt())
    assert types(out)[:2] == ["Cancel", "assistant_message"]
    assert turn_done(out).stop is StopReason.INTERRUPTED
    assert of(out, fx.CloseQuestions)[0].reason == "interrupted"
    late = sm.on(fx.StreamEnd(StreamResult(sid, content=[{"type": "text", "text": "part and more"}])))
    assert late == []  # nothing after turn_done


def test_an_interrupt_while_a_call_waits_for_approval_aborts_it(tmp_path: Path) -> None:
    sm, _, _ = asked(tmp_path)
    out = sm.on(m.Interrupt())
    done = [e for e in events(out) if e.type == "tool_call_done"]
    assert [d.call_id for d in done] == ["c1"] and done[0].result.status.value == "aborted"
    assert turn_done(out).stop is StopReason.INTERRUPTED
    assert sm.history[-1]["role"] == "user"  # the aborted result is in the history for the next turn


def test_an_interrupt_while_a_call_runs_aborts_it_and_its_late_result_is_dropped(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    call = of(end(sm, use("c1", "bash", command="sleep 9")), fx.StartCall)[0]
    out = sm.on(m.Interrupt())
    assert of(out, fx.Cancel)[0].scope is call.scope
    assert turn_done(out).stop is StopReason.INTERRUPTED
    assert sm.on(fx.ToolDone(call.gen, "c1", ToolResult(visible="finished"), 1.0)) == []


def test_an_interrupt_during_a_compaction_keeps_the_history(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path, keep_turns=1)
    for text in ("one", "two"):
        start(sm, text)
        end(sm, {"type": "text", "text": "ok"})
    out = sm.on(m.Compact())
    assert of(out, fx.StartStream)[0].kind == "compact"
    before = list(sm.history)
    out = sm.on(m.Interrupt())
    assert [e.message for e in events(out)] == ["compaction interrupted; the history is unchanged"]
    assert sm.compaction is None and sm.history == before


def test_closing_ends_the_running_turn_and_closes_questions(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = sm.closing_down()
    assert turn_done(out).stop is StopReason.INTERRUPTED
    assert [e.reason for e in of(out, fx.CloseQuestions)] == ["session_closed", "session_closed"]


# ---------------------------------------------------------------- the batch


def test_reads_run_together_a_write_alone_and_results_return_in_emission_order(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = end(sm, use("r1", "read", path="a"), use("r2", "grep", path="b"), use("w1", "write", path="c"),
              use("r3", "read", path="d"))
    assert [c.call.id for c in of(out, fx.StartCall)] == ["r1", "r2"]
    gen = of(out, fx.StartCall)[0].gen
    assert of(sm.on(fx.ToolDone(gen, "r2", ToolResult(visible="B"), 1.0)), fx.StartCall) == []
    out = sm.on(fx.ToolDone(gen, "r1", ToolResult(visible="A"), 1.0))
    assert [c.call.id for c in of(out, fx.StartCall)] == ["w1"]  # alone, after the reads before it
    out = sm.on(fx.ToolDone(gen, "w1", ToolResult(visible="C"), 1.0))
    assert [c.call.id for c in of(out, fx.StartCall)] == ["r3"]
    out = sm.on(fx.ToolDone(gen, "r3", ToolResult(visible="D"), 1.0))
    results = sm.history[-1]["content"]
    assert [b["tool_use_id"] for b in results] == ["r1", "r2", "w1", "r3"]
    assert of(out, fx.StartStream)


def test_claude_code_spellings_batch_judge_and_dedup_as_coxs_tools(tmp_path: Path) -> None:
    """``Read``/``Grep`` run together and ``Write`` alone, exactly as read/grep/write; the engine
    and the read cache see cox's names; the history keeps the model's."""
    sm, ports = machine(tmp_path)
    start(sm)
    out = end(sm, use("r1", "Read", file_path="a"), use("r2", "Grep", pattern="x", path="b"),
              use("w1", "Write", file_path="c", content="C"), use("r3", "read", path="a"))
    assert [c.call.id for c in of(out, fx.StartCall)] == ["r1", "r2"]
    assert [(c.call.name, c.call.input) for c in of(out, fx.StartCall)] == [
        ("read", {"path": "a"}), ("grep", {"pattern": "x", "path": "b", "files_with_matches": True})]
    assert [d[0] for d in ports.decided] == ["read", "grep", "write", "read"]
    assert [e.call.name for e in events(out) if e.type == "tool_call_requested"] == ["read", "grep", "write", "read"]
    gen = of(out, fx.StartCall)[0].gen
    sm.on(fx.ToolDone(gen, "r1", ToolResult(visible="A"), 1.0))
    out = sm.on(fx.ToolDone(gen, "r2", ToolResult(visible="B"), 1.0))
    assert [(c.call.id, c.call.name) for c in of(out, fx.StartCall)] == [("w1", "write")]
    out = sm.on(fx.ToolDone(gen, "w1", ToolResult(visible="C"), 1.0))
    assert [c.call.id for c in of(out, fx.StartCall)] == ["r3"]  # judged before r1 ran: nothing to reuse yet
    uses = [b for msg in sm.history if msg["role"] == "assistant" for b in msg["content"] if b.get("type") == "tool_use"]
    assert [(b["name"], b["input"]) for b in uses][:3] == [("Read", {"file_path": "a"}),
                                                           ("Grep", {"pattern": "x", "path": "b"}),
                                                           ("Write", {"file_path": "c", "content": "C"})]
    sm.on(fx.ToolDone(gen, "r3", ToolResult(visible="A"), 1.0))
    out = end(sm, use("r4", "Read", file_path="a"))  # the same read in the other spelling: one cache entry
    assert not of(out, fx.StartCall)
    assert [e.result.visible for e in events(out) if e.type == "tool_call_done"][0].startswith("unchanged since #r")


def test_a_repeated_read_is_answered_from_the_earlier_result(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    gen = of(end(sm, use("r1", "read", path="a")), fx.StartCall)[0].gen
    sm.on(fx.ToolDone(gen, "r1", ToolResult(visible="A"), 1.0))
    out = end(sm, use("r2", "read", path="a"))
    assert not of(out, fx.StartCall)
    assert [e.result.visible for e in events(out) if e.type == "tool_call_done"][0].startswith("unchanged since #r1")


def test_unknown_deferred_and_malformed_calls_get_an_error_result(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = end(sm, use("u", "nosuch"), use("d", "lazy"), use("b", "write", bad=1))
    texts = [e.result.visible for e in events(out) if e.type == "tool_call_done"]
    assert "unknown tool 'nosuch'" in texts[0] and "tool_search" in texts[1] and "bad input" in texts[2]
    assert of(out, fx.StartStream)


# ---------------------------------------------------------------- hooks at the choke point


def test_a_pretooluse_hook_runs_before_the_permission_engine_and_may_deny(tmp_path: Path) -> None:
    sm, ports = machine(tmp_path, hooks=True)
    out = start(sm)
    hook = of(out, fx.RunHook)[0]
    assert hook.point == "UserPromptSubmit" and not of(out, fx.StartStream)
    out = hook.then({"prompt": "rewritten", "context": "ctx"})
    assert [e.text for e in events(out) if e.type == "user_message"] == ["rewritten"]
    assert sm.history[-1]["content"][-1]["text"] == "ctx"
    out = end(sm, use("c1", "bash", command="ls"))
    pre = of(out, fx.RunHook)[0]
    assert pre.point == "PreToolUse" and pre.scope is sm.active.scope  # type: ignore[union-attr]
    assert ports.decided == []  # the hook first
    out = pre.then({"deny": "not today"})
    assert ports.decided == []
    assert "denied by a PreToolUse hook: not today" in [e for e in events(out) if e.type == "tool_call_done"][0].result.visible


def test_a_pretooluse_hook_may_rewrite_the_input(tmp_path: Path) -> None:
    sm, ports = machine(tmp_path, hooks=True)
    of(start(sm), fx.RunHook)[0].then(None)
    pre = of(end(sm, use("c1", "write", path="a")), fx.RunHook)[0]
    out = pre.then({"input": {"path": "b"}})
    assert of(out, fx.StartCall)[0].call.input == {"path": "b"}
    post = of(sm.on(fx.ToolDone(sm.active.gen, "c1", ToolResult(visible="ok"), 1.0)), fx.RunHook)[0]  # type: ignore[union-attr]
    assert post.point == "PostToolUse"
    out = post.then({"context": "note"})
    assert sm.history[-1]["content"][0]["content"].endswith("[hook] note")


def test_a_stop_hook_may_keep_the_turn_going(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path, hooks=True)
    of(start(sm), fx.RunHook)[0].then(None)
    stop = of(end(sm, {"type": "text", "text": "done?"}), fx.RunHook)[0]
    assert stop.point == "Stop"
    out = stop.then({"continue": "run the tests too"})
    assert of(out, fx.StartStream) and [e.text for e in events(out) if e.type == "user_message"] == ["run the tests too"]


# ---------------------------------------------------------------- children that die


def test_a_stream_that_dies_before_a_word_is_retried_once(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    first = of(start(sm), fx.StartStream)[0]
    out = sm.on(fx.ChildExit("stream", first.gen, first.stream_id, "crashed"))
    again = of(out, fx.StartStream)
    assert again and again[0].stream_id != first.stream_id
    out = sm.on(fx.ChildExit("stream", first.gen, again[0].stream_id, "crashed"))
    assert turn_done(out).stop is StopReason.ERROR


def test_a_call_that_crashes_gets_an_error_result(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    call = of(end(sm, use("c1", "bash", command="x")), fx.StartCall)[0]
    assert sm.watched(call.gen) == [("call", "c1")]
    out = sm.on(fx.ChildExit("call", call.gen, "c1", "killed"))
    assert "crashed before it finished: killed" in [e for e in events(out) if e.type == "tool_call_done"][0].result.visible
    assert of(out, fx.StartStream)


def test_a_storage_failure_ends_the_turn_with_its_sentence(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    out = sm.on(fx.StorageFailed(1, "the disk is full"))
    done = turn_done(out)
    assert done.stop is StopReason.ERROR and done.reason == "the disk is full"


def test_rewinding_code_waits_for_the_restore_and_then_cuts_the_conversation(tmp_path: Path) -> None:
    sm, _ = machine(tmp_path)
    start(sm)
    end(sm, {"type": "text", "text": "ok"})
    out = sm.on(m.Rewind(to_turn=1, what="both"))
    assert types(out) == ["SettleMarkers", "RestoreCode"]
    assert sm.history, "nothing cut before the code is back"
    assert of(out, fx.RestoreCode)[0].then(False) == [] and sm.history
    out = of(out, fx.RestoreCode)[0].then(True)
    assert types(out) == ["rewound"] and sm.history == []
