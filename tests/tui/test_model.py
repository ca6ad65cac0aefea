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
    assert model.status.mode == "plan" and model.status.model == "x"
    assert not model.blocks  # a mode change is shown in the status line, not as a transcript line


def test_markdown_markup() -> None:
    out = markdown.render("# Title\n\n- item **bold**\n```py\nx = 1\n```\nuse `f()`")
    assert ("md_h", "Title") in out and ("md_bold", "bold") in out
    assert ("syn_number", "1") in out and ("md_code", "f()") in out  # a named language is coloured
    assert ("md_code", "x = 1") in markdown.render("```\nx = 1\n```")  # no language: plain code
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


def test_a_closed_question_takes_its_modal_away_with_a_notice_of_why() -> None:
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    ui.on_event(m.TurnStarted(turn=1))
    ui.on_event(m.Question(question_id="q1", prompt="(1/1) Name", source="mcp:gh",
                           schema={"type": "object", "properties": {"name": {"type": "string"}}}))
    ui.on_event(m.Question(question_id="q2", prompt="open  https://x.example/", url="https://x.example/",
                           source="mcp:docs"))
    assert ui.modal_open() and len(ui.questions) == 2
    ui.on_event(m.QuestionClosed(question_id="q1", reason="withdrawn"))
    assert ui.questions.head is not None and ui.questions.head.question_id == "q2"
    assert ui.model.blocks[-1].kind == "notice" and ui.model.blocks[-1].text == "mcp:gh withdrew its question"
    ui.on_event(m.QuestionClosed(question_id="q2", reason="interrupted"))
    assert not ui.modal_open() and not handle.sent
    assert ui.model.blocks[-1].text == "mcp:docs's question was closed: the turn was interrupted"


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
    assert notes[0] == "model m1 · tier main · mode default · /model NAME switches main turns to NAME"
    assert notes[1] == "session cost $0.0300 · tokens in 1.5k, out 50 · cache read 800, written 0"
    assert notes[2] == "no subagents run yet"
    ui.model.apply(m.Notice(message="mode architect: permission mode default, main turns on big-1"))
    ui.composer.set_edit_text("/model")
    ui.send()
    assert ui.model.blocks[-1].text.startswith("model big-1 · tier think · mode default")
    ui.composer.set_edit_text("/model big-2")
    ui.send()
    assert ui.handle.sent == [m.SetModel(model="big-2")]
    ui.handle.sent.clear()
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
    assert {k: v for k, v in dark.items() if not k.startswith("syn_")} == {e[0]: e for e in PALETTE}
    assert light.keys() == dark.keys()
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


# ---------------------------------------------------------------- syntax colours

def test_fenced_code_with_a_language_is_coloured_by_token() -> None:
    out = markdown.render('```python\ndef f(x):\n    return "s"  # note\n```')
    assert ("syn_keyword", "def") in out and ("syn_function", "f") in out
    assert ("syn_string", '"s"') in out and ("syn_comment", "# note") in out
    assert out.count(("md_fence", "│ ")) == 2  # the gutter on each code line, as before
    diff = markdown.render("```diff\n+added\n-removed\n```")
    assert ("diff_add", "+added") in diff and ("diff_del", "-removed") in diff
    # an unknown language and a bare fence stay plain code
    assert ("md_code", "x = 1") in markdown.render("```nosuchlanguage\nx = 1\n```")
    assert markdown._lexer("nosuchlanguage") is None and "nosuchlanguage" in markdown._LEXERS


