"""A broken, slow or garbage-printing hook is a warning and an absence, never a crashed turn: the
call it guards runs as if the hook were not there, and the person is told which hook and why."""

from __future__ import annotations

import json
import secrets
import time

import pytest

from tests.procs import pids_with

from .rig import Rig, bash, one

BROKEN = {
    "exit 1": ("echo 'Traceback: boom' >&2\nexit 1", "failed (exit 1: Traceback: boom)"),
    "killed": ("kill -SEGV $$", "failed (exit "),  # -11, or 139 through bubblewrap
    "not found": ("/no/such/program --check", "failed (exit 127"),
    "binary garbage": ("head -c 4096 /dev/urandom\nexit 0", "not text"),
    "bad json": ("echo '{\"decision\": \"block\", oops'", "not a JSON object"),
    "json list": ("echo '{}' | jq -c '[.]' | sed 's/^/{/'", "not a JSON object"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_pre_tool_use_hook_is_a_warning_and_the_call_runs(rig: Rig, kind: str) -> None:
    body, warning = BROKEN[kind]
    rig.hooks({"PreToolUse": one(rig.script("broken.sh", body), "Bash")})
    run = rig.run([bash("touch marker"), {"text": "fine"}])
    assert run.result["subtype"] == "success" and (rig.ws / "marker").exists()
    assert any("PreToolUse hook" in w and warning in w for w in run.warnings()), run.warnings()


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PostToolUse", "Stop", "SessionStart"])
def test_garbage_from_other_events_is_ignored(rig: Rig, event: str) -> None:
    rig.hooks({event: one(rig.script("garbage.sh", "head -c 2048 /dev/urandom"))})
    run = rig.run([bash("touch marker"), {"text": "fine"}])
    assert run.result["subtype"] == "success" and (rig.ws / "marker").exists()
    assert any("not text" in w for w in run.warnings())


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_hook_that_hangs_is_stopped_at_its_timeout(rig: Rig, sandbox: bool) -> None:
    tag = f"hookchild-{secrets.token_hex(6)}"  # its own: another suite may run this test beside it
    hang = rig.script("hang.sh", f"(exec -a {tag} sleep 300) &\nsleep 300")
    rig.hooks({"PreToolUse": one(hang, "Bash", timeout=1)}, extra="" if sandbox else "sandbox = false")
    started = time.monotonic()
    run = rig.run([bash("touch marker"), {"text": "fine"}])
    assert time.monotonic() - started < 60  # far below the hook's 300 s: only its timeout ended it
    assert run.result["subtype"] == "success" and (rig.ws / "marker").exists()
    assert any("did not finish within 1 s" in w for w in run.warnings())
    assert pids_with(tag, at_start=True) == []  # what it started in the background went with it


def test_a_hook_that_prints_without_end_is_drained(rig: Rig) -> None:
    rig.hooks({"PostToolUse": one(rig.script("flood.sh", "yes 'flood flood flood' | head -c 50000000"))})
    run = rig.run([bash("touch marker"), {"text": "fine"}])
    assert run.result["subtype"] == "success" and (rig.ws / "marker").exists()
    assert "flood" not in run.request_text(-1)  # plain stdout after a tool call is not context


def test_a_malformed_hooks_table_is_a_warning_not_a_refusal(rig: Rig) -> None:
    (rig.cox_home / "config.toml").write_text(
        '[hooks]\nPreToolUse = [{ matcher = "Bash" }]\nPostToolUze = []\n'
        '[[hooks.Stop]]\nhooks = [{ type = "prompt", prompt = "are you done?" }]\n')
    p = rig.cox("hooks", "list")
    assert p.returncode == 0
    assert "hooks.PreToolUse[0] has no list of hooks" in p.stderr and "PostToolUze is not a hook event" in p.stderr
    assert "'prompt' hook; cox runs only command hooks" in p.stderr
    run = rig.run([{"text": "fine"}])
    assert run.result["subtype"] == "success"


def test_an_interrupt_stops_a_running_hook(rig: Rig) -> None:
    from .rig import start

    rig.hooks({"PreToolUse": one(rig.script("slow.sh", f"touch {rig.out}/started\nsleep 300"), "Bash",
                                 timeout=600)})
    live = start(rig, [bash("touch marker"), {"text": "never"}], "--permission-mode", "bypassPermissions")
    started = time.monotonic()
    live.send({"type": "user_turn", "text": "go"})
    live.until("tool_call_requested")
    live.send({"type": "interrupt"})
    done = live.until("turn_done")
    live.finish(code=4)  # an interrupted run's exit code
    assert time.monotonic() - started < 60  # the hook's own limit is 600 s
    assert done["stop"] == "interrupted" and not (rig.ws / "marker").exists()


def test_an_invalid_updated_input_is_the_calls_error_not_the_turns(rig: Rig) -> None:
    answer = '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": 42}}}'
    rig.hooks({"PreToolUse": one(rig.script("bad.sh", f"echo '{answer}'"), "Bash")})
    run = rig.run([bash("touch marker"), {"text": "fine"}])
    assert run.result["subtype"] == "success" and not (rig.ws / "marker").exists()
    result = run.of("tool_call_done")[0]["result"]
    assert result["status"] == "error" and "'command' must be a non-empty string" in result["visible"]


def test_every_broken_hooks_file_is_reported_when_the_run_starts(rig: Rig) -> None:
    """Parsing hooks, their trust, the session's hook object and Claude's settings reader load only
    once there is a file to read (a run with none loads none of them): each problem is still said
    at start-up."""
    rig.claude_settings({"hooks": {"PreToolUse": [{"matcher": "Bash"}]}})  # a hooks object of the wrong shape
    (rig.ws / ".claude").mkdir()
    (rig.ws / ".claude" / "settings.json").write_text('{"hooks": ')  # not JSON
    (rig.ws / ".claude" / "settings.local.json").write_text(json.dumps({"hooks": {"Stop": one("true")}}))
    run = rig.run([{"text": "fine"}])
    assert run.result["subtype"] == "success"
    err = run.proc.stderr
    assert f"{rig.claude_dir / 'settings.json'}: hooks.PreToolUse[0] has no list of hooks" in err, err
    assert f"{rig.ws / '.claude' / 'settings.json'}: not valid JSON" in err, err  # the hooks' reader
    assert f"{rig.ws / '.claude' / 'settings.json'}:1:11: not valid JSON" in err, err  # the permissions' reader
    assert f"{rig.ws / '.claude' / 'settings.local.json'} names hooks that are not trusted" in err, err
