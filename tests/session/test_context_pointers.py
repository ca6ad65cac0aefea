"""Every tool result has an archive id (small ones inline in cox.db), so microcompaction sends an
old small result as a pointer too, and ``cox expand`` gives back exactly what the tool printed —
for bash, the command's bytes without cox's ``[exit code N]`` footer. Driven through a real
``cox run`` with the scripted model, its requests dumped (``COX_SCRIPTED_DUMP``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.surfaces.test_headless import cox, lines, script


def bash(cid: str, command: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": "bash", "input": {"command": command}}]}


def session(tmp_path: Path, ws: Path, replies: list[dict[str, Any]], prompts: list[str],
            after_turns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The events of a stream-json run of ``prompts`` and the requests the model received."""
    home = Path(os.environ["COX_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[context]\nmicrocompact_after_turns = {after_turns}\n")
    dump = tmp_path / "requests.json"
    turns = "".join(json.dumps({"type": "user_turn", "text": t}) + "\n" for t in prompts)
    p = cox(["run", "--script", str(script(tmp_path, replies)), "--input-format", "stream-json",
             "--output-format", "stream-json", "--permission-mode", "bypassPermissions"], ws,
            env_extra={"COX_SCRIPTED_DUMP": str(dump)}, input=turns)
    assert p.returncode == 0, p.stderr
    return lines(p.stdout), json.loads(dump.read_text())


def sent(request: dict[str, Any], call_id: str) -> str:
    for msg in request["messages"]:
        for b in msg["content"]:
            if b.get("type") == "tool_result" and b["tool_use_id"] == call_id:
                return str(b["content"])
    raise AssertionError(f"{call_id} missing")


def expand(ws: Path, tmp_path: Path, archive_id: str, *extra: str) -> bytes:
    """``cox expand ID > file``: the bytes as a file receives them."""
    target = tmp_path / f"expanded-{archive_id}"
    with open(target, "wb") as f:
        p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "expand", archive_id, *extra],
                           cwd=ws, stdout=f, stderr=subprocess.PIPE, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return target.read_bytes()


def test_an_old_small_result_is_sent_as_a_pointer_and_expands_to_its_bytes(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("".join(f"note {i}: keep the parser small\n" for i in range(12)))  # ~400 B
    replies = [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "notes.txt"}}]},
               bash("b1", "printf 'one\\ntwo\\n\\n'; printf 'x%.0s' $(seq 300)"), bash("b2", "true"),
               {"text": "read them"}, {"text": "t2"}, {"text": "t3"}]
    events, requests = session(tmp_path, ws, replies, ["read notes", "next", "again"], after_turns=2)
    done = {e["call_id"]: e["result"] for e in events if e["type"] == "tool_call_done"}
    assert all(r.get("archive_id") for r in done.values())  # small results have an id too
    # turn 1 and turn 2: still whole; turn 3 (two turns later): pointers
    assert sent(requests[3], "r1") == done["r1"]["visible"] and sent(requests[4], "r1") == done["r1"]["visible"]
    last = requests[-1]
    for cid in ("r1", "b1"):
        pointer = sent(last, cid)
        assert pointer.startswith("[earlier result of ") and f"expand #{done[cid]['archive_id']}" in pointer
        assert len(pointer) < len(done[cid]["visible"])
    assert "note 11" not in sent(last, "r1") and "note 0: keep the parser small" in sent(last, "r1")  # its summary
    assert sent(last, "b2") == "[exit code 0]"  # shorter than any pointer: its own summary
    # each pointer's id gives the result back
    assert expand(ws, tmp_path, done["r1"]["archive_id"]).decode() == done["r1"]["visible"]
    assert expand(ws, tmp_path, done["b1"]["archive_id"]) == b"one\ntwo\n\n" + b"x" * 300
    assert expand(ws, tmp_path, done["b2"]["archive_id"]) == b""  # printed nothing: no footer either
    assert done["b1"]["visible"].endswith("\n[exit code 0]")  # the model still sees the footer


def test_a_capped_bash_output_expands_to_exactly_what_the_command_printed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    replies = [bash("s1", "seq 1 6000"), bash("s2", "seq 1 3; seq 4 5 >&2; exit 3"), {"text": "done"}]
    events, _ = session(tmp_path, ws, replies, ["count"], after_turns=6)
    done = {e["call_id"]: e["result"] for e in events if e["type"] == "tool_call_done"}
    want = subprocess.run(["seq", "1", "6000"], capture_output=True, check=True).stdout
    big = done["s1"]
    assert "archived; expand #" in big["visible"] and big["visible"].endswith("\n[exit code 0]")
    assert expand(ws, tmp_path, big["archive_id"]) == want  # > 16 KiB: a file under archive/
    assert expand(ws, tmp_path, big["archive_id"], "--lines", "41-42") == b"41\n42\n"
    # the capped view names the hidden lines by the archive's own numbering: shown + hidden = all
    shown = big["visible"].splitlines()
    pointer = next(x for x in shown if "archived; expand #" in x)
    a, b = (int(n) for n in pointer.rsplit(" lines ", 1)[1].rstrip("]").split("–"))
    numbers = [int(x) for x in shown if x.isdigit()]
    assert sorted(numbers + list(range(a, b + 1))) == list(range(1, 6001))
    assert expand(ws, tmp_path, big["archive_id"], "--lines", f"{a}-{b}") == b"".join(
        f"{i}\n".encode() for i in range(a, b + 1))
    err = done["s2"]
    assert err["visible"] == "1\n2\n3\n[stderr]\n4\n5\n[exit code 3]"
    assert expand(ws, tmp_path, err["archive_id"]) == b"1\n2\n3\n[stderr]\n4\n5\n"


def test_after_a_resume_an_old_small_result_is_still_sent_as_a_pointer(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("".join(f"note {i}: keep the parser small\n" for i in range(12)))
    events, _ = session(tmp_path, ws, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "notes.txt"}}]},
                                       {"text": "read"}], ["read notes"], after_turns=1)
    sid = next(e["session_id"] for e in events if e["type"] == "result")
    archive_id = next(e["result"]["archive_id"] for e in events if e["type"] == "tool_call_done")
    dump = tmp_path / "resumed.json"
    p = cox(["run", "--script", str(script(tmp_path, [{"text": "again"}])), "--resume", sid, "-p", "next"], ws,
            env_extra={"COX_SCRIPTED_DUMP": str(dump)})
    assert p.returncode == 0, p.stderr
    pointer = sent(json.loads(dump.read_text())[0], "r1")
    assert pointer.startswith("[earlier result of read") and f"expand #{archive_id}" in pointer
    assert b"note 11: keep the parser small" in expand(ws, tmp_path, archive_id)
