"""``cox run`` as a real process: output formats, the final result line, exit codes, stdin
submissions, signals and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("headless")


def cox(args: list[str], cwd: Path, env_extra: dict[str, str] | None = None, input: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=timeout)


def script(tmp_path: Path, replies: list[dict]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"model": "scripted", "replies": replies}))
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "a.txt").write_text("alpha\n")
    return d


def lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def test_stream_json_starts_with_session_started_and_ends_with_one_result(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                          {"text": "It says alpha."}])
    p = cox(["run", "--script", str(s), "-p", "read a", "--output-format", "stream-json"], ws)
    assert p.returncode == 0, p.stderr
    out = lines(p.stdout)
    assert out[0]["type"] == "session_started" and out[0]["cwd"] == str(ws)
    assert {"apply_patch", "bash", "read", "write"} <= set(out[0]["tools"])
    assert [o["type"] for o in out].count("result") == 1 and out[-1]["type"] == "result"
    res = out[-1]
    assert res["subtype"] == "success" and res["is_error"] is False and res["result"] == "It says alpha."
    assert res["num_turns"] == 2 and res["terminal_reason"] == "end_turn"
    for key in ("session_id", "duration_ms", "duration_api_ms", "total_cost_usd", "usage", "permission_denials"):
        assert key in res
    assert p.stderr == ""


def test_text_and_json_formats(tmp_path, ws):
    s = script(tmp_path, [{"text": "Hi there."}])
    p = cox(["run", "--script", str(s), "-p", "hi"], ws)
    assert (p.returncode, p.stdout) == (0, "Hi there.\n")
    s = script(tmp_path, [{"text": "Hi there."}])
    p = cox(["run", "--script", str(s), "-p", "hi", "--output-format", "json"], ws)
    assert [o["type"] for o in lines(p.stdout)] == ["result"]


def test_prompt_from_stdin(tmp_path, ws):
    s = script(tmp_path, [{"text": "got it"}])
    p = cox(["run", "--script", str(s), "-p", "-", "--output-format", "stream-json"], ws, input="from stdin\n")
    msgs = [o for o in lines(p.stdout) if o["type"] == "user_message"]
    assert msgs[0]["text"] == "from stdin\n"


def test_denied_call_exits_2_with_the_reason_in_the_result(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "rm -rf a.txt"}}]},
                          {"text": "Could not delete."}])
    p = cox(["run", "--script", str(s), "-p", "delete a", "--output-format", "stream-json"], ws)
    assert p.returncode == 2
    done = [o for o in lines(p.stdout) if o["type"] == "tool_call_done"][0]
    assert done["result"]["status"] == "denied" and "denied" in done["result"]["visible"]
    assert (ws / "a.txt").exists()
    res = lines(p.stdout)[-1]
    assert res["permission_denials"][0]["tool_use_id"] == "b1"


def test_provider_error_exits_1(tmp_path, ws):
    s = script(tmp_path, [{"error": {"message": "upstream 500", "status": 500}}])
    p = cox(["run", "--script", str(s), "-p", "x", "--output-format", "json"], ws)
    assert p.returncode == 1
    res = lines(p.stdout)[-1]
    assert res["subtype"] == "error_during_execution" and res["is_error"] and "upstream 500" in res["result"]


def test_max_turns_exits_1_with_its_subtype(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"name": "read", "input": {"path": "a.txt"}}]}] * 4)
    p = cox(["run", "--script", str(s), "-p", "x", "--max-turns", "2", "--output-format", "json"], ws)
    assert p.returncode == 1 and lines(p.stdout)[-1]["subtype"] == "error_max_turns"


def test_budget_exits_3(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}],
                           "usage": {"input_tokens": 100000, "output_tokens": 1000}},
                          {"text": "never"}])
    p = cox(["run", "--script", str(s), "-p", "x", "--model", "claude-sonnet-4-5", "--output-format", "json"], ws,
            env_extra={"COX_BUDGET_SESSION_USD": "0.01"})
    assert p.returncode == 3, p.stderr
    res = lines(p.stdout)[-1]
    assert res["subtype"] == "error_max_budget_usd" and res["total_cost_usd"] > 0.01
    assert "budget" in res["result"] and res["num_turns"] == 1  # stopped before the second request
    # The usage ledger has the request, and cox stats reads it back.
    p = cox(["stats", "--json"], ws)
    today = json.loads(p.stdout)
    assert today["models"][0]["model"] == "claude-sonnet-4-5" and today["total_usd"] > 0.01
    p = cox(["stats", "--month"], ws)
    assert "claude-sonnet-4-5" in p.stdout and "total this month" in p.stdout
    p = cox(["stats", "--cache"], ws)
    assert "claude-sonnet-4-5" in p.stdout
    # A monthly cap counts what earlier sessions spent.
    s = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}],
                           "usage": {"input_tokens": 1000, "output_tokens": 10}}, {"text": "never"}])
    p = cox(["run", "--script", str(s), "-p", "x", "--model", "claude-sonnet-4-5", "--output-format", "json"], ws,
            env_extra={"COX_BUDGET_MONTHLY_USD": "0.3"})
    assert p.returncode == 3 and "monthly budget" in lines(p.stdout)[-1]["result"]


def test_stdin_submissions_answer_approvals(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "n.txt", "content": "n"}}]},
                          {"text": "written"}])
    proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(s), "--approve",
                             "on-request", "--input-format", "stream-json", "--output-format", "stream-json"],
                            cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps({"type": "user_turn", "text": "write n"}) + "\n")
    proc.stdin.write("this is not json\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if json.loads(line)["type"] == "approval_required":
            proc.stdin.write(json.dumps({"type": "approve", "call_id": "w1", "decision": "allow"}) + "\n")
            proc.stdin.flush()
            break
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert (ws / "n.txt").read_text() == "n"
    assert "stdin line 2" in err and "not JSON" in err
    assert lines(out)[-1]["type"] == "result"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_interrupts_writes_the_result_and_exits_4(tmp_path, ws, sig, cox_home):
    s = script(tmp_path, [{"events": [{"text": "thinking hard"}, {"stall": True}]}, {"text": "resumed fine"}])
    proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(s), "-p", "x",
                             "--output-format", "stream-json"], cwd=ws, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        event = json.loads(proc.stdout.readline())
        seen.append(event)
        if event["type"] == "text_delta":
            proc.send_signal(sig)
            break
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 4, err
    events = seen + lines(out)
    assert events[-1]["type"] == "result" and events[-1]["terminal_reason"] == "interrupted"
    assert [e["stop"] for e in events if e["type"] == "turn_done"] == ["interrupted"]
    sid = events[0]["session_id"]
    rollout = (cox_home / "sessions" / f"{sid}.jsonl").read_text().splitlines()
    assert json.loads(rollout[-1])["type"] == "turn_done"
    # the session is resumable: the next run sees the partial answer in its history
    s2 = script(tmp_path, [{"text": "resumed fine"}])
    p = cox(["run", "--script", str(s2), "--resume", sid, "-p", "go on", "--output-format", "stream-json"], ws)
    assert p.returncode == 0, p.stderr
    out2 = lines(p.stdout)
    assert out2[0]["session_id"] == sid and out2[0]["resumed"] is True
    assert [e["turn"] for e in out2 if e["type"] == "turn_started"] == [2]


def test_resume_rebuilds_history_and_skips_a_torn_line(tmp_path, ws, cox_home):
    s = script(tmp_path, [{"text": "first answer"}])
    p = cox(["run", "--script", str(s), "-p", "remember 42", "--output-format", "json"], ws)
    sid = lines(p.stdout)[-1]["session_id"]
    rollout = cox_home / "sessions" / f"{sid}.jsonl"
    with open(rollout, "a") as f:
        f.write('{"type": "text_delta", "te')
    dump = tmp_path / "requests.json"
    s2 = script(tmp_path, [{"text": "you said 42"}])
    p = cox(["run", "--script", str(s2), "--resume", sid, "-p", "what number?", "--output-format",
             "stream-json"], ws, env_extra={"COX_SCRIPTED_DUMP": str(dump)})
    assert p.returncode == 0, p.stderr
    notices = [o["message"] for o in lines(p.stdout) if o["type"] == "notice"]
    assert any("cut short" in n for n in notices)
    history = json.loads(dump.read_text())[0]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[0]["content"][0]["text"] == "remember 42"
    assert history[1]["content"][0]["text"] == "first answer"


def test_sessions_lists_and_greps(tmp_path, ws):
    s = script(tmp_path, [{"text": "the walrus sings"}])
    cox(["run", "--script", str(s), "-p", "tell me about the walrus"], ws)
    p = cox(["sessions"], ws)
    assert "tell me about the walrus" in p.stdout
    p = cox(["sessions", "--grep", "WALRUS SINGS"], ws)
    assert "the walrus sings" in p.stdout
    p = cox(["sessions", "--grep", "nonexistent-zebra"], ws)
    assert "no matching sessions" in p.stdout


def test_missing_key_and_bad_script_are_one_line_errors(tmp_path, ws):
    p = cox(["run", "-p", "x"], ws)
    assert p.returncode == 1 and "ANTHROPIC_API_KEY" in p.stderr and "Traceback" not in p.stderr
    p = cox(["run", "-p", "x", "--model", "gpt-5"], ws)
    assert p.returncode == 1 and "OPENAI_API_KEY" in p.stderr and "Traceback" not in p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    p = cox(["run", "--script", str(bad), "-p", "x"], ws)
    assert p.returncode == 1 and "not JSON" in p.stderr and "Traceback" not in p.stderr


def test_bad_project_config_is_a_clear_error(tmp_path, ws):
    (ws / ".cox").mkdir()
    (ws / ".cox" / "config.toml").write_text("[core]\nmodle = 'x'\n")
    s = script(tmp_path, [{"text": "x"}])
    p = cox(["run", "--script", str(s), "-p", "x"], ws)
    # a config error is an error (1): 2 means a call was denied
    assert p.returncode == 1 and "modle" in p.stderr and "config.toml" in p.stderr and "Traceback" not in p.stderr


def test_demo_runs_offline_and_says_where_the_rollout_is(tmp_path, cox_home):
    p = cox(["demo"], tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "rollout:" in out
    path = Path(out.split("rollout:")[1].split()[0])
    events = [json.loads(x) for x in path.read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "session_started" and kinds[-1] == "turn_done"
    done = {e["call_id"]: e["result"]["status"] for e in events if e["type"] == "tool_call_done"}
    assert done == {"toolu_demo_01": "ok", "toolu_demo_02": "ok", "toolu_demo_03": "ok",
                    "toolu_demo_04": "denied", "toolu_demo_05": "ok"}
    assert "hello, demo!" in out or "hello, demo!" in path.read_text()


def test_apply_patch_command_and_the_bash_reroute(tmp_path, ws):
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+omega\n*** End Patch\n"
    p = cox(["apply-patch"], ws, input=patch)
    assert p.returncode == 0 and "M a.txt" in p.stdout and (ws / "a.txt").read_text() == "omega\n"
    p = cox(["apply-patch"], ws, input=patch)  # no longer applies: refused whole
    assert p.returncode == 1 and "cox: apply-patch:" in p.stderr
    # A model that sends apply_patch through bash gets the tool (and its checkpoint), not a shell.
    shell = "apply_patch <<'EOF'\n" + patch.replace("-alpha\n+omega", "-omega\n+delta") + "EOF"
    s = script(tmp_path, [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": shell}}]},
                          {"text": "patched"}])
    p = cox(["run", "--script", str(s), "-p", "patch", "--permission-mode", "bypassPermissions",
             "--output-format", "stream-json"], ws)
    assert p.returncode == 0, p.stderr
    done = [o for o in lines(p.stdout) if o["type"] == "tool_call_done"][0]
    assert "run as the apply_patch tool" in done["result"]["visible"]
    assert (ws / "a.txt").read_text() == "delta\n"
    assert any(o["type"] == "checkpoint" and o["files"] == ["a.txt"] for o in lines(p.stdout))


def test_expand_prints_the_whole_archived_output_or_a_slice(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "seq 1 30000"}}]},
                          {"text": "counted"}])
    p = cox(["run", "--script", str(s), "-p", "count", "--permission-mode", "bypassPermissions",
             "--output-format", "stream-json"], ws)
    done = [o for o in lines(p.stdout) if o["type"] == "tool_call_done"][0]["result"]
    archive_id = done["archive_id"]
    assert f"expand #{archive_id}" in done["visible"] and "15000" not in done["visible"]
    whole = cox(["expand", archive_id], ws)
    assert whole.returncode == 0 and whole.stdout.splitlines()[:2] == ["1", "2"] and "30000" in whole.stdout
    part = cox(["expand", f"#{archive_id}", "--lines", "14999-15001"], ws)
    assert part.stdout.splitlines() == ["14999", "15000", "15001"]
    missing = cox(["expand", "NOPE"], ws)
    assert missing.returncode == 1 and "no archived output" in missing.stderr


def test_architect_from_config_alone_is_refused_headless(tmp_path, ws):
    s = script(tmp_path, [{"text": "ok"}])
    p = cox(["run", "--script", str(s), "-p", "x"], ws, env_extra={"COX_CORE_MODE": "architect"})
    # the consent is missing from the command line: a usage error
    assert p.returncode == 64 and "--mode architect" in p.stderr and "Traceback" not in p.stderr
    s = script(tmp_path, [{"text": "ok"}])
    p = cox(["run", "--script", str(s), "-p", "x", "--mode", "architect", "--output-format", "stream-json"], ws,
            env_extra={"COX_CORE_MODE": "architect"})
    assert p.returncode == 0, p.stderr
    assert lines(p.stdout)[0]["permission_mode"] == "plan"
    s = script(tmp_path, [{"text": "ok"}])
    p = cox(["run", "--script", str(s), "-p", "x", "--deep"], ws)
    assert p.returncode == 0


def test_a_closed_question_is_a_stream_json_line_and_a_transcript_line():
    # cox run declares no elicitation, so it never asks; whatever speaks the protocol still gets
    # the close as one line of stream-json, and the transcript format says it in words.
    import io

    from cox.protocol import messages as m
    from cox.surfaces.headless import Printer

    asked = m.Question(question_id="q1", prompt="(1/1) Name", source="mcp:gh")
    closed = m.QuestionClosed(question_id="q1", reason="withdrawn")
    out, err = io.StringIO(), io.StringIO()
    printer = Printer("stream-json", out, err)
    for event in (asked, closed):
        printer.event(event, m.encode(event))
    assert lines(out.getvalue())[-1] == {"type": "question_closed", "question_id": "q1", "reason": "withdrawn"}
    out = io.StringIO()
    printer = Printer("transcript", out, err)
    for event in (asked, closed):
        printer.event(event, m.encode(event))
    assert out.getvalue() == "  [question] mcp:gh withdrew its question\n" and not err.getvalue()


def test_a_slash_user_turn_on_stdin_is_expanded_as_p_expands_it(tmp_path, ws):
    """cox's own stream-json stdin: a ``user_turn`` that is ``/name args`` becomes the command's
    expansion (with its front matter's model), as ``-p "/name args"`` does; one that names an
    unknown skill or command goes as typed; the -p prompt is not expanded twice."""
    (ws / ".cox" / "commands").mkdir(parents=True)
    (ws / ".cox" / "commands" / "review.md").write_text("Review $1 with care.")
    dump = tmp_path / "dump.json"
    s = script(tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    stdin = "".join(json.dumps({"type": "user_turn", "text": t}) + "\n" for t in ("/review b.txt", "/nothing here"))
    p = cox(["run", "--script", str(s), "-p", "/review a.txt", "--input-format", "stream-json",
             "--output-format", "stream-json"], ws, {"COX_SCRIPTED_DUMP": str(dump)}, input=stdin)
    assert p.returncode == 0, p.stderr
    assert [x["result"] for x in lines(p.stdout) if x["type"] == "result"] == ["one", "two", "three"]
    sent = [r["messages"][-1]["content"] for r in json.loads(dump.read_text())]
    sent = [c if isinstance(c, str) else "".join(b.get("text", "") for b in c) for c in sent]
    assert sent == ["Review a.txt with care.", "Review b.txt with care.", "/nothing here"]
