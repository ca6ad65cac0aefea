"""Attacks through the command line's configuration flags (``cox.surfaces.config_flags``):
a flag is the person's own, so it may add what it names — and nothing a repository brought.

1. ``--mcp-config`` cannot smuggle a project's untrusted server in: naming other servers, naming
   a server of the same name, or naming the repository's own ``.mcp.json`` as the file, the
   project's server is never started (its marker never appears).
2. ``--add-dir`` cannot make a protected place writable: ``.git`` (of the workspace or of the
   added checkout), ``.cox``, a git directory itself, cox's home, a link to any of them, ``/``;
   inside an added checkout the file tools and the sandbox keep its git metadata read-only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.security.conftest import Attack

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "testserver.py"


def starting(marker: Path) -> dict:
    """A stdio server entry that touches ``marker`` as it starts, then serves the test server."""
    return {"command": "sh", "args": ["-c", f'touch "{marker}"; exec "{sys.executable}" "{SERVER}"']}


def plain() -> dict:
    return {"command": sys.executable, "args": [str(SERVER)]}


ECHO_P = [{"tool_calls": [{"id": "m1", "name": "mcp__p__echo", "input": {"text": "reached"}}]}, {"text": "done"}]


def test_mcp_config_does_not_start_a_projects_untrusted_server(attack: Attack) -> None:
    marker = attack.workspace / "PROJECT-SERVER-RAN"
    attack.file(".mcp.json", json.dumps({"mcpServers": {"p": starting(marker)}}))
    # another server on the command line: the project's stays untrusted
    out = attack.run(ECHO_P, args=("--mcp-config", json.dumps({"mcpServers": {"mine": plain()}})))
    assert not marker.exists(), "--mcp-config let the project's untrusted server start"
    states = {s["name"]: s["status"] for s in out.events("session_started")[0]["mcp_servers"]}
    assert states["p"].startswith("failed: not trusted"), states
    assert out.results()[0]["status"] == "error"
    # the repository's own .mcp.json named as the flag's file: still the repository's, still untrusted
    for name in (".mcp.json", str(attack.workspace / ".mcp.json")):
        out = attack.run(ECHO_P, args=("--mcp-config", name, "--strict-mcp-config"))
        assert not marker.exists(), f"--mcp-config {name} started the project's untrusted server"
        assert out.results()[0]["status"] == "error"


def test_a_flag_server_of_the_same_name_replaces_the_projects_never_runs_it(attack: Attack) -> None:
    project_marker = attack.workspace / "PROJECT-SERVER-RAN"
    attack.file(".mcp.json", json.dumps({"mcpServers": {"p": starting(project_marker)}}))
    out = attack.run(ECHO_P, args=("--mcp-config", json.dumps({"mcpServers": {"p": plain()}}),
                                   "--permission-mode", "bypassPermissions"))
    assert not project_marker.exists(), "the project's command ran under the flag server's name"
    if attack.sandbox == "bwrap":  # the user's server runs in the session's sandbox: only where one works
        assert out.results()[0]["status"] == "ok" and "reached" in out.results()[0]["visible"], out.proc.stderr


# ------------------------------------------------------------------------------ --add-dir

def _checkout(attack: Attack, name: str) -> Path:
    """A second checkout outside the workspace, owned by the runner, with git metadata cox protects."""
    other = attack.base / name
    attack.file(".git/config", "[core]\n\tbare = false\n", root=other)
    attack.file(".git/HEAD", "ref: refs/heads/main\n", root=other)
    attack.file(".git/hooks/README", "hooks\n", root=other)
    attack.file(".cox/config.toml", "", root=other)
    attack.file("src.txt", "source\n", root=other)
    return other


def test_add_dir_keeps_git_metadata_and_cox_config_of_an_added_checkout_read_only(attack: Attack) -> None:
    other = _checkout(attack, "other")
    hook = other / ".git" / "hooks" / "post-checkout"
    replies = [{"tool_calls": [
        {"id": "w1", "name": "write", "input": {"path": str(hook), "content": "#!/bin/sh\ntouch /tmp/pwned\n"}},
        {"id": "w2", "name": "write", "input": {"path": str(other / ".git" / "config"), "content": "[core]\n"}},
        {"id": "w3", "name": "write", "input": {"path": str(other / ".cox" / "config.toml"), "content": "x=1\n"}},
        {"id": "w4", "name": "write", "input": {"path": str(other / "src.txt"), "content": "changed\n"}},
    ]}, {"tool_calls": [{"id": "b1", "name": "bash", "input": {
        "command": f"echo '[alias] x = !touch /tmp/pwned' >> {other}/.git/config; touch {hook}"}}]},
        {"text": "done"}]
    out = attack.run(replies, args=("--add-dir", str(other), "--permission-mode", "bypassPermissions"))
    by = {e["call_id"]: e["result"] for e in out.events("tool_call_done")}
    assert by["w4"]["status"] == "ok" and (other / "src.txt").read_text() == "changed\n", out.proc.stderr
    for cid in ("w1", "w2", "w3"):
        assert by[cid]["status"] == "error", (cid, by[cid])
    assert not hook.exists(), "a hook was planted in the added checkout"
    assert (other / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert (other / ".cox" / "config.toml").read_text() == ""


@pytest.mark.parametrize("where", [".git", ".git/hooks", "ws/.git", "ws/.cox", "bare.git", "cox-home", "link-git",
                                   "/"])
def test_add_dir_refuses_a_protected_place(attack: Attack, where: str) -> None:
    other = _checkout(attack, "other")
    (attack.workspace / ".git").mkdir(parents=True, exist_ok=True)
    (attack.workspace / ".cox").mkdir(parents=True, exist_ok=True)
    bare = attack.base / "bare.git"
    for sub in ("objects", "refs", "hooks"):
        (bare / sub).mkdir(parents=True, exist_ok=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    attack.cox_home.mkdir(parents=True, exist_ok=True)
    link = attack.base / "innocent"
    if not link.is_symlink():
        link.symlink_to(other / ".git")
    attack.own(attack.base)
    folder = {".git": other / ".git", ".git/hooks": other / ".git" / "hooks", "ws/.git": attack.workspace / ".git",
              "ws/.cox": attack.workspace / ".cox", "bare.git": bare, "cox-home": attack.cox_home,
              "link-git": link, "/": Path("/")}[where]
    marker = folder / "PLANTED" if where != "/" else attack.base / "PLANTED"
    replies = [{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": str(marker), "content": "x"}}]},
               {"text": "done"}]
    out = attack.run(replies, args=("--add-dir", str(folder), "--permission-mode", "bypassPermissions"))
    assert out.proc.returncode == 64, out.proc.stderr
    assert "--add-dir" in out.proc.stderr and "Traceback" not in out.proc.stderr
    assert not out.events("session_started") and not os.path.lexists(marker)