def test_pygments_is_imported_only_for_a_fenced_block_with_a_language() -> None:
    import subprocess
    import sys

    code = ("import sys\nfrom cox.surfaces.tui import markdown as md\n"
            "md.render('# h\\n- **b**\\n```\\nplain\\n```')\nassert 'pygments' not in sys.modules\n"
            "md.render('```py\\nx = 1\\n```')\nassert 'pygments' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_string_across_a_chunk_cut_keeps_its_colour() -> None:
    first, state = markdown.render_state('```python\ns = """one\ntwo')
    assert isinstance(state, markdown.Fence) and state.lang == "python" and "two" in state.context
    second, state = markdown.render_state('three"""\nx = 1\n```', state)
    assert ("syn_string", 'three"""') in second and ("syn_number", "1") in second and state is None
    # without the carried lines the lexer would have started afresh
    assert ("syn_string", 'three"""') not in markdown.render_state('three"""', markdown.Fence("python"))[0]


def test_a_streaming_block_lexes_its_complete_lines_once() -> None:
    body = "```python\n" + "".join(f"v{i} = {i}\n" for i in range(20))
    markdown._highlight.cache_clear()
    markdown.render(body + "par")
    misses = markdown._highlight.cache_info().misses
    for tail in ("part", "partial", "partial_name"):  # frames where only the last line grows
        out = markdown.render(body + tail)
    assert markdown._highlight.cache_info().misses == misses  # no re-lex of the 20 lines
    assert ("syn_text", "partial_name") in out and ("syn_number", "19") in out


def test_a_long_code_block_streamed_into_chunks_is_coloured_throughout() -> None:
    import urwid

    from cox.surfaces.tui.app import CHUNK_LINES, View
    from cox.surfaces.tui.model import Block

    walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
    view = View(pad=False)
    block = Block(kind="assistant")
    view.attach(block, walker)
    lines = ["```python"] + [f"n{i} = {i}  # c" for i in range(CHUNK_LINES * 2 + 3)] + ["```", "done"]
    for line in lines:
        block.text += line + "\n"
        block.touch()
        view.update(block, walker)
    assert len(walker) == 3
    for w in walker:
        attrs = {a for a, _ in w.get_text()[1]}  # (attr, run length) pairs
        assert "syn_comment" in attrs or w is view.live


def test_syntax_palette_for_16_256_and_truecolor_themes_and_no_color() -> None:
    import urwid

    from cox.surfaces.tui.app import SYNTAX_COLOURS, palette

    dark = {e[0]: e for e in palette()}
    light = {e[0]: e for e in palette("light")}
    assert set(SYNTAX_COLOURS) <= dark.keys() and set(SYNTAX_COLOURS) <= light.keys()
    assert dark["syn_keyword"][1] == "light magenta" and dark["syn_keyword"][4] == "#c678dd"
    assert light["syn_keyword"][1] == "dark magenta" and light["syn_keyword"][4] != dark["syn_keyword"][4]
    mono = {e[0]: e for e in palette(no_color=True)}
    assert all(mono[n][1:3] == ("default", "default") and len(mono[n]) == 4 for n in SYNTAX_COLOURS)
    for colors in (16, 256, 2**24):  # each entry resolves on each kind of terminal
        for _name, fg, bg, _mono, fg_high, bg_high in (dark[n] for n in SYNTAX_COLOURS):
            urwid.AttrSpec(fg_high if colors > 16 else fg, bg_high if colors > 16 else bg, colors)


# ---------------------------------------------------------------- thinking panels

def _thinking_ui() -> Any:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle())
    for thought, reply in (("first idea\nmore of it", "One."), ("second idea", "Two.")):
        ui.model.apply(m.ThinkingDelta(text=thought))
        ui.model.apply(m.TextDelta(text=reply))
    ui.model.apply(m.TurnDone(turn=1, stop=StopReason.END_TURN))
    ui.refresh()
    return ui


def _thinking_texts(ui: Any) -> list[str]:
    return [ui._views[i].live.text for i, b in enumerate(ui.model.blocks) if b.kind == "thinking"]


