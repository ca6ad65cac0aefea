"""A Claude Code ``settings.json`` with hooks copied from its documentation works as it is."""

from __future__ import annotations

import json

from .rig import Rig

# Claude Code's documentation, "File protection" (hooks guide), verbatim.
FILE_PROTECTION = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Edit|MultiEdit|Write",
                "hooks": [
                    {
                        "type": "command",
                        "command": "python3 -c \"import json, sys; data=json.load(sys.stdin); path=data.get('tool_input',{}).get('file_path',''); sys.exit(2 if any(p in path for p in ['.env', 'package-lock.json', '.git/']) else 0)\""
                    }
                ]
            }
        ]
    }
}

# Claude Code's documentation, "Log shell commands" (hooks quickstart), verbatim.
BASH_LOG = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": "jq -r '\"\\(.tool_input.command) - \\(.tool_input.description // \"No description\")\"' >> ~/.claude/bash-command-log.txt"
                    }
                ]
            }
        ]
    }
}


def _write(path: str, content: str, call_id: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "write", "input": {"path": path, "content": content}}]}


def test_the_file_protection_example_blocks_env_writes(rig: Rig) -> None:
    rig.claude_settings(FILE_PROTECTION)
    run = rig.run([_write(".env", "SECRET=1\n", "w1"), _write("package-lock.json", "{}\n", "w2"),
                   _write("ok.txt", "fine\n", "w3"), {"text": "ok"}])
    assert not (rig.ws / ".env").exists() and not (rig.ws / "package-lock.json").exists()
    assert (rig.ws / "ok.txt").read_text() == "fine\n"
    results = [d["result"] for d in run.of("tool_call_done")]
    assert [r["status"] for r in results] == ["denied", "denied", "ok"]
    assert all("denied by a PreToolUse hook" in r["visible"] for r in results[:2])


def test_the_bash_log_example_logs_each_command(rig: Rig) -> None:
    # It writes to ~/.claude, outside the workspace: the person lets hooks out of the sandbox.
    rig.claude_settings(BASH_LOG)
    (rig.cox_home / "config.toml").write_text("[hooks]\nsandbox = false\n")
    (rig.home / ".claude").mkdir()
    script = [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "echo hi"}}]}, {"text": "ok"}]
    rig.run(script)
    assert (rig.home / ".claude" / "bash-command-log.txt").read_text() == "echo hi - No description\n"
    assert json.loads(json.dumps(BASH_LOG))  # the file as the docs give it, nothing cox-specific in it


def _blocking(marker: str) -> dict:
    return {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": f"touch {marker}; echo no reading >&2; exit 2"}]}]}}


READ = [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "ok"}]


def test_setting_sources_choose_whose_hooks_run(rig: Rig) -> None:
    """``--setting-sources`` leaves out the Claude Code files it does not name, their hooks too;
    ``--settings`` hooks are the user's own and run whatever the sources are."""
    rig.claude_settings(_blocking(f"{rig.out}/user-hook"))
    run = rig.run(READ)
    assert (rig.out / "user-hook").exists() and run.of("tool_call_done")[0]["result"]["status"] == "denied"
    (rig.out / "user-hook").unlink()
    run = rig.run(READ, "go", "--setting-sources", "project,local")
    assert not (rig.out / "user-hook").exists(), "a hook of a settings file --setting-sources left out ran"
    assert run.of("tool_call_done")[0]["result"]["status"] == "ok"
    run = rig.run(READ, "go", "--setting-sources", "", "--settings", json.dumps(_blocking(f"{rig.out}/flag-hook")))
    assert (rig.out / "flag-hook").exists() and not (rig.out / "user-hook").exists()
    assert "no reading" in run.of("tool_call_done")[0]["result"]["visible"]
