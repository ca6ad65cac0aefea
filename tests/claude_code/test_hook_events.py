"""``--include-hook-events`` (issue 15): each command hook's run is a ``system/hook_started`` and a
``hook_response`` frame in Claude Code's stream, which the real SDK's parser reads as
``HookEventMessage``; without the flag there are none. A secret a hook prints is scrubbed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hooks.rig import Rig, bash, one


@pytest.fixture
def rig(tmp_path: Path, cox_home: Path) -> Rig:
    return Rig(tmp_path, cox_home)


def frames(rig: Rig, *flags: str) -> list[dict[str, object]]:
    script = rig.tmp / "script.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [bash("echo hi"), {"text": "done"}]}))
    p = rig.cox("-p", "go", "--output-format", "stream-json", "--verbose", "--script", str(script),
                "--permission-mode", "bypassPermissions", *flags)
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.splitlines() if x.strip()]


def test_each_hook_run_is_a_started_and_a_response_frame_the_sdk_reads(rig: Rig) -> None:
    from claude_agent_sdk._internal.message_parser import parse_message
    from claude_agent_sdk.types import HookEventMessage

    hook = rig.script("pre.sh", "echo 'checked sk-ant-api03-" + "A" * 40 + "'; echo oops >&2; exit 0")
    failing = rig.script("post.sh", "exit 3")
    rig.hooks({"PreToolUse": one(hook, "Bash"), "PostToolUse": one(failing, "Bash")})
    got = [f for f in frames(rig, "--include-hook-events") if str(f.get("subtype", "")).startswith("hook_")]
    assert [(f["subtype"], f["hook_name"]) for f in got] == [
        ("hook_started", "PreToolUse:Bash"), ("hook_response", "PreToolUse:Bash"),
        ("hook_started", "PostToolUse:Bash"), ("hook_response", "PostToolUse:Bash")]
    assert got[0]["hook_id"] == got[1]["hook_id"] != got[2]["hook_id"]
    pre, post = got[1], got[3]
    assert pre["outcome"] == "success" and pre["exit_code"] == 0 and pre["stderr"].strip() == "oops"
    assert "checked" in pre["stdout"] and "sk-ant-api03-AAAA" not in json.dumps(got)
    assert post["outcome"] == "error" and post["exit_code"] == 3
    parsed = [parse_message(f) for f in got]
    assert all(isinstance(m, HookEventMessage) and m.hook_event_name in ("PreToolUse", "PostToolUse") for m in parsed)


def test_without_the_flag_no_hook_frames(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one(rig.script("pre.sh", "exit 0"), "Bash")})
    assert not [f for f in frames(rig) if str(f.get("subtype", "")).startswith("hook_")]


def test_cox_s_own_dialect_refuses_the_flag(rig: Rig) -> None:
    p = rig.cox("run", "-p", "go", "--include-hook-events", "--script", str(rig.tmp / "none.json"))
    assert p.returncode == 64 and "--include-hook-events adds Claude Code's hook frames" in p.stderr