def test_thinking_is_a_folded_dimmed_panel_while_done_and_shows_its_tail_while_live() -> None:
    from cox.surfaces.tui.app import render_thinking
    from cox.surfaces.tui.model import Block

    live = Block(kind="thinking", text="a\nb\nc\nd\ne", live=True)
    markup = render_thinking(live)
    text = "".join(t for _, t in markup)
    assert text.startswith("▸ ✻ thinking · 5 lines") and "┆ … 2 earlier" in text and text.endswith("┆ e")
    assert {a for a, _ in markup} <= {"thinking_head", "thinking"}
    done = Block(kind="thinking", text="a\nb\nc\nd\ne")
    assert render_thinking(done) == [("thinking_head", "▸ ✻ thinking · 5 lines · a…")]
    done.unfolded = True
    assert "".join(t for _, t in render_thinking(done)) == "▾ ✻ thinking · 5 lines" + "".join(
        f"\n  ┆ {x}" for x in "abcde")
    assert render_thinking(Block(kind="thinking", text="one"), selected=True)[0][0] == "thinking_sel"


def test_ctrl_t_unfolds_the_newest_thinking_block_on_its_own() -> None:
    ui = _thinking_ui()
    first, second = _thinking_texts(ui)
    assert first.startswith("▸") and "more of it" not in first and second.startswith("▸")
    ui.global_key((80, 24), "ctrl t")
    first, second = _thinking_texts(ui)
    assert first.startswith("▸") and second.startswith("▾") and "┆ second idea" in second
    ui.global_key((80, 24), "ctrl t")
    assert all(t.startswith("▸") for t in _thinking_texts(ui))


def test_alt_up_picks_an_older_thinking_block_for_ctrl_t() -> None:
    ui = _thinking_ui()
    ui.global_key((80, 24), "meta up")  # the newest
    ui.global_key((80, 24), "meta up")  # the older one
    older = next(b for b in ui.model.blocks if b.kind == "thinking")
    assert ui.selected is older and not ui.follow
    ui.global_key((80, 24), "ctrl t")
    first, second = _thinking_texts(ui)
    assert first.startswith("▾") and "┆ more of it" in first and second.startswith("▸")
    assert ui._views[ui.model.blocks.index(older)].live.get_text()[1][0][0] == "thinking_sel"
    ui.global_key((80, 24), "meta down")
    ui.global_key((80, 24), "meta down")  # past the newest: no pick, follow the end again
    assert ui.selected is None and ui.follow
    ui.global_key((80, 24), "ctrl o")  # Ctrl+O still unfolds everything
    assert all(t.startswith("▾") for t in _thinking_texts(ui))


# ---------------------------------------------------------------- status line

def _status(ui: Any) -> str:
    return "".join(t for _, t in ui.status_markup())


def test_status_line_names_the_running_tools() -> None:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle())
    ui.model.apply(m.ToolCallRequested(call=_call("a", "bash")))
    assert " · ● bash" in _status(ui)
    for cid, name in (("b", "grep"), ("c", "read"), ("d", "glob")):
        ui.model.apply(m.ToolCallRequested(call=_call(cid, name)))
    assert " · ● 4 tools: bash, grep, read +1" in _status(ui)
    ui.model.apply(m.ToolCallDone(call_id="a", result=ToolResult(visible="ok")))
    assert ui.model.status.running == ["grep", "read", "glob"] and ui.model.status.running_tools == 3
    ui.model.apply(m.TurnDone(turn=1, stop=StopReason.INTERRUPTED))
    assert "●" not in _status(ui) and "agent" not in _status(ui)
    for n in (1, 2):  # subagents running: counted from their relayed events
        ui.model.apply(m.AgentEvent(agent_id=f"s-a{n}", call_id=f"g{n}", event={"type": "turn_started", "turn": 1}))
    assert " · ⑂ 2 agents" in _status(ui)
    ui.model.apply(m.AgentEvent(agent_id="s-a1", call_id="g1", event={"type": "turn_done", "turn": 1,
                                                                      "stop": "end_turn"}))
    assert " · ⑂ 1 agent" in _status(ui) and "2 agents" not in _status(ui)


def _git(cwd: Any, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(cwd), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                   check=True, capture_output=True)


