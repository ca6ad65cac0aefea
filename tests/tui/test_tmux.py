"""The real TUI in tmux against the scripted model: streaming, tools, approvals, interrupts,
modes and resize. Screens are compared as text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.xdist_group("tui")


STREAM = [
    {"thinking": "Run the tests first.",
     "text": "# Plan\n\nI'll run **the tests**:\n\n- build\n- test\n\n```sh\ncargo test\n```\n",
     "chunk": 4, "delta_delay_ms": 15,
     "tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "echo started; sleep 1.5; echo finished"}}],
     "usage": {"input_tokens": 2900, "output_tokens": 60}},
    {"text": "All tests passed.", "chunk": 3, "delta_delay_ms": 10,
     "usage": {"input_tokens": 3100, "output_tokens": 20}},
]


def test_streams_text_and_runs_a_tool(tui: Any) -> None:
    t = tui(STREAM)
    idle = t.wait("Shift+Tab mode")
    assert "mode default" in idle
    t.send("run the tests")
    running = t.wait("● bash")
    assert "› run the tests" in running and "Plan" in running and "• build" in running
    assert "│ cargo test" in running  # fenced code shown distinctly
    assert "**" not in running  # bold markers rendered, not shown
    t.wait("⎿ started")
    t.save("streaming", t.screen())
    done = t.wait("All tests passed.")
    assert "✓ bash" in done and "lines" in done
    idle = t.wait(lambda s: "working" not in s)
    t.save("idle", idle)
    t.keys("C-o")  # expand: the tool's output under its row
    t.wait("│ finished")
    t.keys("C-o")
    t.wait(lambda s: "│ finished" not in s)
    after = t.quit()
    assert "cox › All tests passed." in after  # the transcript stays in the scrollback


def test_approvals_y_n_e_s(tui: Any) -> None:
    replies = [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "a.txt", "content": "a\n"}}]},
        {"text": "Wrote a."},
        {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "b.txt", "content": "b\n"}}]},
        {"tool_calls": [{"id": "w3", "name": "write", "input": {"path": "c.txt", "content": "c\n"}}]},
        {"text": "Wrote the edited file."},
        {"tool_calls": [{"id": "w4", "name": "write", "input": {"path": "d.txt", "content": "d\n"}}]},
        {"tool_calls": [{"id": "w5", "name": "write", "input": {"path": "d.txt", "content": "dd\n"}}]},
        {"text": "Wrote d twice."},
    ]
    t = tui(replies)
    t.wait("Shift+Tab mode")
    t.send("write a")
    modal = t.wait("[y] allow once")
    assert "approve write?" in modal and "a.txt" in modal and "risk" in modal and "reason" in modal
    t.save("approval", modal)
    t.keys("y")
    t.wait("Wrote a.")
    t.wait(lambda s: "working" not in s)
    assert (t.ws / "a.txt").read_text() == "a\n"

    t.send("write b")
    t.wait("[y] allow once")
    t.keys("n")
    screen = t.wait("⊘ write")
    assert "denied" in screen and not (t.ws / "b.txt").exists()
    t.wait("turn 2: denied")

    t.send("write c")
    t.wait("[e] edit input")
    t.keys("e")
    t.wait("edit the input (JSON)")
    t.keys("-N", "200", "BSpace")
    t.type(json.dumps({"path": "c2.txt", "content": "edited\n"}))
    t.keys("Enter")
    t.wait("Wrote the edited file.")
    t.wait(lambda s: "working" not in s)
    assert (t.ws / "c2.txt").read_text() == "edited\n" and not (t.ws / "c.txt").exists()

    t.send("write d twice")
    t.wait("[s] allow for session")
    t.keys("s")
    t.wait("Wrote d twice.")  # the second write of the same file did not ask again
    assert (t.ws / "d.txt").read_text() == "dd\n"
    t.quit()


def test_esc_interrupts_a_running_sleep(tui: Any) -> None:
    replies = [{"text": "Sleeping.", "tool_calls": [{"id": "s1", "name": "bash", "input": {"command": "sleep 30"}}]},
               {"text": "unused"}]
    t = tui(replies)
    t.wait("Shift+Tab mode")
    t.send("sleep")
    screen = t.wait(lambda s: "sleep 30" in s and ("running…" in s or "[y] allow once" in s))
    if "[y] allow once" in screen:
        t.keys("y")
        t.wait("running…")
    t.type("and then this")
    t.keys("Enter")
    t.wait("you (queued) › and then this")  # typing during a turn queues it as steering
    t.keys("Escape")
    screen = t.wait("■ bash")
    assert "interrupted" in screen
    t.wait(lambda s: "working" not in s)
    t.quit()


def test_shift_tab_into_plan_mode_refuses_a_write(tui: Any) -> None:
    replies = [{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "f.txt", "content": "f\n"}}]},
               {"text": "Plan only, then."}]
    t = tui(replies)
    t.wait("mode default")
    t.keys("BTab")
    t.wait("mode acceptEdits")
    t.keys("BTab")
    screen = t.wait("PLAN MODE")
    t.send("write f")
    screen = t.wait("⊘ write")
    assert "[y] allow once" not in screen and not (t.ws / "f.txt").exists()
    t.keys("BTab")
    t.wait("mode default")
    t.quit()


def test_resize_keeps_drawing(tui: Any) -> None:
    t = tui(STREAM)
    t.wait("Shift+Tab mode")
    t.send("run the tests")
    t.wait("● bash")
    for w, h in ((60, 15), (140, 45), (40, 10), (100, 30)):
        t.tmux("resize-window", "-t", t.name, "-x", str(w), "-y", str(h))
        t.wait(lambda s, h=h: len(s.splitlines()) <= h and "scripted" in s)
    t.wait("All tests passed.")
    assert "Traceback" not in t.screen()
    t.quit()


def test_composer_newline_paste_history_and_ctrl_c(tui: Any) -> None:
    t = tui([{"text": "First reply."}, {"text": "Second reply."}])
    t.wait("Shift+Tab mode")
    t.type("line one")
    t.keys("C-j")
    t.type("line two")
    screen = t.wait("  line two")
    assert "› line one" in screen and "First reply." not in screen  # Ctrl+J did not send
    t.keys("Enter")
    t.wait("First reply.")
    t.wait(lambda s: "working" not in s)
    t.tmux("set-buffer", "pasted a\npasted b")
    t.tmux("paste-buffer", "-p", "-t", t.name)
    screen = t.wait("  pasted b")
    assert "Second reply." not in screen  # a pasted newline does not send
    t.keys("Enter")
    t.wait("Second reply.")
    t.wait(lambda s: "working" not in s)
    t.keys("Up")
    t.wait(lambda s: s.count("pasted b") == 2)  # history brought the last message back
    t.keys("C-c")  # idle with text in the composer: Ctrl+C clears it
    t.wait(lambda s: s.count("pasted b") == 1)
    t.keys("C-c")  # on an empty composer the first Ctrl+C only asks
    screen = t.wait("press Ctrl+C again to quit")
    assert "EXITED" not in screen
    t.keys("C-c")  # the second, soon after, leaves
    t.wait("EXITED 0")


def test_no_color_draws_monochrome(tui: Any) -> None:
    t = tui([{"text": "Plain."}], env={"NO_COLOR": "1"})
    t.wait("Shift+Tab mode")
    t.send("hi")
    t.wait("Plain.")
    styled = t.tmux("capture-pane", "-p", "-e", "-t", t.name)
    assert "\x1b[3" not in styled.replace("\x1b[39m", "") and "\x1b[9" not in styled  # no foreground colours
    t.quit()


def test_two_pending_approvals_queue(tui: Any) -> None:
    t = tui([{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "p.txt", "content": "p\n"}},
                             {"id": "w2", "name": "write", "input": {"path": "q.txt", "content": "q\n"}}]},
             {"text": "Wrote both."}])
    t.wait("Shift+Tab mode")
    t.send("write both")
    screen = t.wait("+1 more waiting")
    assert "p.txt" in screen
    t.keys("y")
    screen = t.wait(lambda s: "subject  q.txt" in s and "more waiting" not in s)
    t.keys("n")
    t.wait("⊘ write")
    assert (t.ws / "p.txt").exists() and not (t.ws / "q.txt").exists()
    t.quit()


def test_the_cox_command_opens_the_tui_on_a_terminal(tui: Any) -> None:
    t = tui([{"text": "Hello from the real command.", "chunk": 5, "delta_delay_ms": 5}], cli=True)
    screen = t.wait("$0.0000")  # the TUI's status line (the line-mode surface has none)
    assert "ℹ cox" in screen
    t.send("hi")
    t.wait("Hello from the real command.")
    t.send("/quit")
    screen = t.wait("EXITED 0")
    assert "Hello from the real command." in screen  # the transcript stays in the scrollback


def _session_ids(home: Path) -> list[str]:
    return sorted(p.stem for p in (home / "sessions").glob("*.jsonl"))


def test_resume_replays_the_earlier_transcript(tui: Any, cox_home: Path) -> None:
    t = tui([{"text": "Writing it.", "tool_calls": [{"id": "w1", "name": "write",
                                                      "input": {"path": "r.txt", "content": "r\n"}}]},
             {"text": "First answer done."}], mode="acceptEdits")
    t.wait("Shift+Tab mode")
    t.send("make r")
    t.wait("First answer done.")
    t.wait(lambda s: "working" not in s)
    t.quit()
    t.close()
    (sid,) = _session_ids(cox_home)
    t = tui([{"text": "Second answer."}], extra=f"--resume {sid}")
    screen = t.wait("resumed session")
    assert "› make r" in screen and "Writing it." in screen and "First answer done." in screen
    assert "✓ write" in screen and "r.txt" in screen and "earlier in this session" in screen
    assert screen.index("› make r") < screen.index("First answer done.") < screen.index("resumed session")
    t.send("and again")
    screen = t.wait("Second answer.")
    assert "First answer done." in screen
    t.quit()


def test_esc_esc_opens_the_rewind_picker_and_restores_a_file(tui: Any) -> None:
    t = tui([{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "f.txt", "content": "one\n"}}]},
             {"text": "Wrote one."},
             {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "f.txt", "content": "two\n"}}]},
             {"text": "Wrote two."}], mode="acceptEdits")
    t.wait("Shift+Tab mode")
    t.send("first write")
    t.wait("Wrote one.")
    t.wait(lambda s: "working" not in s)
    t.send("add the cache column")
    t.wait("Wrote two.")
    t.wait(lambda s: "working" not in s)
    assert (t.ws / "f.txt").read_text() == "two\n"
    t.keys("Escape", "Escape")
    picker = t.wait("rewind to the start of which turn?")
    assert '▸ T2 · 1 file · "add the cache column"' in picker and 'T1 · 1 file · "first write"' in picker
    assert picker.index("T2 ·") < picker.index("T1 ·")  # newest first
    t.save("rewind", picker)
    t.keys("Escape")  # Esc closes it
    t.wait(lambda s: "which turn" not in s)
    t.keys("Escape", "Escape")
    t.wait("▸ T2")
    t.keys("Enter")
    t.wait("restore what?")
    t.keys("c")
    t.wait("rewound to turn 2 (code)")
    assert (t.ws / "f.txt").read_text() == "one\n"
    t.quit()


def test_tab_completes_commands_and_paths(tui: Any) -> None:
    t = tui([{"text": "Seen."}])
    (t.ws / "src").mkdir()
    for name in ("alpha.py", "beta.py"):
        (t.ws / "src" / name).write_text("x\n")
    t.wait("Shift+Tab mode")
    t.type("/mo")
    t.keys("Tab")
    t.wait("/mode  /model")  # two commands match: both listed, the common part inserted
    t.type(" pl")
    t.keys("Tab")
    t.wait("› /mode plan")
    t.keys("Enter")
    t.wait("PLAN MODE")
    t.type("look at @src/")
    t.keys("Tab")
    t.wait("src/alpha.py  src/beta.py")  # several matches are listed in the hint line
    t.type("a")
    t.keys("Tab")
    t.wait("› look at @src/alpha.py")
    t.keys("Enter")
    t.wait("Seen.")
    t.quit()


def test_light_theme_draws_its_palette(tui: Any) -> None:
    t = tui([{"text": "Light."}], env={"COX_THEME": "light"})
    t.wait("Shift+Tab mode")
    styled = t.tmux("capture-pane", "-p", "-e", "-t", t.name)
    status = next(line for line in styled.splitlines() if "scripted" in line)
    assert "44m" in status  # the light palette's status line: white on dark blue
    t.quit()


def test_fenced_code_is_drawn_in_syntax_colours(tui: Any) -> None:
    code = '```python\ndef area(r):\n    return 3.14 * r * r  # circle\n```\nDone.'
    t = tui([{"text": code, "chunk": 6, "delta_delay_ms": 5}])  # TERM=xterm-256color
    t.wait("Shift+Tab mode")
    t.send("show code")
    t.wait("Done.")
    styled = t.tmux("capture-pane", "-p", "-e", "-t", t.name)
    line = next(x for x in styled.splitlines() if "area" in x)
    # 256 colours: the palette's #rrggbb picks from the 256-colour cube (SGR 38;5;n), per token kind
    kw, fn = line.split("def", 1)[0], line.split("area", 1)[0]
    assert "38;5;" in kw.rsplit("│", 1)[-1] and "38;5;" in fn.rsplit("def", 1)[-1]
    ret = next(x for x in styled.splitlines() if "circle" in x)
    assert len(set(re.findall(r"38;5;\d+", ret))) >= 3  # keyword, number, comment differ
    t.quit()


def test_fenced_code_has_no_colours_under_no_color(tui: Any) -> None:
    t = tui([{"text": '```python\ndef f():\n    return "s"\n```'}], env={"NO_COLOR": "1"})
    t.wait("Shift+Tab mode")
    t.send("code")
    t.wait('return "s"')
    styled = t.tmux("capture-pane", "-p", "-e", "-t", t.name)
    assert "38;5;" not in styled and "38;2;" not in styled
    t.quit()


def test_ctrl_t_unfolds_a_thinking_block(tui: Any) -> None:
    t = tui([{"thinking": "First, look around.\nThen check the tests.\nFinally answer.", "text": "Answer."}])
    t.wait("Shift+Tab mode")
    t.send("think")
    screen = t.wait("Answer.")
    t.wait(lambda s: "working" not in s)
    screen = t.wait("▸ ✻ thinking · 3 lines · First, look around.…")
    assert "Then check the tests." not in screen
    t.keys("C-t")
    screen = t.wait("▾ ✻ thinking · 3 lines")
    assert "┆ Then check the tests." in screen and "┆ Finally answer." in screen
    t.keys("C-t")
    t.wait(lambda s: "Then check the tests." not in s and "▸ ✻ thinking" in s)
    t.quit()


def test_status_line_shows_running_tools_and_the_git_worktree(tui: Any) -> None:
    import subprocess

    t = tui([{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "sleep 1.5"}}]},
             {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "new.txt", "content": "a\nb\n"}}]},
             {"text": "Wrote it."}], mode="acceptEdits")
    t.wait("Shift+Tab mode")
    screen = t.wait("mode acceptEdits")
    assert "⎇" not in screen  # not a repository yet: no segment
    subprocess.run(["git", "init", "-q", "-b", "t42", str(t.ws)], check=True)
    t.send("sleep")
    screen = t.wait(lambda s: "· ● bash ·" in s)
    if "[y] allow once" in screen:
        t.keys("y")
    t.wait(lambda s: "working" not in s)
    t.wait("⎇ t42")  # probed again once the turn ended
    t.send("write")
    t.wait("Wrote it.")
    t.wait("⎇ t42 +2 −0")
    t.quit()


def test_resume_does_not_replay_rewound_turns(tui: Any, cox_home: Path) -> None:
    t = tui([{"text": "Answer one."}, {"text": "Answer two."}, {"text": "Answer three."}])
    t.wait("Shift+Tab mode")
    for word in ("one", "two"):
        t.send(f"ask {word}")
        t.wait(f"Answer {word}.")
        t.wait(lambda s: "working" not in s)
    t.send("/rewind 2 conversation")
    t.wait("rewound to turn 2 (conversation)")
    t.send("ask three")
    t.wait("Answer three.")
    t.wait(lambda s: "working" not in s)
    t.quit()
    t.close()
    (sid,) = _session_ids(cox_home)
    t = tui([{"text": "Fourth."}], extra=f"--resume {sid}")
    screen = t.wait("resumed session")
    assert "› ask one" in screen and "Answer one." in screen and "Answer three." in screen
    assert "ask two" not in screen and "Answer two." not in screen
    assert screen.index("Answer one.") < screen.index("rewound to turn 2") < screen.index("Answer three.")
    t.quit()


def test_a_subagent_asks_labelled_is_counted_and_its_transcript_opens(tui: Any) -> None:
    call = {"id": "ag1", "name": "agent", "input": {"description": "write the answer", "prompt": "write 42",
                                                     "subagent_type": "general-purpose"}}
    t = tui([{"tool_calls": [call]}, {"text": "The agent wrote it."}], agents={"write 42": [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "answer.txt", "content": "42\n"}}]},
        {"text": "answer.txt now holds 42"},
    ]})
    t.wait("Shift+Tab mode")
    t.send("get an agent to write it")
    modal = t.wait("[y] allow once")
    assert re.search(r"agent \S+-a1 · general-purpose: approve write\?", modal), modal
    assert "⑂ 1 agent" in modal  # the status line counts it while it waits
    t.keys("y")
    t.wait("The agent wrote it.")
    idle = t.wait(lambda s: "working" not in s)
    assert "⑂" not in idle and (t.ws / "answer.txt").read_text() == "42\n"
    t.send("/agents")
    listed = t.wait("agents: 0 running, 1 finished")
    assert re.search(r"▸ a1  general-purpose  done .* write the answer", listed), listed
    t.keys("Enter")
    opened = t.wait("Esc back to the list")
    assert "general-purpose · done" in opened and "✓ write" in opened and "answer.txt now holds 42" in opened
    t.save("agent_transcript", opened)
    t.keys("Escape")
    t.wait("Enter open its transcript")
    t.keys("Escape")
    t.wait(lambda s: "agents:" not in s)
    t.quit()
