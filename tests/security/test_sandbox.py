"""Attacks on the sandbox as the boundary: a command the guards let through must still not write
outside the workspace, plant code in .git or .cox, read a masked secret, see a key in its
environment, regain capabilities, outlive its call or leave files in the host's /tmp. Without
bubblewrap nothing runs unless sandbox.mode is explicitly danger-full-access.

Each attack runs as root and as the unprivileged test user, with and without bubblewrap on PATH
(``attack`` fixture). Without bubblewrap the command must not run at all (fail closed), so the
same marker checks hold there for the other reason; where the meaning differs, the test says so.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import time

import pytest

from tests.tools.test_bash_sandbox import alive
from tests.waits import BOUND_S

FAIL_CLOSED = "install bubblewrap"


def bash(command: str, cid: str = "b1") -> dict:
    return {"id": cid, "name": "bash", "input": {"command": command}}


def turn(*calls: dict) -> list[dict]:
    return [{"tool_calls": list(calls)}, {"text": "done"}]


def visible(out) -> str:
    return "\n".join(str(r.get("visible", r)) if isinstance(r, dict) else str(r) for r in out.results())


def policy_risk(line: str) -> str:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "policy", "check", "--", line],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["risk"]


def assert_fail_closed_or_ran(attack, out) -> None:
    """Without bubblewrap every bash call must have failed with the sentence."""
    if attack.sandbox == "nobwrap":
        text = visible(out)
        assert FAIL_CLOSED in text and 'danger-full-access' in text, text


# --------------------------------------------------------------------- read-only-rated writers

READ_ONLY_WRITERS = [
    "sort --out=marker /dev/null",  # GNU getopt abbreviation of --output
    "git ls-remote --upload-pack='touch marker' .",  # an option that runs a program
    "sort --out=/tmp/cox-ro-marker /dev/null",
]


@pytest.mark.parametrize("line", READ_ONLY_WRITERS)
def test_a_line_rated_read_only_cannot_write(attack, line):
    """If the classifier still rates the line read-only (``cox policy check``), it runs unasked
    in the default mode — and the read-only file system is what stops the write. If the
    classifier has learnt better, the line is asked about and --approve never denies it."""
    attack.file(".git/config", "[core]\n")
    rated = policy_risk(line)
    out = attack.run(turn(bash(line.replace("/tmp/cox-ro-marker", "/tmp/cox-ro-marker-" + attack.base.name))))
    assert out.result["subtype"] == "success", out.proc.stderr
    assert not (attack.workspace / "marker").exists()
    assert not os.path.exists("/tmp/cox-ro-marker-" + attack.base.name)
    if rated == "read_only":
        assert_fail_closed_or_ran(attack, out)


# --------------------------------------------------------------------- planting code

def test_an_allowed_writing_command_cannot_plant_code_in_git_or_cox(attack):
    attack.file(".git/config", "[core]\n")
    attack.file(".git/hooks/README", "")
    attack.file("config.toml", "# mine\n", root=attack.cox_home)
    attack.file("evil/config", "[core]\n\tfsmonitor = touch PWNED\n")
    attack.file("evil/hook", "touch PWNED\n")
    attack.file("ok.src", "ok\n")
    box = attack.cox_home
    script = ("sh -c 'cp ok.src ok.txt; cat evil/config >> .git/config; cp evil/hook .git/hooks/pre-commit;"
              " mkdir -p .git/info; cp evil/hook .git/info/attributes; mkdir -p .cox; cp evil/config .cox/config.toml;"
              f" cp evil/config {box}/config.toml; mv .git .gone; mkdir .git; cp evil/config .git/config;"
              " mkdir -p evil/objects; echo ../evil > .git/commondir'")
    # the same writes as plain commands an allow rule covers (acceptEdits runs them unasked)
    plain = (f"cp ok.src ok.txt; cp evil/config .git/config; cp evil/hook .git/hooks/pre-commit; mkdir -p .git/info;"
             f" cp evil/hook .git/info/attributes; mkdir -p .cox; cp evil/config .cox/config.toml;"
             f" cp evil/config {box}/config.toml")
    runs = ((("--permission-mode", "bypassPermissions"), script, None),
            (("--permission-mode", "acceptEdits"), plain, '[permissions]\nallow = ["Bash(cp:*)", "Bash(mkdir:*)"]\n'))
    for args, line, config in runs:
        out = attack.run(turn(bash(line)), args=args, config=config)
        assert out.result["subtype"] == "success", out.proc.stderr
        ws = attack.workspace
        assert (ws / ".git" / "config").read_text() == "[core]\n"
        assert not (ws / ".git" / "hooks" / "pre-commit").exists()
        assert not (ws / ".git" / "info" / "attributes").exists()
        assert not (ws / ".cox" / "config.toml").exists()
        assert "fsmonitor" not in (box / "config.toml").read_text()
        assert not (ws / ".gone").exists() and not (ws / ".git" / "commondir").exists()
        if attack.sandbox == "bwrap":
            assert (ws / "ok.txt").read_text() == "ok\n", "the command ran: the workspace itself is writable"
            (ws / "ok.txt").unlink()
        assert_fail_closed_or_ran(attack, out)


# --------------------------------------------------------------------- secrets

def test_an_allowed_command_reads_no_masked_secret(attack):
    home = attack.workspace / "h"  # a home the sandbox can see (under /tmp it would be hidden anyway)
    secret = "ssh-secret-" + secrets.token_hex(6)
    attack.file("h/.ssh/id_rsa", secret + "\n")
    attack.file("h/.aws/credentials", secret + "\n")
    attack.file("notes.txt", "ordinary\n")
    os.symlink(home / ".ssh", attack.workspace / "innocent")
    line = ("sh -c 'cat ~/.ssh/id_rsa; cat innocent/id_rsa; cat /proc/self/cwd/h/.ssh/id_rsa; cat \"$PWD\"/h/.aws/*;"
            " grep -r ssh-secret . ; cat notes.txt'")
    out = attack.run(turn(bash(line)), args=("--permission-mode", "bypassPermissions"), env={"HOME": str(home)})
    assert out.result["subtype"] == "success", out.proc.stderr
    assert secret not in out.proc.stdout and secret not in out.proc.stderr
    if attack.sandbox == "bwrap":
        assert "ordinary" in visible(out), "the command ran"
    assert_fail_closed_or_ran(attack, out)
    assert (home / ".ssh" / "id_rsa").read_text() == secret + "\n", "masked, not deleted"


def test_the_environment_of_a_command_carries_no_key(attack):
    value = "plainkeyvalue" + secrets.token_hex(6)
    out = attack.run(turn(bash("sh -c 'env; echo END'")), args=("--permission-mode", "bypassPermissions"),
                     env={"ANTHROPIC_API_KEY": value + "a", "OPENAI_API_KEY": value + "o",
                          "SOME_SERVICE_API_KEY": value + "s", "DEPLOY_TOKEN": value + "t"})
    assert out.result["subtype"] == "success", out.proc.stderr
    assert value not in out.proc.stdout
    if attack.sandbox == "bwrap":
        assert "END" in visible(out) and "PATH=" in visible(out)
    assert_fail_closed_or_ran(attack, out)


# --------------------------------------------------------------------- capabilities

@pytest.mark.only_root
@pytest.mark.only_bwrap
def test_root_cannot_remount_the_file_system_writable(attack):
    target = f"/usr/local/cox-remount-{attack.base.name}"
    line = f"sh -c 'mount -o remount,rw / && echo REMOUNTED; touch {target}; grep CapEff /proc/self/status'"
    out = attack.run(turn(bash(line)), args=("--permission-mode", "bypassPermissions"))
    assert out.result["subtype"] == "success", out.proc.stderr
    text = visible(out)
    assert "REMOUNTED" not in text and not os.path.exists(target)
    assert "CapEff:\t0000000000000000" in text


# --------------------------------------------------------------------- leftovers

def _alive(needle: bytes) -> bool:
    return bool(alive(needle))


@pytest.mark.parametrize("sandbox_mode", ["workspace-write", "danger-full-access"])
def test_a_setsid_child_is_gone_after_the_call(attack, sandbox_mode):
    if sandbox_mode == "danger-full-access" and attack.sandbox == "bwrap":
        pytest.skip("danger-full-access is tried where it matters: without bubblewrap")
    tag = f"{secrets.randbelow(10**6) + 10**6}.5"
    config = f'[sandbox]\nmode = "{sandbox_mode}"\n'
    calls = [bash(f"sh -c 'setsid sleep {tag} & (setsid sleep {tag} &) ; echo started'", "b1")]
    if sandbox_mode == "danger-full-access":  # unconfined, the next call can look at the host's processes
        calls.append(bash(f"sh -c 'pgrep -c -f \"^sleep {tag}\" || true'", "b2"))
    replies = [{"tool_calls": [c]} for c in calls] + [{"text": "done"}]
    out = attack.run(replies, args=("--permission-mode", "bypassPermissions"), config=config)
    assert out.result["subtype"] == "success", out.proc.stderr
    results = out.results()
    if sandbox_mode == "danger-full-access":
        assert "started" in str(results[0])
        assert str(results[1].get("visible", results[1])).startswith("0"), results[1]
    deadline = time.monotonic() + BOUND_S
    while _alive(f"sleep\0{tag}".encode()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(f"sleep\0{tag}".encode())
    if sandbox_mode == "workspace-write":
        assert_fail_closed_or_ran(attack, out)


# --------------------------------------------------------------------- /tmp

def test_tmp_writes_land_in_the_session_tmp_not_the_hosts(attack):
    name = f"cox-tmp-probe-{attack.base.name}"
    out = attack.run(turn(bash(f"sh -c 'echo x > /tmp/{name}; ls /tmp/{name}'")),
                     args=("--permission-mode", "bypassPermissions"))
    assert out.result["subtype"] == "success", out.proc.stderr
    assert not os.path.exists(f"/tmp/{name}")
    assert glob.glob(f"/tmp/cox-tmp-*/{name}") == [], "the session's tmp is removed with the session"
    if attack.sandbox == "bwrap":
        assert f"/tmp/{name}" in visible(out), "the write worked inside the sandbox"
    assert_fail_closed_or_ran(attack, out)


# --------------------------------------------------------------------- fail closed

@pytest.mark.only_nobwrap
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "bypassPermissions"])
def test_without_bubblewrap_no_mode_runs_a_command(attack, mode):
    # default and plan: a line rated read-only runs unasked there, so it is the one that reaches
    # the sandbox; acceptEdits: an allow rule; bypass: anything.
    line = "sort --out=marker /dev/null" if mode in ("default", "plan") else "touch marker"
    config = '[permissions]\nallow = ["Bash(touch:*)"]\n'
    out = attack.run(turn(bash(line)), args=("--permission-mode", mode), config=config)
    assert out.result["subtype"] == "success", out.proc.stderr
    assert not (attack.workspace / "marker").exists()
    text = visible(out)
    if policy_risk(line) == "read_only" or mode not in ("default", "plan"):
        assert FAIL_CLOSED in text and 'sandbox.mode = "danger-full-access"' in text, text


@pytest.mark.only_nobwrap
def test_without_bubblewrap_only_an_explicit_danger_full_access_runs_bare(attack):
    config = '[sandbox]\nmode = "danger-full-access"\n'
    out = attack.run(turn(bash("touch marker")), args=("--permission-mode", "bypassPermissions"), config=config)
    assert out.result["subtype"] == "success", out.proc.stderr
    assert (attack.workspace / "marker").exists()


@pytest.mark.only_nobwrap
def test_without_bubblewrap_a_stdio_mcp_server_is_not_started(attack):
    marker = attack.workspace / "mcp-marker"
    config = f'[mcp.servers.evil]\ncommand = "sh"\nargs = ["-c", "touch {marker}; sleep 30"]\n'
    out = attack.run(turn(), config=config)
    assert out.result["subtype"] == "success", out.proc.stderr
    assert not marker.exists()
    status = {s["name"]: s["status"] for s in out.events("session_started")[0]["mcp_servers"]}
    assert "no working sandbox" in status["evil"] and FAIL_CLOSED in status["evil"], status