def test_worktree_probe_branch_changes_and_linked_worktree(tmp_path: Any) -> None:
    import shutil

    import pytest

    from cox.surfaces.tui.worktree import probe

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert probe(str(tmp_path)) is None  # not a repository: no segment
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\ntwo\n")
    assert probe(str(repo)).segment() == "⎇ main +2 −0"  # no commit yet: the untracked file counts
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-qm", "first")
    assert probe(str(repo)).segment() == "⎇ main"
    (repo / "a.txt").write_text("one\nthree\nfour\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "new.py").write_text("x = 1\n")
    (repo / "bin").write_bytes(b"\0\1")  # binary: not counted
    state = probe(str(repo / "sub"))
    assert (state.branch, state.added, state.removed, state.worktree) == ("main", 3, 1, "")
    _git(repo, "worktree", "add", "-q", "-b", "t42", str(tmp_path / "t42"))
    assert probe(str(tmp_path / "t42")).segment() == "⎇ t42 · ⧉ t42"
    _git(repo, "checkout", "-q", "--detach")
    assert probe(str(repo)).branch != "main"


def test_status_line_shows_the_worktree_probed_off_the_ui_thread(tmp_path: Any) -> None:
    import shutil
    import time

    import pytest

    from cox.surfaces.tui.app import TUI

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "f").write_text("x\n")
    ui = TUI(FakeHandle(), status={"cwd": str(tmp_path)})
    ui.loop = FakeLoop()  # type: ignore[assignment]
    main = threading.get_ident()
    seen: list[int] = []
    from cox.surfaces.tui import worktree

    real = worktree.probe

    def probe(cwd: str) -> Any:
        seen.append(threading.get_ident())
        return real(cwd)

    worktree.probe = probe  # type: ignore[assignment]
    try:
        ui.on_event(m.TurnDone(turn=1, stop=StopReason.END_TURN))  # a turn ended: probe again
        for _ in range(200):
            if ui.model.status.git is not None:
                break
            time.sleep(0.02)
    finally:
        worktree.probe = real  # type: ignore[assignment]
    assert seen and main not in seen
    assert "⎇ trunk +1 −0" in _status(ui) and _status(ui).endswith(tmp_path.name)


def test_no_git_segment_outside_a_repository(tmp_path: Any) -> None:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle(), status={"cwd": str(tmp_path)})
    ui.loop = FakeLoop()  # type: ignore[assignment]
    ui._probe_git()
    assert ui.model.status.git is None and "⎇" not in _status(ui)


# ---------------------------------------------------------------- replay after a rewind

def _turn(n: int, said: str, answer: str) -> list[dict[str, Any]]:
    return [{"type": "turn_started", "turn": n},
            {"type": "user_message", "turn": n, "text": said},
            {"type": "assistant_message", "turn": n, "content": [{"type": "text", "text": answer}]},
            {"type": "tool_call_requested", "call": {"id": f"c{n}", "name": "bash", "input": {"command": said}}},
            {"type": "tool_call_done", "call_id": f"c{n}", "result": {"visible": "ok"}},
            {"type": "turn_done", "turn": n, "stop": "end_turn"}]


def test_replay_hides_the_turns_a_rewind_took_back() -> None:
    events = [*_turn(1, "one", "answer one"), *_turn(2, "two", "answer two"), *_turn(3, "three", "answer three"),
              {"type": "rewound", "to_turn": 2, "what": "conversation"},
              *_turn(4, "four", "answer four"),
              {"type": "rewound", "to_turn": 4, "what": "code"},  # code only: the turn stays
              *_turn(5, "five", "answer five"),
              {"type": "rewound", "to_turn": 5, "what": "both"}]
    model = Model()
    model.replay(events)
    text = model.plain()
    for gone in ("two", "three", "five"):
        assert f"you › {gone}" not in text and f"answer {gone}" not in text
    for kept in ("one", "four"):
        assert f"you › {kept}" in text and f"cox › answer {kept}" in text
    assert "rewound to turn 2 (conversation)" in text and "rewound to turn 4 (code)" in text
    assert text.index("answer one") < text.index("rewound to turn 2") < text.index("answer four")
    assert set(model.tools) == {"c1", "c4"}  # the rewound turns' tool rows are gone too


