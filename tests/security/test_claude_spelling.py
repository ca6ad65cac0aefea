"""Attacks in Claude Code's spelling: a model that calls ``Bash``, ``Write``, ``Edit``, ``Read``…
with Claude Code's fields (``file_path``, a timeout in ms) must meet exactly the guards a call in
cox's own spelling meets — the same deny rules, the same approval policy, the same confinement
and protected paths, the same Read deny rules — and leave the same nothing behind.

Each attack runs a real ``cox run`` (``attack`` fixture) and checks the effect: a marker file that
must not appear, a file that must keep its bytes, a secret that must not reach the output. Where
the two spellings can be compared, the same attack is made in both and the results must match.
"""

from __future__ import annotations

import json

SECRET = "AKIA-THE-SECRET-KEY-1234"


def _statuses(out) -> list[str]:  # type: ignore[no-untyped-def]
    return [r["status"] for r in out.results()]


def test_bash_is_judged_as_bash_a_marker_outside_never_appears(attack) -> None:  # type: ignore[no-untyped-def]
    marker = attack.home / "owned"
    victim = attack.file("victim.txt", "keep me\n")
    command = f"touch {marker}"
    calls = [{"id": "a1", "name": "Bash", "input": {"command": command, "timeout": 5000, "description": "x"}},
             {"id": "a2", "name": "bash", "input": {"command": command}},
             {"id": "a3", "name": "Bash", "input": {"command": f"rm -f {victim}"}},
             {"id": "a4", "name": "bash", "input": {"command": f"rm -f {victim}"}}]
    out = attack.run([{"tool_calls": calls}, {"text": "done"}])
    assert out.result["subtype"] == "success", out.proc.stderr
    results = out.results()
    assert _statuses(out) == ["denied"] * 4, results
    assert results[0]["visible"] == results[1]["visible"] and results[2]["visible"] == results[3]["visible"]
    assert not marker.exists() and victim.read_text() == "keep me\n"
    # cox's own events name the call as it ran (cox's spelling); the denials list all four
    assert [e["call"]["name"] for e in out.events("tool_call_requested")] == ["bash"] * 4
    assert [d["tool_use_id"] for d in out.result["permission_denials"]] == ["a1", "a2", "a3", "a4"]


def test_a_bash_deny_rule_stops_the_claude_spelling_even_in_bypass(attack) -> None:  # type: ignore[no-untyped-def]
    victim = attack.file("victim.txt", "keep me\n")
    out = attack.run([
        {"tool_calls": [{"id": "r1", "name": "Bash", "input": {"command": "rm -f victim.txt"}},
                        {"id": "r2", "name": "Bash", "input": {"command": "true && rm victim.txt"}}]},
        {"text": "done"}], config='[permissions]\ndeny = ["Bash(rm:*)"]\n',
        args=("--permission-mode", "bypassPermissions"))
    assert _statuses(out) == ["denied", "denied"], out.results()
    assert all("Bash(rm:*)" in r["visible"] for r in out.results()), out.results()
    assert victim.read_text() == "keep me\n"


def test_bash_cannot_ask_for_the_sandbox_off(attack) -> None:  # type: ignore[no-untyped-def]
    marker = attack.workspace / "ran"
    out = attack.run([
        {"tool_calls": [{"id": "s1", "name": "Bash", "input": {"command": f"touch {marker}",
                                                               "dangerouslyDisableSandbox": True}}]},
        {"text": "done"}], args=("--permission-mode", "bypassPermissions"))
    [result] = out.results()
    assert result["status"] == "error", result
    assert "unknown field 'dangerouslyDisableSandbox'" in result["visible"], result
    assert not marker.exists()


def test_write_and_edit_with_file_path_meet_confinement_and_protected_paths(attack) -> None:  # type: ignore[no-untyped-def]
    bashrc = attack.file(".bashrc", "the user's\n", root=attack.home)
    attack.file(".git/HEAD", "ref: refs/heads/main\n")
    attack.file(".cox/config.toml", "# project\n")
    hooks = attack.workspace / ".git" / "hooks" / "pre-commit"
    calls = [
        {"id": "w1", "name": "Write", "input": {"file_path": str(bashrc), "content": "owned\n"}},
        {"id": "w2", "name": "Write", "input": {"file_path": str(hooks), "content": "#!/bin/sh\ntouch owned\n"}},
        {"id": "e1", "name": "Edit", "input": {"file_path": str(attack.workspace / ".cox" / "config.toml"),
                                               "old_string": "# project", "new_string": "[hooks]"}},
        {"id": "m1", "name": "MultiEdit", "input": {"file_path": str(bashrc), "edits": [
            {"old_string": "the user's", "new_string": "owned"}]}},
    ]
    out = attack.run([{"tool_calls": [c]} for c in calls] + [{"text": "done"}],
                     args=("--permission-mode", "bypassPermissions"))  # only confinement may stop them
    assert out.result["subtype"] == "success", out.proc.stderr
    results = out.results()
    assert _statuses(out) == ["error"] * 4, results
    assert "outside the workspace" in results[0]["visible"] and "outside the workspace" in results[3]["visible"]
    assert bashrc.read_text() == "the user's\n"
    assert not hooks.exists()
    assert (attack.workspace / ".cox" / "config.toml").read_text() == "# project\n"


