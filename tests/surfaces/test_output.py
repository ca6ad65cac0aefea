"""What the surfaces print (issue 11, class 8): text for a terminal is scrubbed of secrets and
sanitised of escape sequences; JSON stays lossless; ``cox expand`` prints the exact bytes when
redirected and sanitised text on a terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cox.actors.tools.base import BaseTool, ToolEnv
from cox.actors.tools.registry import builtin_tools
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, Risk, StopReason, ToolCall, ToolResult
from cox.surfaces.headless import Printer, RunState
from tests.harness import run_session

from .test_plain import Pty

pytestmark = pytest.mark.xdist_group("headless")

SK = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil\x1b\\x\x1b]8;;\x1b\\\x1b[2J\x9b1m\u202eexe.txt"
ESCAPES = ["\x1b", "\x9b", "\u202e", "\x07"]


def clean(text: str) -> None:
    for esc in ESCAPES:
        assert esc not in text, f"{esc!r} in {text!r}"


def cox(args: list[str], cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env={**os.environ},
                          input=input, capture_output=True, text=True, timeout=60)


def test_headless_stderr_lines_are_scrubbed_and_sanitised() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer("text", out, err, verbose=True)
    call = ToolCall(id="c1", name=f"mcp__srv__{HOSTILE}", subject=f"curl -H 'Authorization: Bearer {'t' * 20}'")
    for event in (m.Notice(level="warning", message=f"server said {HOSTILE} {SK}"),
                  m.ErrorEvent(message=f"model request failed: bad key {SK}{HOSTILE}"),
                  m.ToolCallRequested(call=call)):
        printer.event(event, m.encode(event))
    text = err.getvalue()
    clean(text)
    assert SK not in text and "t" * 20 not in text
    assert "cox: warning: server said" in text and "cox: error: model request failed: bad key «redacted»" in text
    assert "● mcp__srv__" in text and "exe.txt" in text


def test_the_text_answer_is_sanitised_and_the_json_result_scrubbed_but_lossless() -> None:
    state = RunState("s1")
    for event in (m.TurnStarted(turn=1), m.TextDelta(text=f"done {HOSTILE} "), m.TextDelta(text=SK[:9]),
                  m.TextDelta(text=SK[9:]), m.TurnDone(turn=1, stop=StopReason.END_TURN)):
        state.observe(event)
    out = io.StringIO()
    Printer("text", out, io.StringIO()).result(state)
    clean(out.getvalue())
    assert out.getvalue() == "done x1mexe.txt «redacted»\n"  # a stray 8-bit CSI loses only itself
    out = io.StringIO()
    Printer("json", out, io.StringIO()).result(state)
    res = json.loads(out.getvalue())
    assert res["result"] == f"done {HOSTILE} «redacted»"  # JSON: escaped by the encoder, not removed

    failed = RunState("s2")
    failed.observe(m.ErrorEvent(message=f"model request failed: invalid key {SK}"))
    failed.observe(m.TurnDone(turn=1, stop=StopReason.ERROR, reason=f"invalid key {SK}"))
    res = failed.result()
    assert res["is_error"] and res["result"] == "model request failed: invalid key «redacted»"


def test_plain_shows_hostile_tool_names_reasons_and_notices_cleaned(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [
        {"text": f"look {HOSTILE}", "tool_calls": [{"id": "t1", "name": f"re{HOSTILE}ad", "input": {"path": "a"}}]},
        {"error": {"message": f"upstream said {HOSTILE} for {SK}", "status": 400}},
    ]}))
    p = cox(["--plain", "--script", str(script)], ws, input="go\n/quit\n")
    assert p.returncode == 0, p.stderr
    assert "turn 1: error (upstream said" in p.stdout and "exe.txt" in p.stdout
    assert "● re" in p.stdout and "unknown tool" in p.stdout
    clean(p.stdout)
    clean(p.stderr)
    assert SK not in p.stdout


def test_sessions_grep_lines_are_scrubbed_and_sanitised(tmp_path: Path) -> None:
    ws = tmp_path / "ws\x1b]0;title\x07\x1b[2J\u202e"  # a folder name is the attacker's too
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [{"text": "ok"}]}))
    p = cox(["run", "--script", str(script), "-p", f"needle {HOSTILE} {SK}"], ws)
    assert p.returncode == 0, p.stderr
    p = cox(["sessions", "--grep", "needle"], tmp_path)
    assert p.returncode == 0 and "needle" in p.stdout and "«redacted»" in p.stdout, p.stdout
    clean(p.stdout)
    assert SK not in p.stdout
    p = cox(["sessions", "--grep", "needle", "--json"], tmp_path)
    row = json.loads(p.stdout.splitlines()[0])
    assert row["cwd"] == str(ws) and SK not in p.stdout and "«redacted»" in row["matches"][0]


def put_archive(data: bytes) -> str:
    from cox.actors.store import archive, db
    from cox.actors.store.layout import Layout, cox_home

    layout = Layout(cox_home()).ensure()
    conn = db.connect(layout.db)
    try:
        return archive.put(conn, layout.archive, data)
    finally:
        conn.close()


RAW = b"\x1b]52;c;ZXZpbA==\x07one\n\xff\xfe two \x1b[2J\nthree" + "\u202e".encode()


@pytest.mark.parametrize("size", ["inline", "file"])
def test_expand_redirected_prints_the_exact_bytes(tmp_path: Path, cox_home: Path, size: str) -> None:
    data = RAW if size == "inline" else RAW + b"x" * 20_000 + b"\n\x1b[0m"
    archive_id = put_archive(data)
    whole = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "expand", archive_id], cwd=tmp_path,
                           capture_output=True, timeout=60)
    assert whole.returncode == 0 and whole.stdout == data  # lossless: no decoding, no added newline
    part = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "expand", f"#{archive_id}", "--lines", "2-3"],
                          cwd=tmp_path, capture_output=True, timeout=60)
    assert part.stdout == b"\xff\xfe two \x1b[2J\n" + data.split(b"\n")[2] + (b"\n" if size == "file" else b"")


def test_expand_on_a_terminal_is_sanitised(tmp_path: Path, cox_home: Path) -> None:
    archive_id = put_archive(RAW)
    pty = Pty([sys.executable, "-m", "cox.surfaces.cli", "expand", archive_id], tmp_path, {**os.environ})
    try:
        pty.wait("three")
        assert pty.proc.wait(30) == 0
    finally:
        pty.close()
    text = pty.text
    assert "one\n\ufffd\ufffd two \nthree" in text
    clean(text)


# ---------------------------------------------------------------- the session's lines (stream-json, rollout)


class ChunkyTool(BaseTool):
    """Streams its output in pieces cut through a key and a PEM block, as bash's ~10 chunks a
    second cut whatever a command prints."""

    name = "chunky"
    description = "prints in pieces"
    input_schema = {"type": "object", "properties": {}}
    PIECES = ["log: sk-ant-api03-AbCdEf", "GhIjKlMnOpQrStUvWx\n-----BEGIN RSA PRIV", "ATE KEY-----\nMIIEsecretbody\n",
              "-----END RSA PRIVATE KEY-----\nend\n"]

    def risk(self, call_input: dict) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        for piece in self.PIECES:
            env.output(piece)
        return ToolResult(visible="printed")


def test_secrets_split_across_deltas_and_output_chunks_never_reach_a_line(tmp_path: Path, cox_home: Path) -> None:
    tool = ChunkyTool()
    ws = tmp_path / "ws"
    ws.mkdir()
    steps = [{"text": "key: sk-ant-"}, {"text": "api03-AbCdEfGhIj"}, {"text": "KlMnOpQrStUv and -----BEGIN EC"},
             {"text": " PRIVATE KEY-----\nMHcCAQEEsecret"}]  # cut off by the tool call: no END
    call = {"tool_call": {"id": "c1", "name": "chunky", "input": {}}}
    run = run_session(ws, cox_home, [{"events": [*steps, call]}, {"text": "done"}], "go", tools={**builtin_tools(), "chunky": tool},
                      mode=PermissionMode.BYPASS)
    texts = [e.text for e in run.of("text_delta")]
    assert "".join(texts) == "".join(s["text"] for s in steps) + "done"  # every character once, in order
    outputs = [e.chunk for e in run.of("tool_call_output")]
    assert "".join(outputs) == "".join(ChunkyTool.PIECES)
    shown = [json.loads(line) for line in run.lines]
    text_out = "".join(d["text"] for d in shown if d["type"] == "text_delta")
    assert text_out == "key: «redacted» and «redacted»done"
    chunk_out = "".join(d["chunk"] for d in shown if d["type"] == "tool_call_output")
    assert chunk_out == "log: «redacted»\n«redacted»\nend\n"
    for secret in ("AbCdEfGhIj", "MHcCAQEEsecret", "MIIEsecretbody"):
        assert all(secret not in line for line in run.lines)


def test_listing_commands_on_a_terminal_are_sanitised(tmp_path: Path, cox_home: Path) -> None:
    # `cox mcp list` shows a server's name and command as a config file wrote them
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text('[mcp.servers."ev\\u001b]0;title\\u0007il"]\ncommand = "echo\\u001b[2J"\n')
    argv = [sys.executable, "-m", "cox.surfaces.cli", "mcp", "list"]
    pty = Pty(argv, tmp_path, {**os.environ})
    try:
        pty.wait("echo")
        assert pty.proc.wait(30) == 0
    finally:
        pty.close()
    # the name is shown with its control characters spelled out (cox mcp list escapes them, so
    # a person sees there is something odd in it), and nothing reaches the terminal raw
    assert "ev\\x1b]0;title\\x07il" in pty.text
    clean(pty.text)


def test_every_stderr_line_of_the_command_is_sanitised(tmp_path: Path, cox_home: Path) -> None:
    # an error line quoting what it was given (an id pasted from a tool's output)
    put_archive(b"x")
    p = cox(["expand", "01\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202eID"], tmp_path)
    assert p.returncode == 1 and "no archived output with id 01" in p.stderr and "ID" in p.stderr
    clean(p.stderr)