def test_replay_hides_a_refused_turn() -> None:
    events = [*_turn(1, "fine", "sure"),
              {"type": "turn_started", "turn": 2}, {"type": "user_message", "turn": 2, "text": "bad ask"},
              {"type": "rewound", "to_turn": 2, "what": "conversation"},
              {"type": "turn_done", "turn": 2, "stop": "error", "reason": "the model declined to answer"}]
    model = Model()
    model.replay(events)
    text = model.plain()
    assert "bad ask" not in text and "you › fine" in text and "declined" in text


# ---------------------------------------------------------------- one frame, many deltas

def test_a_frames_deltas_extend_the_block_once_and_each_is_sanitized() -> None:
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    batch = [(m.TextDelta(text=t), "") for t in ("Hel", "lo\x1b[31m", " world")]
    batch += [(m.ThinkingDelta(text="hm"), ""), (m.TextDelta(text="after"), "")]
    batch += [(m.TextDelta(text=f"{i},"), "") for i in range(1000)]
    ui._post(*batch)
    ui.apply_pending()
    kinds = [(b.kind, b.text[:11]) for b in ui.model.blocks]
    assert kinds == [("assistant", "Hello world"), ("thinking", "hm"), ("assistant", "after0,1,2,")]
    assert ui.model.blocks[2].version == 1 and ui.model.blocks[2].live  # 1,001 deltas, one change
    assert ui.model.blocks[0].version == 2 and not ui.model.blocks[0].live  # one change, then closed
    assert ui.frames == 1


def test_the_reader_drains_the_queue_in_one_take() -> None:
    from cox.surfaces.tui.app import _drain

    q: queue.Queue[int] = queue.Queue()
    for i in range(5):
        q.put(i)
    assert _drain(q) == [0, 1, 2, 3, 4] and q.empty() and _drain(q) == []


def test_scan_ends_in_the_state_render_state_does() -> None:
    texts = ["plain\n- item", "```py\na = 1", "```py\na = 1\n```\nafter", "x\n```\ncode\n```\n```sh\nls",
             "\n".join(f"l{i}" for i in range(40)), "```python\n" + "\n".join(f"x{i} = {i}" for i in range(30))]
    for start in (None, markdown.Fence("python", "s = '''\n")):
        for text in texts:
            assert markdown.scan(text, start) == markdown.render_state(text, start)[1], (text, start)


def test_frozen_chunks_render_their_markup_only_when_drawn() -> None:
    from cox.surfaces.tui.app import Chunk

    chunk = Chunk("# Title\n```py\nx = 1", None)
    assert chunk._source is not None  # nothing rendered yet
    assert chunk.render((40,)).rows() == 3 and chunk._source is None
    assert ("md_h", 5) in chunk.get_text()[1]


def test_an_edited_call_shows_the_edited_input_live_and_on_replay() -> None:
    model = Model()
    model.status.cwd = "/ws"
    model.apply(m.ToolCallRequested(call=_call("e1", subject="touch /ws/original.txt")))
    model.apply(m.ApprovalRequired(call=_call("e1", subject="touch /ws/original.txt"), reason="no rule"))
    model.apply(m.ToolCallEdited(call=_call("e1", subject="touch /ws/edited.txt")))
    row = model.tools["e1"]
    assert row.subject == "touch edited.txt" and "original" not in model.plain()
    model.apply(m.ToolCallDone(call_id="e1", result=ToolResult(visible=""), duration_ms=100))
    assert "✓ bash  touch edited.txt  edited · 0.1 s · 0 lines" in model.plain()
    replayed = Model()
    replayed.status.cwd = "/ws"
    replayed.replay([m.to_dict(e) for e in (
        m.ToolCallRequested(call=_call("e1", subject="touch /ws/original.txt")),
        m.ToolCallEdited(call=_call("e1", subject="touch /ws/edited.txt")),
        m.ToolCallDone(call_id="e1", result=ToolResult(visible="")))])
    assert "touch edited.txt  edited" in replayed.plain() and "original" not in replayed.plain()


