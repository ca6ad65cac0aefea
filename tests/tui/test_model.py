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


def test_replay_shows_a_rollouts_earlier_transcript() -> None:
    events: list[dict[str, Any]] = [
        {"type": "session_started", "session_id": "s", "cwd": "/ws", "model": "x"},
        {"type": "turn_started", "turn": 1},
        {"type": "user_message", "turn": 1, "text": "make \x1b[31mr"},
        {"type": "text_delta", "text": "Writing"},  # repeated by assistant_message: not shown twice
        {"type": "assistant_message", "turn": 1, "content": [{"type": "thinking", "thinking": "hm"},
                                                              {"type": "text", "text": "Writing it."},
                                                              {"type": "tool_use", "id": "w1", "name": "write"}]},
        {"type": "tool_call_requested", "call": {"id": "w1", "name": "write", "input": {"path": "/ws/r.txt"},
                                                 "subject": "/ws/r.txt"}},
        {"type": "tool_call_done", "call_id": "w1", "result": {"visible": "wrote r.txt"}, "duration_ms": 100},
        {"type": "tool_call_requested", "call": {"id": "b1", "name": "bash", "input": {"command": "sleep 9"}}},
        {"type": "usage", "usage": {"input_tokens": 10}, "session_total": {"input_tokens": 40, "output_tokens": 5,
                                                                           "cost_usd": 0.5}},
        {"type": "turn_done", "turn": 1, "stop": "end_turn"},
        {"type": "rewound", "to_turn": 1, "what": "code"},
        {"type": "tool_call_done", "call_id": "zz", "result": {"status": "nonsense"}},  # undecodable: skipped
    ]
    model = Model()
    model.status.cwd = "/ws"
    model.replay(events)
    text = model.plain()
    assert "you › make r" in text and "cox › Writing it." in text and "✓ write  r.txt" in text
    assert "■ bash" in text and "rewound to turn 1 (code)" in text and "Writing\n" not in text
    assert "\x1b" not in text
    st = model.status
    assert not st.turn_running and st.running_tools == 0 and st.cost_usd == 0.5 and st.input_tokens == 40


def test_resume_run_replays_the_rollout_before_the_new_turn(tmp_path: Any) -> None:
    import json

    from cox.surfaces.tui.app import TUI, replay_rollout

    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in [
        {"type": "user_message", "turn": 1, "text": "earlier question"},
        {"type": "assistant_message", "turn": 1, "content": [{"type": "text", "text": "earlier answer"}]},
    ]) + "\n{torn")
    ui = TUI(FakeHandle(), status={"rollout": str(path)})
    assert ui.rollout == str(path)
    replay_rollout(ui.model, ui.rollout)
    assert [b.kind for b in ui.model.blocks] == ["user", "assistant", "turn"]
    replay_rollout(ui.model, str(tmp_path / "missing.jsonl"))
    assert ui.model.blocks[-1].kind == "error"


def test_model_cost_agents_and_clear_commands() -> None:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle(), status={"model": "m1", "tier": "main"})
    ui.model.apply(m.UsageEvent(usage=Usage(input_tokens=1200, output_tokens=30, cache_read_tokens=800,
                                            cost_usd=0.01)))
    ui.model.apply(m.UsageEvent(usage=Usage(input_tokens=300, output_tokens=20, cost_usd=0.02)))
    for cmd in ("/model", "/cost", "/agents"):
        ui.composer.set_edit_text(cmd)
        ui.send()
    notes = [b.text for b in ui.model.blocks if b.kind == "notice"]
    assert notes[0] == "model m1 · tier main · mode default"
    assert notes[1] == "session cost $0.0300 · tokens in 1.5k, out 50 · cache read 800, written 0"
    assert notes[2] == "no subagents run yet"
    ui.model.apply(m.Notice(message="mode architect: permission mode default, main turns on big-1"))
    ui.composer.set_edit_text("/model")
    ui.send()
    assert ui.model.blocks[-1].text == "model big-1 · tier think · mode default"
    ui.model.apply(m.ToolCallRequested(call=_call("r")))  # a running tool survives /clear
    ui.composer.set_edit_text("/clear")
    ui.send()
    assert [b.kind for b in ui.model.blocks] == ["tool"] and len(ui.walker) == 1
    assert not ui.handle.sent  # the session's history is not touched


def test_status_line_shows_mcp_servers() -> None:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle())
    assert "mcp" not in "".join(t for _, t in ui.status_markup())
    ui.model.apply(m.SessionStarted(session_id="s", cwd="/ws", model="x", mcp_servers=[
        {"name": "a", "status": "ready"}, {"name": "b", "status": "ready"},
        {"name": "c", "status": "failed: no such command"}, {"name": "d", "status": "restarting 2"}]))
    assert " · mcp 2✓ 1✗ 1…" in "".join(t for _, t in ui.status_markup())
    ui.model.apply(m.SessionStarted(session_id="s", cwd="/ws", model="x", mcp_servers=[{"name": "a", "status": "ready"}]))
    assert ui.model.status.mcp_summary() == "mcp 1✓"


def test_light_palette_and_no_color(monkeypatch: Any) -> None:
    from cox.surfaces.tui.app import PALETTE, TUI, palette

    dark = {e[0]: e for e in palette()}
    light = {e[0]: e for e in palette("light")}
    mono = palette("light", no_color=True)
    assert dark == {e[0]: e for e in PALETTE} and light.keys() == dark.keys()
    assert light["user"][1] != dark["user"][1] and light["status"][1:3] == ("white", "dark blue")
    assert all(fg == "default" and bg == "default" for _, fg, bg, _ in mono)
    monkeypatch.setenv("COX_THEME", "light")
    assert TUI(FakeHandle()).theme == "light"
    assert TUI(FakeHandle(), status={"theme": "dark"}).theme == "dark"


