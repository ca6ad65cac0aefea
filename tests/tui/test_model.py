"""The TUI's pieces without a terminal: the event model, the Markdown renderer, the key filter
and the coalescing reader (many events, few wakes)."""

from __future__ import annotations

import queue
import threading
from typing import Any

from cox.protocol import messages as m
from cox.protocol.types import StopReason, ToolCall, ToolResult, ToolStatus, Usage
from cox.surfaces.tui import markdown
from cox.surfaces.tui.model import Model


def _call(cid: str = "c1", name: str = "bash", subject: str = "cargo test") -> ToolCall:
    return ToolCall(id=cid, name=name, input={"command": subject}, subject=subject)


def test_deltas_extend_one_block_and_are_sanitized() -> None:
    model = Model()
    for chunk in ("Hel", "lo \x1b]52;c;AAAA\x07", "world"):
        model.apply(m.TextDelta(text=chunk))
    model.apply(m.ThinkingDelta(text="hmm"))
    model.apply(m.TextDelta(text="!"))
    kinds = [b.kind for b in model.blocks]
    assert kinds == ["assistant", "thinking", "assistant"]
    assert model.blocks[0].text == "Hello world"


def test_tool_rows_follow_the_call() -> None:
    model = Model()
    model.status.cwd = "/ws"
    model.apply(m.ToolCallRequested(call=_call("a", subject="ls /ws/src")))
    assert model.status.running_tools == 1 and model.blocks[-1].subject == "ls src"
    model.apply(m.ToolCallOutput(call_id="a", chunk="one\ntwo\n"))
    assert model.blocks[-1].last_line == "two"
    model.apply(m.ToolCallDone(call_id="a", result=ToolResult(visible="x\ny\nz"), duration_ms=800))
    assert model.blocks[-1].state == "ok" and model.blocks[-1].detail == "0.8 s · 3 lines"
    model.apply(m.ToolCallRequested(call=_call("b")))
    model.apply(m.ToolCallDone(call_id="b", result=ToolResult(status=ToolStatus.ERROR, exit_code=1)))
    assert model.blocks[-1].detail == "exit 1"
    model.apply(m.ToolCallRequested(call=_call("c")))
    model.apply(m.ToolCallDone(call_id="c", result=ToolResult(status=ToolStatus.DENIED, visible="no")))
    assert model.blocks[-1].state == "denied"
    model.apply(m.ToolCallRequested(call=_call("d")))
    model.apply(m.TurnDone(turn=1, stop=StopReason.INTERRUPTED))
    assert model.tools["d"].state == "aborted" and model.status.running_tools == 0
    text = model.plain()
    assert "✓ bash  ls src  0.8 s · 3 lines" in text and "✗ bash" in text and "⊘ bash" in text
    assert "turn 1: interrupted" in text


def test_queued_message_is_matched_by_the_session_echo() -> None:
    model = Model()
    block = model.typed("also this", queued=True)
    model.apply(m.UserMessage(turn=1, text="also this", steered=True))
    assert block.acked and not block.queued
    assert sum(1 for b in model.blocks if b.kind == "user") == 1


def test_status_from_usage_and_mode_notices() -> None:
    model = Model()
    model.apply(m.UsageEvent(usage=Usage(input_tokens=1000, cache_read_tokens=500, output_tokens=20),
                             session_total=Usage(cost_usd=0.25)))
    assert model.status.context_tokens == 1520 and model.status.cost_usd == 0.25
    model.apply(m.Notice(message="mode editor: permission mode plan, main turns on x"))
    assert model.status.mode == "plan"


def test_markdown_markup() -> None:
    out = markdown.render("# Title\n\n- item **bold**\n```py\nx = 1\n```\nuse `f()`")
    assert ("md_h", "Title") in out and ("md_bold", "bold") in out
    assert ("md_code", "x = 1") in out and ("md_code", "f()") in out
    assert ("assistant", "• ") in out
    # an unclosed fence (mid-stream) renders the rest as code
    assert ("md_code", "half") in markdown.render("```\nhalf")


class FakeHandle:
    session_id = "s"

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[Any, str]] = queue.Queue()
        self.sent: list[Any] = []

    def alive(self) -> bool:
        return True

    def submit(self, sub: Any) -> bool:
        self.sent.append(sub)
        return True

    def interrupt(self) -> bool:
        return self.submit(m.Interrupt())


class FakeLoop:
    """Runs the woken callback on the reader's thread: enough to count wakes."""

    def __init__(self) -> None:
        self.wakes = 0

    def call_from_thread(self, fn: Any) -> None:
        self.wakes += 1
        fn()