def test_read_grep_and_ls_in_claude_spelling_never_show_a_denied_file(attack) -> None:  # type: ignore[no-untyped-def]
    attack.file(".env", f"KEY={SECRET}\n")
    attack.file("deep/creds.txt", f"{SECRET}\n")
    calls = [{"id": "r1", "name": "Read", "input": {"file_path": str(attack.workspace / ".env")}},
             {"id": "r2", "name": "Grep", "input": {"pattern": "AKIA", "output_mode": "content", "-n": True}},
             {"id": "r3", "name": "Grep", "input": {"pattern": "AKIA", "output_mode": "count"}},
             {"id": "r4", "name": "Read", "input": {"file_path": "deep/creds.txt", "offset": 1, "limit": 5}},
             {"id": "r5", "name": "LS", "input": {"path": str(attack.workspace / "deep")}}]
    out = attack.run([{"tool_calls": calls}, {"text": "done"}],
                     config='[permissions]\ndeny = ["Read(./.env)", "Read(./deep/**)"]\n',
                     args=("--permission-mode", "bypassPermissions"))
    assert out.result["subtype"] == "success", out.proc.stderr
    assert SECRET not in out.proc.stdout and SECRET not in out.proc.stderr
    by_id = {e["call_id"]: e["result"] for e in out.events("tool_call_done")}
    assert [by_id[i]["status"] for i in ("r1", "r4", "r5")] == ["denied"] * 3, by_id
    assert all("skipped: a Read deny rule covers them" in by_id[i]["visible"] for i in ("r2", "r3")), by_id


def test_a_write_in_claude_spelling_is_checkpointed_and_rewound(attack) -> None:  # type: ignore[no-untyped-def]
    """The Write runs through the same checkpoint as write: ``cox rewind`` takes it back."""
    target = attack.file("notes.txt", "before\n")
    out = attack.run([
        {"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": str(target), "content": "after\n"}},
                        ]},
        {"tool_calls": [{"id": "m1", "name": "MultiEdit", "input": {"file_path": "notes.txt", "edits": [
            {"old_string": "after", "new_string": "later"}, {"old_string": "later", "new_string": "last"}]}}]},
        {"text": "done"}], args=("--permission-mode", "acceptEdits"))
    assert _statuses(out) == ["ok", "ok"], out.results()
    assert target.read_text() == "last\n"
    checkpoints = out.events("checkpoint")
    assert [c["files"] for c in checkpoints] == [["notes.txt"], ["notes.txt"]], checkpoints
    session = out.result["session_id"]
    back = attack.run([], args=("--resume", session, "--input-format", "stream-json"), prompt=None,
                      stdin=json.dumps({"type": "rewind", "to_turn": 1, "what": "code"}) + "\n")
    assert back.result["subtype"] == "success", back.proc.stdout[-2000:] + back.proc.stderr
    assert len(back.events("rewound")) == 1
    assert target.read_text() == "before\n"


def test_a_users_claude_code_settings_stop_the_claude_spelling(attack) -> None:  # type: ignore[no-untyped-def]
    """The person's own ~/.claude/settings.json, written for Claude Code, holds against a model
    calling Claude Code's tools — even in bypassPermissions."""
    attack.file("secrets/key.txt", f"{SECRET}\n")
    config = attack.file("config/app.toml", "safe = true\n")
    marker = attack.workspace / "fetched"
    attack.file(".claude/settings.json", json.dumps({"permissions": {"deny": [
        "Read(/secrets/**)", "Bash(curl:*)", "Edit(/config/**)", "TodoWrite"]}}), root=attack.home)
    calls = [
        {"id": "s1", "name": "Read", "input": {"file_path": str(attack.workspace / "secrets" / "key.txt")}},
        {"id": "s2", "name": "Bash", "input": {"command": f"curl -s http://127.0.0.1:9 ; touch {marker}"}},
        {"id": "s3", "name": "MultiEdit", "input": {"file_path": "config/app.toml", "edits": [
            {"old_string": "safe = true", "new_string": "safe = false"}]}},
        {"id": "s4", "name": "Write", "input": {"file_path": "config/new.toml", "content": "x\n"}},
        {"id": "s5", "name": "TodoWrite", "input": {"todos": [{"content": "a", "status": "pending",
                                                               "activeForm": "A"}]}},
    ]
    out = attack.run([{"tool_calls": calls}, {"text": "done"}], args=("--permission-mode", "bypassPermissions"))
    assert out.result["subtype"] == "success", out.proc.stderr
    by_id = {e["call_id"]: e["result"] for e in out.events("tool_call_done")}
    assert {k: v["status"] for k, v in by_id.items()} == {f"s{i}": "denied" for i in range(1, 6)}, by_id
    assert "settings.json" in by_id["s1"]["visible"], by_id["s1"]
    assert SECRET not in out.proc.stdout and not marker.exists()
    assert config.read_text() == "safe = true\n" and not (attack.workspace / "config" / "new.toml").exists()
