"""A repository's hooks (``.claude/settings.json``, ``.claude/settings.local.json``,
``.cox/config.toml``) run only after ``cox hooks trust``; until then a warning names the file, and
a hook changed since it was trusted waits again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .rig import Rig, bash, toml_hooks

FILES = [".claude/settings.json", ".claude/settings.local.json", ".cox/config.toml"]


def _plant(rig: Rig, name: str, command: str) -> Path:
    hooks = {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]}
    path = rig.ws / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(toml_hooks(hooks) if name.endswith(".toml") else json.dumps({"hooks": hooks}))
    return path


@pytest.mark.parametrize("name", FILES)
def test_an_untrusted_project_hook_does_not_run(rig: Rig, name: str) -> None:
    path = _plant(rig, name, f"touch {rig.ws}/hook-ran")
    run = rig.run([bash("true"), {"text": "ok"}])
    assert run.result["subtype"] == "success"
    assert not (rig.ws / "hook-ran").exists()
    assert f"{path} names hooks that are not trusted" in run.proc.stderr
    listing = rig.cox("hooks", "list")
    assert "not trusted" in listing.stdout and f"touch {rig.ws}/hook-ran" in listing.stdout


def test_trust_then_run_then_a_change_waits_again(rig: Rig) -> None:
    path = _plant(rig, ".claude/settings.json", f"touch {rig.ws}/hook-ran")
    refused = rig.cox("hooks", "trust")  # no terminal, no --yes: nothing is trusted
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    assert not (rig.cox_home / "hooks-trust.json").exists()
    shown = rig.cox("hooks", "trust", "--yes")
    assert shown.returncode == 0 and f"touch {rig.ws}/hook-ran" in shown.stdout
    run = rig.run([bash("true"), {"text": "ok"}])
    assert (rig.ws / "hook-ran").exists() and "not trusted" not in run.proc.stderr
    (rig.ws / "hook-ran").unlink()
    _plant(rig, ".claude/settings.json", f"touch {rig.ws}/hook-ran; touch {rig.ws}/worse")
    run = rig.run([bash("true"), {"text": "ok"}])
    assert not (rig.ws / "hook-ran").exists() and not (rig.ws / "worse").exists()
    assert f"{path} names hooks that are not trusted" in run.proc.stderr


def test_trust_shows_escapes_instead_of_playing_them(rig: Rig) -> None:
    _plant(rig, ".claude/settings.json", "echo \x1b]0;owned\x07 \x1b[2J")
    shown = rig.cox("hooks", "trust", "--yes")
    assert "\x1b" not in shown.stdout and "\\x1b" in shown.stdout


def test_user_hooks_need_no_trust(rig: Rig) -> None:
    rig.claude_settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"touch {rig.ws}/user-hook-ran"}]}]}})
    rig.run([bash("true"), {"text": "ok"}])
    assert (rig.ws / "user-hook-ran").exists()


def test_a_changed_repository_script_waits_for_trust_again(rig: Rig) -> None:
    # The command line stays the same; the script it runs is the repository's and changes on a pull.
    script = rig.ws / ".claude" / "hooks" / "check.sh"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!/bin/bash\ntouch {rig.ws}/hook-ran\n")
    script.chmod(0o755)
    path = _plant(rig, ".claude/settings.json", '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh')
    shown = rig.cox("hooks", "trust", "--yes")
    assert f"script (its content is part of what you trust): {script}" in shown.stdout
    rig.run([bash("true"), {"text": "ok"}])
    assert (rig.ws / "hook-ran").exists()
    (rig.ws / "hook-ran").unlink()
    script.write_text(f"#!/bin/bash\ntouch {rig.ws}/hook-ran {rig.ws}/worse\n")
    run = rig.run([bash("true"), {"text": "ok"}])
    assert not (rig.ws / "hook-ran").exists() and not (rig.ws / "worse").exists()
    assert f"{path} names hooks that are not trusted" in run.proc.stderr