def test_a_burst_of_deltas_wakes_the_loop_a_few_times() -> None:
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    ui.loop = FakeLoop()  # type: ignore[assignment]
    for i in range(5000):
        handle.events.put((m.TextDelta(text=f"{i} "), ""))
    reader = threading.Thread(target=ui._read)
    reader.start()
    try:
        deadline = threading.Event()
        for _ in range(200):
            if handle.events.empty() and not ui._pending:
                break
            deadline.wait(0.02)
    finally:
        ui._stop.set()
        reader.join(5)
    assert ui.frames <= 5, ui.frames
    assert ui.model.blocks[-1].text.endswith("4999 ")


def test_enter_and_ctrl_j_are_told_apart() -> None:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle())
    assert ui._input_filter(["enter"], [13]) == ["enter"]
    assert ui._input_filter(["enter"], [10]) == ["ctrl j"]
    assert ui._input_filter(["a", "enter", "enter"], [97, 10, 13]) == ["a", "ctrl j", "enter"]


def test_slash_commands_and_mode_cycle_submit() -> None:
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    ui.composer.set_edit_text("/compact keep the API")
    ui.send()
    ui.composer.set_edit_text("/rewind 2 code")
    ui.send()
    ui.global_key((80, 24), "shift tab")
    ui.global_key((80, 24), "shift tab")
    kinds = [(s.type, getattr(s, "focus", None) or getattr(s, "to_turn", None) or getattr(s, "mode", None))
             for s in handle.sent]
    assert kinds == [("compact", "keep the API"), ("rewind", 2), ("set_mode", "acceptEdits"), ("set_mode", "plan")]
    assert ui.model.status.mode == "plan"
    assert any("PLAN MODE" in str(part) for part in ui.status_markup())


def test_a_long_reply_is_drawn_in_frozen_chunks_that_add_up() -> None:
    import urwid

    from cox.surfaces.tui.app import CHUNK_LINES, View
    from cox.surfaces.tui.model import Block

    lines = [f"line {i}" for i in range(CHUNK_LINES * 3 + 5)]
    lines[CHUNK_LINES - 2:CHUNK_LINES + 3] = ["```py", "a = 1", "b = 2", "c = 3", "```"]  # a fence across a cut
    walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
    view = View(pad=False)
    block = Block(kind="assistant")
    view.attach(block, walker)
    for line in lines:  # streamed a line at a time
        block.text += line + "\n"
        block.touch()
        view.update(block, walker)
    assert len(walker) == 4  # three frozen chunks and the live tail
    shown = "\n".join(w.text for w in walker)
    assert "line 0" in shown and f"line {len(lines) - 1}" in shown and "│ c = 3" in shown
    assert shown.count("\n") == len(lines) - 1


def test_several_approvals_queue_in_the_modal() -> None:
    from cox.protocol.types import Risk
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    for cid in ("a", "b"):
        call = ToolCall(id=cid, name="write", input={"path": f"{cid}.txt"}, subject=f"{cid}.txt", risk=Risk.WRITE)
        ui.on_event(m.ToolCallRequested(call=call))
        ui.on_event(m.ApprovalRequired(call=call, reason="no rule"))
    assert ui.modal_open() and len(ui.approvals) == 2
    ui.modal_key((80, 24), "y")
    ui.modal_key((80, 24), "n")
    assert [(s.call_id, s.decision.value) for s in handle.sent] == [("a", "allow"), ("b", "deny")]
    assert not ui.modal_open()


def test_change_preview_and_context_percent() -> None:
    from cox.surfaces.tui.app import TUI, change_preview

    edit = change_preview({"path": "a.py", "old_string": "x = 1", "new_string": "x = 2\ny = 3"})
    assert edit == [("diff_del", "- x = 1\n"), ("diff_add", "+ x = 2\n"), ("diff_add", "+ y = 3")]
    assert change_preview({"command": "ls"}) == []
    long = change_preview({"content": "\n".join(str(i) for i in range(20))})
    assert long[-1] == ("dim", "… 12 more lines")
    ui = TUI(FakeHandle(), status={"model": "m", "context_window": 200_000})
    ui.model.apply(m.UsageEvent(usage=Usage(input_tokens=50_000)))
    assert "ctx 50.0k (25%)" in "".join(text for _, text in ui.status_markup())


def test_architect_consent_is_asked_and_declining_keeps_editor() -> None:
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle, think_price="big-model ($15 in / $75 out per million tokens)")
    ui.composer.set_edit_text("/mode architect")
    ui.send()
    assert ui.modal_open() and not handle.sent
    ui.modal_key((80, 24), "y")
    assert [(s.type, s.preset) for s in handle.sent] == [("set_mode", "architect")]
    ui.ask_confirm("architect?", None, ui._editor_instead)
    ui.modal_key((80, 24), "n")
    assert handle.sent[-1].preset == "editor" and not ui.modal_open()
