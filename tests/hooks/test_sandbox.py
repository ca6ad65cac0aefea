"""Hooks run under the sandbox a bash call gets (unless the user config says ``[hooks] sandbox =
false``), with the environment a bash call gets (no secret-looking variables)."""

from __future__ import annotations

import os
import shutil

import pytest

from .rig import Rig, bash, one

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


@needs_bwrap
def test_a_sandboxed_hook_cannot_write_outside_the_workspace(rig: Rig) -> None:
    (rig.ws / ".git" / "hooks").mkdir(parents=True)
    escape = rig.script("escape.sh", f"touch {rig.home}/escaped; touch {rig.ws}/.git/hooks/pre-commit; "
                                     f"touch {rig.ws}/inside; exit 0")
    rig.hooks({"PreToolUse": one(escape, "Bash")})
    rig.run([bash("true"), {"text": "ok"}])
    assert (rig.ws / "inside").exists()
    assert not (rig.home / "escaped").exists() and not (rig.ws / ".git" / "hooks" / "pre-commit").exists()


def test_sandbox_false_runs_hooks_unconfined(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one(rig.script("out.sh", f"touch {rig.home}/escaped"), "Bash")}, extra="sandbox = false")
    rig.run([bash("true"), {"text": "ok"}])
    assert (rig.home / "escaped").exists()


def test_hooks_do_not_get_secrets_from_the_environment(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-do-not-leak-123")
    rig.hooks({"PreToolUse": one(rig.script("env.sh", f"env > {rig.out}/env.txt"), "Bash")})
    rig.run([bash("true"), {"text": "ok"}])
    seen = (rig.out / "env.txt").read_text()
    assert "sk-do-not-leak-123" not in seen and f"CLAUDE_PROJECT_DIR={rig.ws}" in seen
    assert os.environ["MY_SERVICE_API_KEY"]  # it was there to leak
