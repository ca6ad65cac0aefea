"""A reply cut by ``max_tokens`` with no tool call ends its turn with a note (cod's stop table),
never as a plain ``end_turn`` that reads like a finished answer; the session lives on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.surfaces.test_headless import cox, lines, script

CUT = {"text": "The first half of the ans", "stop": "max_tokens"}


def test_a_cut_reply_ends_with_a_notice_and_its_own_stop_reason(tmp_path):
    s = script(tmp_path, [CUT, {"text": "swer, continued."}])
    dump = tmp_path / "requests.json"
    turns = "".join(json.dumps({"type": "user_turn", "text": t}) + "\n" for t in ("explain", "continue"))
    p = cox(["run", "--script", str(s), "--input-format", "stream-json", "--output-format", "stream-json"],
            tmp_path, env_extra={"COX_SCRIPTED_DUMP": str(dump)}, input=turns)
    out = lines(p.stdout)
    first = out[:next(i for i, o in enumerate(out) if o["type"] == "result") + 1]
    notes = [o for o in first if o["type"] == "notice"]
    assert len(notes) == 1 and notes[0]["level"] == "warning" and "max_tokens" in notes[0]["message"]
    done = next(o for o in first if o["type"] == "turn_done")
    assert done["stop"] == "max_tokens" and done["reason"] == notes[0]["message"]
    res = first[-1]
    assert res["is_error"] is True and res["terminal_reason"] == "max_tokens"
    assert res["partial_result"] == "The first half of the ans"
    # the next turn runs, and the model sees what it had said before the cut
    results = [o for o in out if o["type"] == "result"]
    assert results[-1]["subtype"] == "success" and results[-1]["result"] == "swer, continued."
    second = json.loads(dump.read_text())[1]["messages"]
    assert second[1] == {"role": "assistant", "content": [{"type": "text", "text": "The first half of the ans"}]}


def test_headless_text_prints_the_cut_answer_on_stdout_and_the_note_once_on_stderr(tmp_path: Path):
    p = cox(["run", "--script", str(script(tmp_path, [CUT])), "-p", "explain"], tmp_path)
    assert p.returncode == 1
    assert p.stdout == "The first half of the ans\n"
    notes = [x for x in p.stderr.splitlines() if "max_tokens" in x]
    assert len(notes) == 1 and notes[0].startswith("cox: warning: the reply was cut off"), p.stderr