def _live_turn(model: Model, n: int, text: str, reply: str) -> None:
    model.typed(text, queued=False)
    model.apply(m.TurnStarted(turn=n))
    model.apply(m.UserMessage(turn=n, text=text))
    model.apply(m.TextDelta(text=reply))
    model.apply(m.TurnDone(turn=n, stop=StopReason.END_TURN))


def test_a_rewind_of_the_conversation_takes_the_later_turns_off_the_transcript() -> None:
    model = Model()
    _live_turn(model, 1, "ask one", "Answer one.")
    _live_turn(model, 2, "ask two", "Answer two.")
    _live_turn(model, 3, "ask three", "Answer three.")
    model.apply(m.Rewound(to_turn=3, what="code"))  # files only: the conversation stays
    assert "Answer three." in model.plain()
    model.apply(m.Rewound(to_turn=2, what="conversation"))
    text = model.plain()
    assert "ask one" in text and "Answer one." in text
    assert "ask two" not in text and "Answer two." not in text and "Answer three." not in text
    assert text.rstrip().endswith("rewound to turn 2 (conversation)")
    _live_turn(model, 4, "ask four", "Answer four.")
    model.apply(m.Rewound(to_turn=4, what="both"))
    assert "ask four" not in model.plain() and "Answer one." in model.plain()


def test_the_tui_redraws_the_transcript_after_a_rewind() -> None:
    from cox.surfaces.tui.app import TUI

    ui = TUI(FakeHandle())
    for n, word in ((1, "one"), (2, "two")):
        ui.model.typed(f"ask {word}", queued=False)
        for e in (m.TurnStarted(turn=n), m.UserMessage(turn=n, text=f"ask {word}"),
                  m.AssistantMessage(turn=n, content=[]), m.TurnDone(turn=n, stop=StopReason.END_TURN)):
            ui.on_event(e)
        ui.model.deltas("text_delta", [f"Answer {word}."])
        ui.refresh()
    ui.on_event(m.Rewound(to_turn=2, what="both"))
    ui.refresh()
    shown = "\n".join(str(w.text) for w in ui.walker if hasattr(w, "text"))
    assert "Answer one." in shown and "Answer two." not in shown and "ask two" not in shown
    assert len(ui._views) == len(ui.model.blocks)


def _usage(cost: float, tokens: int, total: tuple[float, int]) -> m.UsageEvent:
    return m.UsageEvent(usage=Usage(model="x", input_tokens=tokens, output_tokens=1, cost_usd=cost),
                        session_total=Usage(model="x", input_tokens=total[1], output_tokens=total[1] // tokens,
                                            cost_usd=total[0]))


def test_the_session_cost_goes_on_from_the_earlier_runs_after_a_resume() -> None:
    started = m.to_dict(m.SessionStarted(session_id="s", cwd="/w", model="x", tools=[]))
    earlier = [started, m.to_dict(_usage(0.5, 100, (0.5, 100))), m.to_dict(_usage(0.25, 100, (0.75, 200))),
               {**started, "resumed": True}, m.to_dict(_usage(1.0, 100, (1.0, 100)))]  # one resume already
    model = Model()
    model.replay(earlier)
    assert model.status.cost_usd == 1.75 and model.status.input_tokens == 300
    model.apply(m.SessionStarted(session_id="s", cwd="/w", model="x", tools=[], resumed=True))
    model.apply(_usage(0.5, 100, (0.5, 100)))  # this run's totals start again at zero
    assert model.status.cost_usd == 2.25 and model.status.input_tokens == 400
    model.apply(_usage(0.25, 100, (0.75, 200)))
    assert model.status.cost_usd == 2.5 and model.status.input_tokens == 500
    carried = Model()
    carried.replay(earlier[:3])
    carried.apply(m.SessionStarted(session_id="s", cwd="/w", model="x", tools=[], resumed=True))
    carried.apply(_usage(0.25, 100, (1.0, 300)))  # a session that carries its totals over: not added twice
    assert carried.status.cost_usd == 1.0 and carried.status.input_tokens == 300