def _picker_ui() -> Any:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle())
    ui.rewind_turns = lambda: [{"turn": 7, "files": 3, "title": "add the cache column"},  # type: ignore[method-assign]
                               {"turn": 6, "files": 1, "title": "first"}]
    return ui


def test_esc_esc_opens_the_rewind_picker_and_submits_a_rewind() -> None:
    ui = _picker_ui()
    size = (80, 24)
    ui.global_key(size, "esc")
    assert ui.picker is None
    ui.global_key(size, "esc")
    assert ui.picker is not None and ui.modal_open()
    body, title = ui._picker_body()
    rows = [w.text for w, _ in body.contents if hasattr(w, "text")]
    assert title == " rewind to the start of which turn? "
    assert rows[0] == '▸ T7 · 3 files · "add the cache column"' and rows[1] == '  T6 · 1 file · "first"'
    ui.modal_key(size, "down")
    ui.modal_key(size, "enter")
    assert ui.picker["stage"] == "what" and ui.picker["turn"] == 6
    ui.modal_key(size, "up")  # from "both" to "conversation"
    ui.modal_key(size, "enter")
    assert [(s.to_turn, s.what) for s in ui.handle.sent] == [(6, "conversation")]
    assert not ui.modal_open()
    ui.command("/rewind")  # /rewind without a turn opens the picker too
    ui.modal_key(size, "enter")
    ui.modal_key(size, "c")
    assert (ui.handle.sent[-1].to_turn, ui.handle.sent[-1].what) == (7, "code")
    ui.command("/rewind")
    ui.modal_key(size, "esc")  # Esc closes it, nothing sent
    assert not ui.modal_open() and len(ui.handle.sent) == 2


def test_esc_esc_does_not_open_the_picker_with_text_or_a_running_turn() -> None:
    ui = _picker_ui()
    ui.composer.set_edit_text("draft")
    ui.global_key((80, 24), "esc")
    ui.global_key((80, 24), "esc")
    assert ui.picker is None
    ui.composer.set_edit_text("")
    ui.model.status.turn_running = True
    ui.global_key((80, 24), "esc")
    ui.global_key((80, 24), "esc")
    assert ui.picker is None and [s.type for s in ui.handle.sent] == ["interrupt", "interrupt"]
    ui.model.status.turn_running = False
    ui.rewind_turns = lambda: []  # type: ignore[method-assign]
    ui.global_key((80, 24), "meta esc")
    assert ui.picker is None and "nothing to rewind" in ui.model.blocks[-1].text


def test_rewind_turns_reads_the_checkpoints_timeline(tmp_path: Any) -> None:
    from cox.actors.store import checkpoints, db
    from cox.surfaces.tui.app import TUI

    path = tmp_path / "cox.db"
    conn = db.connect(path)
    checkpoints.ensure_schema(conn)
    for turn, path_, kind, title in ((1, "", "marker", "one"), (1, "a.txt", "pre", None), (2, "", "marker", "two"),
                                     (1, "", "marker", "other session")):
        conn.execute("INSERT INTO checkpoints (session_id, turn, path, kind, title, created_at) VALUES (?,?,?,?,?,0)",
                     ("s" if title != "other session" else "t", turn, path_, kind, title))
    conn.close()
    ui = TUI(FakeHandle(), status={"db": str(path)})
    assert ui.rewind_turns() == [{"turn": 2, "files": 0, "title": "two"}, {"turn": 1, "files": 1, "title": "one"}]


def test_tab_completion_of_commands_and_workspace_paths(tmp_path: Any, monkeypatch: Any) -> None:
    from cox.surfaces.tui import app
    from cox.surfaces.tui.app import TUI

    (tmp_path / "src").mkdir()
    (tmp_path / ".hidden").mkdir()
    for rel in ("src/alpha.py", "src/beta.py", "README.md", ".hidden/x"):
        (tmp_path / rel).write_text("x")
    ui = TUI(FakeHandle(), status={"cwd": str(tmp_path)})

    def tab(text: str) -> str:
        ui.composer.set_edit_text(text)
        ui.composer.set_edit_pos(len(text))
        ui.complete()
        return ui.composer.edit_text

    assert tab("/cl") == "/clear "
    assert tab("/mo") == "/mode" and ui.completions == "/mode  /model"
    assert tab("/mode ar") == "/mode architect "
    assert tab("/zz") == "/zz" and ui.completions == "no match"
    assert ui.workspace_files() == ["README.md", "src/alpha.py", "src/beta.py"]  # hidden folders skipped
    assert tab("see @src/") == "see @src/" and ui.completions == "src/alpha.py  src/beta.py"
    assert tab("see @src/b and") == "see @src/b and"  # the cursor is not after an @word
    assert tab("see @READ") == "see @README.md "
    assert tab("@alpha") == "@src/alpha.py "  # no path starts so: matched anywhere
    assert tab("plain words") == "plain words"
    monkeypatch.setattr(app, "WALK_LIMIT", 2)
    ui._files = None
    assert len(ui.workspace_files()) <= 2


def test_tab_completion_uses_git_ls_files_in_a_repository(tmp_path: Any) -> None:
    import shutil
    import subprocess

    import pytest

    from cox.surfaces.tui.app import TUI

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.o").write_text("x")
    (tmp_path / "main.py").write_text("x")
    ui = TUI(FakeHandle(), status={"cwd": str(tmp_path)})
    assert ui.workspace_files() == [".gitignore", "main.py"]
