"""Issue 18's TUI items in a real tmux: what the screen shows after an edited approval, on
exit, on Ctrl+C, after /rewind and a resume, on /model, Shift+Tab, tables, wrapped code and
tmux's escape-time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.xdist_group("tui")


def test_an_edited_command_is_what_the_row_shows(tui: Any) -> None:
    t = tui([{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch original.txt"}}]},
             {"text": "Touched it."}])
    t.wait("Shift+Tab mode")
    t.send("touch a file")
    modal = t.wait("[e] edit input")
    assert "touch original.txt" in modal
    t.keys("e")
    t.wait("edit the input (JSON)")
    t.keys("-N", "200", "BSpace")
    t.type(json.dumps({"command": "touch edited.txt"}))
    t.keys("Enter")
    screen = t.wait("Touched it.")
    t.wait(lambda s: "working" not in s)
    assert (t.ws / "edited.txt").exists() and not (t.ws / "original.txt").exists()
    screen = t.screen()
    assert "✓ bash  touch edited.txt  edited ·" in screen and "original.txt" not in screen
    after = t.quit()
    assert "touch edited.txt" in after and "original.txt" not in after  # and in the printed transcript


def test_exit_prints_the_session_id_and_a_resume_command_that_works(tui: Any, cox_home: Path) -> None:
    t = tui([{"text": "First."}], cli=True)
    t.wait("Shift+Tab mode")
    t.send("hi")
    t.wait("First.")
    t.wait(lambda s: "working" not in s)
    after = t.quit()
    (sid,) = sorted(p.stem for p in (cox_home / "sessions").glob("*.jsonl"))
    import re
    import shutil

    hint = re.search(rf"session {sid} · resume with: (\S+(?: -m cox\.surfaces\.cli)?) --resume {sid}",
                     after.replace("\n", ""))  # (a long path wraps at the terminal's width)
    assert hint is not None, after[-500:]
    program = hint.group(1).split()[0]  # `cox` only when the cox on PATH is this one, else its path
    assert shutil.which(program) is not None or Path(program).is_file(), program
    assert after.index("cox › First.") < after.index("resume with:")  # last, under the transcript
    t.close()
    t = tui([{"text": "Second."}], cli=True, extra=f"--resume {sid}")  # the printed command, run
    screen = t.wait("resumed session")
    assert "First." in screen
    t.quit()


def test_no_resume_hint_when_no_turn_ran(tui: Any) -> None:
    t = tui([{"text": "unused"}])
    t.wait("Shift+Tab mode")
    after = t.quit()
    assert "resume with" not in after


def test_ctrl_c_on_an_empty_composer_asks_before_quitting(tui: Any) -> None:
    t = tui([{"text": "Here."}])
    t.wait("Shift+Tab mode")
    t.send("hi")
    t.wait("Here.")
    t.wait(lambda s: "working" not in s)
    t.keys("C-c")
    t.wait("press Ctrl+C again to quit")
    t.wait(lambda s: "press Ctrl+C again" not in s and "Shift+Tab mode" in s)  # the window passed
    t.keys("C-c")  # a lone Ctrl+C after the window asks again, it does not quit
    screen = t.wait("press Ctrl+C again to quit")
    assert "EXITED" not in screen and "Here." in screen
    t.keys("C-c")
    after = t.wait("EXITED 0")
    assert "cox › Here." in after  # the transcript is printed as on /quit


def test_rewound_turns_leave_the_screen_and_the_printed_transcript(tui: Any) -> None:
    t = tui([{"text": "Answer one."}, {"text": "Answer two."}, {"text": "Answer three."}])
    t.wait("Shift+Tab mode")
    for word in ("one", "two"):
        t.send(f"ask {word}")
        t.wait(f"Answer {word}.")
        t.wait(lambda s: "working" not in s)
    t.send("/rewind 2 conversation")
    screen = t.wait("rewound to turn 2 (conversation)")
    assert "› ask one" in screen and "Answer one." in screen
    assert "ask two" not in screen and "Answer two." not in screen
    t.send("ask three")
    screen = t.wait("Answer three.")
    assert "Answer two." not in screen
    t.wait(lambda s: "working" not in s)
    after = t.quit()
    assert "cox › Answer one." in after and "cox › Answer three." in after
    assert "Answer two." not in after and "ask two" not in after


def test_the_session_cost_goes_on_after_a_resume(tui: Any, cox_home: Path) -> None:
    priced = {"usage": {"input_tokens": 100_000, "output_tokens": 1000}}  # $0.21 on claude-sonnet-5
    t = tui([{"text": "First.", **priced}], model="claude-sonnet-5")
    t.wait("Shift+Tab mode")
    t.send("hi")
    t.wait("First.")
    t.wait(lambda s: "working" not in s and "$0.2100" in s)
    t.quit()
    t.close()
    (sid,) = sorted(p.stem for p in (cox_home / "sessions").glob("*.jsonl"))
    t = tui([{"text": "Second.", **priced}], model="claude-sonnet-5", extra=f"--resume {sid}")
    t.wait(lambda s: "resumed session" in s and "$0.2100" in s)
    t.send("again")
    t.wait("Second.")
    screen = t.wait(lambda s: "working" not in s)
    assert "$0.4200" in screen  # the earlier run's cost and this one's, not this one's alone
    t.send("/cost")
    t.wait("session cost $0.4200 · tokens in 200.0k, out 2.0k")
    t.quit()


def test_model_name_switches_the_next_request(tui: Any, tmp_path: Path) -> None:
    dump = tmp_path / "requests.json"
    t = tui([{"text": "On sonnet."}, {"text": "On opus."}], model="claude-sonnet-5",
            env={"COX_SCRIPTED_DUMP": str(dump)})
    t.wait("Shift+Tab mode")
    t.send("hi")
    t.wait("On sonnet.")
    t.wait(lambda s: "working" not in s)
    t.send("/model claude-opus-4-8")
    screen = t.wait("model claude-opus-4-8: main turns on claude-opus-4-8 from the next request")
    assert " claude-opus-4-8 · mode default" in screen  # the status line names the new model
    t.send("again")
    t.wait("On opus.")
    assert [r["model"] for r in json.loads(dump.read_text())] == ["claude-sonnet-5", "claude-opus-4-8"]
    t.send("/model")
    t.wait("ℹ model claude-opus-4-8 · tier main")
    t.quit()


def test_shift_tab_changes_the_status_line_and_adds_no_transcript_line(tui: Any) -> None:
    t = tui([{"text": "unused"}])
    before = t.wait("Shift+Tab mode")
    for mode in ("mode acceptEdits", "PLAN MODE", "mode default", "mode acceptEdits"):
        t.keys("BTab")
        t.wait(lambda s, mode=mode: mode in s.splitlines()[-1])  # the status line, last on screen
    t.send("/mode architect")
    t.wait("cox asks:")
    t.keys("Enter")
    screen = t.wait(lambda s: "mode architect" in s.splitlines()[-1])
    body = screen.splitlines()[:-4]  # the transcript, above the composer, hint and status lines
    assert not any("permission mode" in line or "ℹ mode" in line for line in body), screen
    assert [x for x in body if x.strip()] == [x for x in before.splitlines()[:-4] if x.strip()]  # no line added
    after = t.quit()
    assert "permission mode" not in after


def test_a_markdown_table_is_drawn_aligned(tui: Any) -> None:
    reply = ("| File | Lines |\n|---|---:|\n| src/main.rs | 120 |\n| README.md | 8 |\n\nTwo files.")
    t = tui([{"text": reply, "chunk": 7, "delta_delay_ms": 5}])
    t.wait("Shift+Tab mode")
    t.send("count")
    screen = t.wait("Two files.")
    assert " File        │ Lines" in screen and " src/main.rs │   120" in screen and " README.md   │     8" in screen
    assert "|---" not in screen and "| src" not in screen
    t.quit()


def test_a_wrapped_code_line_keeps_its_gutter_at_60_columns(tui: Any) -> None:
    line = "result = compute_the_total(alpha_value, beta_value, gamma_value) + adjust(delta_value, epsilon)"
    t = tui([{"text": f"Here:\n```\n{line}\nshort()\n```\nDone."}], width=60)
    t.wait("Shift+Tab mode")
    t.send("code")
    screen = t.wait("Done.")
    rows = screen.splitlines()
    first = next(i for i, r in enumerate(rows) if "compute_the_total" in r)
    last = next(i for i, r in enumerate(rows) if "short()" in r)
    assert last - first >= 2  # the long line took at least two rows
    assert all(r.startswith("│ ") for r in rows[first:last + 1]), screen
    assert "".join(r[2:].strip() for r in rows[first:last]).replace(" ", "") == line.replace(" ", "")
    t.quit()


def test_help_names_tmux_escape_time_when_it_delays_esc(tui: Any) -> None:
    t = tui([{"text": "unused"}], height=40)
    t.wait("Shift+Tab mode")
    assert t.tmux("show-options", "-sv", "escape-time").strip() == "500"  # tmux's default
    t.send("/help")
    screen = t.wait("escape-time")
    assert "tmux holds each Esc for 500 ms" in " ".join(x.strip() for x in screen.splitlines())
    t.send("/clear")
    t.wait(lambda s: "escape-time" not in s and "commands: /mode" not in s)  # the first /help is gone
    t.tmux("set-option", "-s", "escape-time", "10")
    t.send("/help")
    screen = t.wait("commands: /mode")
    assert "escape-time" not in screen  # lowered: nothing to say
    t.quit()


def test_esc_esc_typed_through_tmux_at_its_default_escape_time_opens_the_rewind_picker(tui: Any) -> None:
    import time

    from .tmux import Client

    t = tui([{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "f.txt", "content": "one\n"}}]},
             {"text": "Wrote one."}], mode="acceptEdits")
    t.wait("Shift+Tab mode")
    t.send("write")
    t.wait("Wrote one.")
    t.wait(lambda s: "working" not in s)
    assert t.tmux("show-options", "-sv", "escape-time").strip() == "500"
    client = Client(t)  # typed keys, not send-keys: tmux holds each Esc for its escape-time
    try:
        for gap in (0.05, 0.3):  # within tmux's 500 ms (one Alt+Esc arrives) and a slower pair
            client.press(b"\x1b")
            time.sleep(gap)
            client.press(b"\x1b")
            t.wait("rewind to the start of which turn?")
            client.press(b"\x1b")  # one Esc closes the picker (after tmux's wait)
            t.wait(lambda s: "which turn" not in s)
    finally:
        client.close()
    t.quit()