def test_a_markdown_table_is_drawn_aligned() -> None:
    text = ("Sizes:\n\n| Name | Size | Note |\n|:-----|-----:|:---:|\n| a.py | 12 | **ok** |\n"
            "| longer_name.rs | 1234 | `x` |\n| 日本 | 1 | a \\| b |\n\nAfter.")
    shown = "".join(t for _, t in markdown.render(text)).split("\n")
    assert shown[2:7] == [
        " Name           │ Size │ Note",
        "────────────────┼──────┼───────",
        " a.py           │   12 │  ok",
        " longer_name.rs │ 1234 │   x",
        " 日本           │    1 │ a | b",
    ]
    assert shown[-1] == "After." and "|---" not in "\n".join(shown)
    assert ("md_bold", "Name") in markdown.render(text) and ("md_code", "x") in markdown.render(text)
    assert markdown.render("a | b\nno table here") == [("assistant", "a | b"), ("assistant", "\n"),
                                                     ("assistant", "no table here")]


def test_a_wrapped_code_line_keeps_its_gutter_on_every_row() -> None:
    import urwid

    from cox.surfaces.tui import gutter

    text = "prose that is long enough to wrap\n```\nx = compute(alpha, beta, gamma, delta) + other(epsilon)\n```"
    widget = urwid.Text(markdown.render(text), layout=gutter.LAYOUT)
    canvas = widget.render((30,))
    rows = [r.decode() for r in canvas.text]
    code = [r for r in rows if "compute" in r or "gamma" in r or "epsilon" in r]
    assert len(code) >= 2 and all(r.startswith("│ ") for r in code), rows
    assert rows[0].startswith("prose") and not rows[1].startswith("│")  # prose wraps as before
    for row in list(canvas.content())[rows.index(code[1])][:1]:
        assert row[0] == "md_fence"  # the repeated gutter has the gutter's colour
    assert "".join(r.rstrip() for r in code).replace("│ ", "").replace(" ", "") == \
        "x=compute(alpha,beta,gamma,delta)+other(epsilon)"  # nothing lost or doubled
    tool = urwid.Text("    │ " + "word " * 12, layout=gutter.LAYOUT).render((30,))
    assert all(r.decode().startswith("    │ ") for r in tool.text)


def test_no_escape_time_note_outside_tmux() -> None:
    from cox.surfaces.tui.escape import escape_note, tmux_escape_ms

    assert tmux_escape_ms({"PATH": "/usr/bin:/bin"}) is None and escape_note({"PATH": "/usr/bin:/bin"}) == ""


def test_mode_dont_ask_is_a_mode_of_slash_mode_and_not_of_the_cycle() -> None:
    """``/mode dontAsk`` switches to it in the TUI and in --plain; Shift+Tab cycles as Claude Code
    does (default, acceptEdits, plan): dontAsk is not in its cycle."""
    import io

    from cox.surfaces import plain
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    ui.composer.set_edit_text("/mode dontAsk")
    ui.send()
    assert [getattr(s, "mode", None) for s in handle.sent] == ["dontAsk"] and ui.model.status.mode == "dontAsk"
    for _ in range(4):
        ui.global_key((80, 24), "shift tab")
    assert "dontAsk" not in [getattr(s, "mode", None) for s in handle.sent[1:]]
    line = FakeHandle()
    out = io.StringIO()
    assert plain._command("/mode dontAsk", line, out) is True  # type: ignore[arg-type]
    assert [getattr(s, "mode", None) for s in line.sent] == ["dontAsk"]
    plain._command("/mode nope", line, out)  # type: ignore[arg-type]
    assert "dontAsk" in out.getvalue() and "dontAsk" in plain.HELP
