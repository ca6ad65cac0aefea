"""``cox policy check`` and ``cox policy test`` (issue 3, items 7 and 8), through a throwaway
argparse parser the way the ``cox`` entry point registers them."""

from __future__ import annotations

import argparse
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from cox.surfaces import policy_cli

CONFIG = """\
[permissions]
allow = ["Bash(cargo test:*)", "Bash(git status:*)", "Bash(git diff:*)"]
ask   = ["Bash(git commit:*)"]
deny  = ["Read(~/.ssh/**)", "Bash(rm:*)"]
"""


def cox(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="cox")
    sub = parser.add_subparsers(dest="command")
    policy_cli.add_parser(sub)
    args = parser.parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = policy_cli.run(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def config(tmp_path: Path) -> str:
    p = tmp_path / "config.toml"
    p.write_text(CONFIG)
    return str(p)


def check(*argv: str) -> dict[str, object]:
    code, out, err = cox("policy", "check", *argv)
    assert code == 0, err
    assert out.count("\n") == 1
    result: dict[str, object] = json.loads(out)
    return result


def test_check_prints_decision_reason_rule_segments_opaque(config: str) -> None:
    r = check("--config", config, "--", "git status && rm -rf x")
    assert r["decision"] == "deny" and r["rule"] == "Bash(rm:*)"
    assert r["segments"] == ["git status", "rm -rf x"] and r["opaque"] is False
    assert "rm -rf x" in str(r["reason"]) and str(r["origin"]).endswith("config.toml:4")


def test_check_joins_words_after_dashdash(config: str) -> None:
    r = check("--config", config, "--", "git", "status", "&&", "git", "diff")
    assert r["decision"] == "allow" and r["subject"] == "git status && git diff"


def test_check_says_why_it_asks(config: str) -> None:
    r = check("--config", config, "--", "git status && npm test")
    assert r["decision"] == "ask" and "`npm test`" in str(r["reason"])


def test_check_opaque_line(config: str) -> None:
    r = check("--config", config, "--", "git log $(whoami)")
    assert r["decision"] == "ask" and r["opaque"] is True


def test_check_grant_and_mode(config: str) -> None:
    assert check("--config", config, "--grant", "npm test", "--", "git status && npm test")["decision"] == "allow"
    assert check("--config", config, "--mode", "plan", "--", "cargo test")["decision"] == "deny"
    assert check("--approval-policy", "never", "--", "make")["decision"] == "deny"


def test_check_other_tools(config: str, tmp_path: Path) -> None:
    home = str(tmp_path)
    r = check("--config", config, "--home", home, "--tool", "Read", "--", "~/.ssh/id_rsa")
    assert r["decision"] == "deny" and r["tool"] == "read"
    r = check("--tool", "Edit", "--root", str(tmp_path), "--", "src/a.py")
    assert r["decision"] == "ask" and r["risk"] == "write"
    r = check("--tool", "Edit", "--mode", "acceptEdits", "--", "src/a.py")
    assert r["decision"] == "allow"
    assert check("--tool", "mcp__gh__issue", "--", "mcp__gh__issue")["decision"] == "ask"


def test_check_todo_write_ls_and_task_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[permissions]\ndeny = ["TodoWrite", "LS(./private/**)", "Task(Explore)"]\n')
    r = check("--config", str(rules), "--tool", "TodoWrite", "--", "")
    assert r["decision"] == "deny" and r["tool"] == "todo_write" and r["rule"] == "TodoWrite"
    r = check("--config", str(rules), "--root", str(tmp_path), "--tool", "LS", "--", str(tmp_path / "private" / "x"))
    assert r["decision"] == "deny" and r["tool"] == "ls"
    assert check("--config", str(rules), "--tool", "Task", "--", "explore: look around")["decision"] == "deny"
    assert check("--config", str(rules), "--tool", "Task", "--", "general-purpose: look")["decision"] == "ask"


def test_check_without_config_uses_built_in_denies(tmp_path: Path) -> None:
    r = check("--home", str(tmp_path), "--tool", "Read", "--", f"{tmp_path}/.aws/credentials")
    assert r["decision"] == "deny"


def test_check_bad_rule_exits_2_naming_rule_and_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[permissions]\nallow = ["Bash(git:*)"]\ndeny = ["Bash(rm"]\n')
    code, out, err = cox("policy", "check", "--config", str(bad), "--", "ls")
    assert code == 2 and out == ""
    assert "Bash(rm" in err and f"{bad}:3" in err and err.startswith("cox: policy check:")


@pytest.mark.parametrize(("argv", "needle"), [
    (("--tool", "Nope", "--", "x"), "unknown tool"),
    (("--config", "/nonexistent/c.toml", "--", "x"), "cannot read"),
])
def test_check_bad_usage_exits_2(argv: tuple[str, ...], needle: str) -> None:
    code, _, err = cox("policy", "check", *argv)
    assert code == 2 and needle in err


def test_check_bad_toml_and_bad_mode(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text("[permissions\n")
    assert cox("policy", "check", "--config", str(p), "--", "ls")[0] == 2
    p.write_text('[permissions]\nmode = "yolo"\n')
    code, _, err = cox("policy", "check", "--config", str(p), "--", "ls")
    assert code == 2 and "yolo" in err
    p.write_text('[permissions]\nallow = "Bash"\n')
    assert cox("policy", "check", "--config", str(p), "--", "ls")[0] == 2


def test_argparse_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as e:
        cox("policy", "check", "--mode", "nope", "--", "ls")
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        cox("policy")


CASES = [
    {"id": "rm-denied", "config": {"allow": ["Bash(git:*)"], "deny": ["Bash(rm:*)"]},
     "command": "git status && rm -rf x", "expected": "deny"},
    {"config": {"allow": ["Bash(git:*)"]}, "command": "git status && git diff", "expected": "allow"},
    {"config": {"allow": ["Bash(git:*)"]}, "mode": "plan", "command": "git push", "expected": "deny"},
    {"config": {}, "command": "npm test", "grants": ["npm test"], "expected": "allow", "note": "ignored"},
    {"config": {"deny": ["Edit(secrets/**)"]}, "tool": "Edit", "subject": "secrets/k", "expected": "deny"},
]


def write_cases(tmp_path: Path, cases: Sequence[object], extra: str = "") -> str:
    p = tmp_path / "cases.jsonl"
    p.write_text("\n".join(json.dumps(c) for c in cases) + "\n" + extra)
    return str(p)


def test_policy_test_all_pass(tmp_path: Path) -> None:
    code, out, _ = cox("policy", "test", "--root", str(tmp_path), write_cases(tmp_path, CASES))
    assert code == 0
    assert out.splitlines()[-1] == "5 passed, 0 failed"


def test_policy_test_reports_failures(tmp_path: Path) -> None:
    cases = [*CASES, {"id": "wrong", "config": {"allow": ["Bash(git:*)"]}, "command": "git status; rm -rf x",
                      "expected": "allow"}]
    code, out, _ = cox("policy", "test", write_cases(tmp_path, cases, "\nnot json\n"))
    assert code == 1
    assert "FAIL wrong: git status; rm -rf x" in out
    assert "expected allow, got ask" in out and "rm -rf x" in out
    assert "FAIL line 8: bad case" in out
    assert out.splitlines()[-1] == "5 passed, 2 failed"


def test_policy_test_bad_rule_in_a_case_fails_that_case(tmp_path: Path) -> None:
    code, out, _ = cox("policy", "test", write_cases(tmp_path, [{"config": {"deny": ["Bash(rm"]}, "command": "ls",
                                                                 "expected": "allow"}]))
    assert code == 1 and "Bash(rm" in out and out.splitlines()[-1] == "0 passed, 1 failed"


def test_policy_test_uses_config_file_for_cases_without_config(tmp_path: Path, config: str) -> None:
    cases = [{"command": "cargo test", "expected": "allow"}, {"command": "git commit -m x", "expected": "ask"}]
    code, out, _ = cox("policy", "test", "--config", config, write_cases(tmp_path, cases))
    assert code == 0 and out.strip() == "2 passed, 0 failed"


def test_policy_test_missing_file_exits_2() -> None:
    code, _, err = cox("policy", "test", "/nonexistent/cases.jsonl")
    assert code == 2 and "cannot read" in err


def test_run_sets_func_for_dispatchers() -> None:
    parser = argparse.ArgumentParser(prog="cox")
    policy_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["policy", "check", "--", "ls"])
    assert args.func is policy_cli.run and args.command == "policy"


# --- policy check reads the session's layers -------------------------------------------------


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A person's home (with ~/.claude), COX_HOME and a workspace, as a session would see them."""
    home, ws, cox_home = tmp_path / "home", tmp_path / "ws", tmp_path / "cox-home"
    for d in (home / ".claude", ws / ".claude", ws / ".cox", cox_home):
        d.mkdir(parents=True, exist_ok=True)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("COX_HOME", str(cox_home))
    for name in [n for n in os.environ if n.startswith("COX_") and n != "COX_HOME"]:
        monkeypatch.delenv(name)
    return {"home": home, "ws": ws, "cox_home": cox_home}


def test_check_reads_claude_user_settings_and_names_the_file(machine: dict[str, Path]) -> None:
    settings = machine["home"] / ".claude" / "settings.json"
    settings.write_text('{\n  "permissions": {\n    "deny": [\n      "Read(./secret.txt)"\n    ]\n  }\n}\n')
    where = ("--cwd", str(machine["ws"]), "--home", str(machine["home"]))
    r = check(*where, "--", "cat secret.txt")
    assert r["rule"] == "Read(./secret.txt)" and r["origin"] == f"{settings}:4"
    assert r["decision"] == "ask" and str(settings) in r["files"]  # type: ignore[operator]
    r = check(*where, "--approval-policy", "never", "--", "cat secret.txt")
    assert r["decision"] == "deny" and r["origin"] == f"{settings}:4"
    r = check(*where, "--tool", "Read", "--", "secret.txt")
    assert r["decision"] == "deny" and r["origin"] == f"{settings}:4"


def test_check_reads_user_and_project_config_without_config_flag(machine: dict[str, Path]) -> None:
    (machine["cox_home"] / "config.toml").write_text('[permissions]\nallow = ["Bash(make:*)"]\nmode = "plan"\n')
    project = machine["ws"] / ".cox" / "config.toml"
    project.write_text('[permissions]\ndeny = ["Bash(make install:*)"]\n')
    where = ("--cwd", str(machine["ws"]), "--home", str(machine["home"]))
    r = check(*where, "--mode", "default", "--", "make test")
    assert r["decision"] == "allow" and str(r["origin"]).endswith("config.toml:2")
    r = check(*where, "--", "make install")
    assert r["decision"] == "deny" and r["origin"] == f"{project}:2"
    assert check(*where, "--", "make test")["decision"] == "deny"  # the config's plan mode


def test_check_ignores_a_projects_claude_allow_with_a_warning(machine: dict[str, Path]) -> None:
    shared = machine["ws"] / ".claude" / "settings.json"
    shared.write_text('{"permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(git push:*)"]}}')
    code, out, err = cox("policy", "check", "--cwd", str(machine["ws"]), "--home", str(machine["home"]),
                         "--approval-policy", "never", "--", "touch MARKER")
    r = json.loads(out)
    assert code == 0 and r["decision"] == "deny" and r["rule"] is None
    assert f"cox: warning: {shared}:1: ignored permissions.allow:" in err


def test_config_flag_is_one_more_layer_on_top(machine: dict[str, Path], config: str) -> None:
    settings = machine["home"] / ".claude" / "settings.json"
    settings.write_text('{"permissions": {"deny": ["Bash(cargo test --release:*)"]}}')
    where = ("--cwd", str(machine["ws"]), "--home", str(machine["home"]), "--config", config)
    assert check(*where, "--", "cargo test")["decision"] == "allow"
    r = check(*where, "--", "cargo test --release")
    assert r["decision"] == "deny" and r["origin"] == f"{settings}:1"


def test_check_and_a_session_decide_alike(machine: dict[str, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The same layers and the same engine: what `cox policy check` says is what `prepare` (the
    session's set-up) builds."""
    from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode
    from cox.surfaces.commands import prepare

    (machine["cox_home"] / "config.toml").write_text('[permissions]\nallow = ["Bash(git:*)"]\n')
    (machine["home"] / ".claude" / "settings.json").write_text(
        '{"permissions": {"deny": ["Bash(git push:*)", "Read(./secret.txt)"], "ask": ["Bash(git tag:*)"]}}')
    (machine["ws"] / ".claude" / "settings.local.json").write_text('{"permissions": {"deny": ["Bash(git rm:*)"]}}')
    script = tmp_path / "s.json"
    script.write_text('{"replies": []}')
    args = argparse.Namespace(cwd=str(machine["ws"]), script=str(script), model=None, permission_mode=None,
                              max_turns=None, approve=None, mode=None, deep=False, resume=None, continue_=False)
    monkeypatch.setenv("HOME", str(machine["home"]))  # the session reads ~/.claude/settings.json here
    session = prepare(args, approval_default="on-request").engine
    for line in ("git status", "git push origin", "git tag v1", "git rm x", "cat secret.txt", "rm -rf y"):
        r = check("--cwd", str(machine["ws"]), "--home", str(machine["home"]), "--", line)
        call = policy_cli._call("Bash", line, None)
        mine = session.decide(call, PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE)
        assert (mine.kind, mine.rule, mine.origin) == (r["decision"], r["rule"], r["origin"]), line


def test_policy_test_stays_hermetic(machine: dict[str, Path], config: str, tmp_path: Path) -> None:
    (machine["home"] / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Bash(cargo:*)"]}}')
    (machine["cox_home"] / "config.toml").write_text('[permissions]\ndeny = ["Bash(git:*)"]\n')
    cases = [{"command": "cargo test", "expected": "allow"}, {"command": "git status", "expected": "allow"}]
    code, out, _ = cox("policy", "test", "--cwd", str(machine["ws"]), "--home", str(machine["home"]),
                       "--config", config, write_cases(tmp_path, cases))
    assert code == 0 and out.strip() == "2 passed, 0 failed"
