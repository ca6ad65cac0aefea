"""The bash tool's sandbox with real bubblewrap: what a command can write, read, inherit and leave
running. Every test checks the effect on disk or in /proc, not only the argv."""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from pathlib import Path

import pytest

from cox.actors.tools import shell_env
from cox.actors.tools.base import ToolEnv, ToolServices
from cox.actors.tools.bash import BashTool
from cox.actors.tools.jobs import Jobs
from cox.actors.tools.shell_env import SessionTmp, sandbox_status
from cox.protocol.types import Risk, SandboxMode, ToolCall
from cox.supervisors import CancelScope
from tests.waits import BOUND_S

needs_sandbox = pytest.mark.skipif(not sandbox_status()[0], reason=f"no working sandbox here: {sandbox_status()[1]}")


@pytest.fixture
def box(tmp_path: Path):
    """A session-like set-up: a git workspace, a home inside it (so the home is visible in the
    sandbox and a mask has to hide it), a COX_HOME, the session's private tmp."""
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    home = ws / "h"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN KEY----- s3cr3t-ssh\n")
    cox_home = tmp_path / "coxhome"
    cox_home.mkdir()
    (cox_home / "config.toml").write_text("# mine\n")
    sid = f"t{secrets.token_hex(5)}"  # this test's own: other workers make session tmps at the same time
    tmp = SessionTmp(sid)
    yield {"ws": ws, "home": home, "cox_home": cox_home, "tmp": tmp, "sid": sid}
    tmp.remove()


def env_of(b, mode: SandboxMode = SandboxMode.WORKSPACE_WRITE, **services) -> ToolEnv:
    services = {"cox_home": b["cox_home"], **services}
    return ToolEnv(roots=[b["ws"]], cwd=b["ws"], cancel=CancelScope(), home=b["home"],
                   services=ToolServices(sandbox_mode=mode, jobs=Jobs(), session_tmp=b["tmp"], **services))


def jobs(env: ToolEnv) -> Jobs:
    assert env.services.jobs is not None
    return env.services.jobs


def run(env: ToolEnv, command: str, risk: Risk = Risk.EXEC, **kw):
    return BashTool().call(ToolCall(id="b", name="bash", input={"command": command, **kw}, risk=risk), env)


def alive(needle: bytes) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``needle``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmd and state != b"Z":
            out.append(int(pid))
    return out


def wait_gone(needle: bytes, bound: float = BOUND_S) -> list[int]:
    deadline = time.monotonic() + bound
    while (left := alive(needle)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@needs_sandbox
def test_a_read_only_rated_call_cannot_write_anywhere(box):
    env = env_of(box)
    assert run(env, "echo note > /tmp/note.txt").exit_code == 0  # a writing call fills the session's /tmp
    r = run(env, "echo x > w.txt; echo y > /tmp/y; echo z > h/z; cat /tmp/note.txt", Risk.READ_ONLY)
    assert not (box["ws"] / "w.txt").exists() and not (box["home"] / "z").exists()
    assert not (box["tmp"].path() / "y").exists()
    assert r.visible.count("Read-only file system") == 3
    assert "note" in r.visible, "a read-only call still reads what an earlier call left in /tmp"


@needs_sandbox
def test_git_metadata_cox_dir_and_cox_home_are_read_only_to_a_writing_call(box):
    ws = box["ws"]
    r = run(env_of(box), "echo ok > made.txt; echo '[core] fsmonitor = x' >> .git/config; echo x > .git/hooks/pre-commit;"
                         " mkdir -p .git/info; echo x > .git/info/attributes; mkdir -p .cox; echo x > .cox/config.toml;"
                         f" echo x > {box['cox_home']}/config.toml; ls {box['cox_home']} && echo LISTED")
    assert (ws / "made.txt").read_text() == "ok\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert not (ws / ".git" / "info" / "attributes").exists()
    assert not (ws / ".cox" / "config.toml").exists()
    assert (box["cox_home"] / "config.toml").read_text() == "# mine\n"
    assert "LISTED" not in r.visible, "COX_HOME is hidden, not only read-only"


@needs_sandbox
@pytest.mark.parametrize("where", ["in the workspace", "holding the workspace"])
def test_cox_home_inside_or_around_the_workspace(box, where):
    ws = box["ws"]
    if where == "in the workspace":
        cox_home = ws / ".coxhome"
        cox_home.mkdir()
    else:
        cox_home = ws.parent
    (cox_home / "config.toml").write_text("# mine\n")
    env = env_of(box, cox_home=cox_home)
    r = run(env, f"echo ok > made.txt; echo '[core]' > {cox_home}/config.toml; cat {cox_home}/config.toml")
    assert (cox_home / "config.toml").read_text() == "# mine\n"
    assert (ws / "made.txt").read_text() == "ok\n", "the workspace stays writable"
    if where == "in the workspace":
        assert "# mine" not in r.visible, "hidden"


@needs_sandbox
def test_the_git_dir_cannot_be_swapped_and_a_planted_commondir_is_removed(box):
    ws = box["ws"]
    r = run(env_of(box), "mv .git .gone; rm -rf .git; mkdir -p evil/objects; printf '[core]\\n\\tfsmonitor = x\\n' >"
                         " evil/config; echo ../evil > .git/commondir; cat .git/commondir")
    assert not (ws / ".gone").exists() and (ws / ".git" / "config").read_text() == "[core]\n"
    assert "../evil" in r.visible, "the file was written inside the sandbox"
    assert not (ws / ".git" / "commondir").exists() and "[removed" in r.visible


@needs_sandbox
def test_secret_paths_and_read_deny_rules_are_masked(box):
    ws = box["ws"]
    (ws / ".env").write_text("TOKEN=envsecret\n")
    (ws / "link").symlink_to(box["home"] / ".ssh")
    env = env_of(box, read_deny=("~/.ssh/**", "./.env"))
    r = run(env, "cat h/.ssh/id_rsa; cat link/id_rsa; cat .env; ls -A h/.ssh; grep -r s3cr3t . ; echo end",
            Risk.READ_ONLY)
    assert "s3cr3t" not in r.visible and "envsecret" not in r.visible
    assert "end" in r.visible
    assert (box["home"] / ".ssh" / "id_rsa").exists(), "masks hide, they never delete"


@needs_sandbox
def test_a_daemon_socket_cannot_be_reached(box):
    """connect() works on a read-only mount; the mask is what stops a command from asking a
    root daemon (docker, the system bus) to run something for it."""
    import socket
    import subprocess

    from cox.policy.sandbox import SandboxPolicy, bwrap_argv, harden

    path = box["ws"] / "daemon.sock"  # visible in the sandbox (and read-only would not stop connect)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    probe = f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); print('CONNECTED')\""
    try:
        for sockets in ((), (str(path),)):
            policy = harden(SandboxPolicy(SandboxMode.WORKSPACE_WRITE, (box["ws"],)), cwd=box["ws"], home=box["home"],
                            cox_home=None, sockets=sockets)
            out = subprocess.run(bwrap_argv(policy, ["bash", "-c", probe], cwd=box["ws"]), capture_output=True,
                                 text=True, timeout=30)
            assert ("CONNECTED" in out.stdout) == (not sockets), out  # reachable unless masked
    finally:
        server.close()
        path.unlink()


@needs_sandbox
def test_tmp_is_private_to_the_session_and_removed_with_it(box):
    name = f"cox-probe-{secrets.token_hex(4)}"
    r = run(env_of(box), f"echo private > /tmp/{name}; ls /tmp")
    assert r.exit_code == 0
    host = Path(tempfile.gettempdir()) / name
    assert not host.exists(), "the write reached the host's /tmp"
    session = box["tmp"].path()
    assert (session / name).read_text() == "private\n"
    box["tmp"].remove()
    assert not session.exists()
    assert box["tmp"].path() is None, "a call finishing after the session ended makes no new folder"
    r = run(env_of(box), "echo late > /tmp/late; cat /tmp/late")
    assert "late" in r.visible and not list(Path(tempfile.gettempdir()).glob(f"cox-tmp-{box['sid']}-*"))


@needs_sandbox
def test_the_environment_carries_no_secret_values(box, monkeypatch):
    shell_env.reset_for_tests()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-probe-111")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-probe-222")
    monkeypatch.setenv("NPM_TOKEN", "npm-probe-333")
    try:
        r = run(env_of(box, env_keep=("NPM_TOKEN",)), "env")
        bare = run(env_of(box, SandboxMode.DANGER_FULL_ACCESS, env_keep=("NPM_TOKEN",)), "env")
    finally:
        shell_env.reset_for_tests()
    for out in (r.visible, bare.visible):
        assert "sk-ant-probe-111" not in out and "tok-probe-222" not in out
        assert "npm-probe-333" in out, "env_keep passes a variable the user named"


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="about running as root")
def test_as_root_no_capabilities_and_no_remount(box):
    r = run(env_of(box), "grep CapEff /proc/self/status; mount -o remount,rw / && echo REMOUNTED")
    assert "CapEff:\t0000000000000000" in r.visible
    assert "REMOUNTED" not in r.visible


@needs_sandbox
def _count_when_both_run(tag: str) -> str:
    """Shell that prints how many ``sleep TAG`` run once both have started (waiting for them, not a
    fixed 50 ms a busy machine can outlast; the bound is only for a hang)."""
    return (f"for i in $(seq 3000); do n=$(pgrep -c -f '^sleep {tag}'); [ \"$n\" -ge 2 ] && break; "
            f"sleep 0.02; done; echo $n")


def test_setsid_and_double_forked_children_end_with_the_call(box):
    tag = f"{secrets.randbelow(10**6) + 10**6}.5"
    r = run(env_of(box), f"setsid sleep {tag} & (sleep {tag} &) ; {_count_when_both_run(tag)}")
    assert r.visible.startswith("2"), r.visible  # both were running when the line ended
    assert wait_gone(f"sleep\0{tag}".encode()) == []


def test_unconfined_setsid_children_end_with_the_call(box):
    tag = f"{secrets.randbelow(10**6) + 10**6}.25"
    r = run(env_of(box, SandboxMode.DANGER_FULL_ACCESS),
            f"setsid sleep {tag} & (setsid sleep {tag} &) ; {_count_when_both_run(tag)}")
    assert r.visible.startswith("2"), r.visible
    assert wait_gone(f"sleep\0{tag}".encode()) == []


@pytest.mark.parametrize("mode", [pytest.param(SandboxMode.DANGER_FULL_ACCESS, id="unconfined"),
                                  pytest.param(SandboxMode.WORKSPACE_WRITE, id="sandboxed", marks=needs_sandbox)])
def test_background_job_leftovers_end_with_the_session(box, mode):
    tag = f"{secrets.randbelow(10**6) + 10**6}.75"
    env = env_of(box, mode)
    r = run(env, f"(setsid sleep {tag} &); echo started; sleep 300", run_in_background=True)
    deadline = time.monotonic() + BOUND_S  # only a hang reaches it
    while not alive(f"sleep\0{tag}".encode()):
        assert time.monotonic() < deadline, r.visible
        time.sleep(0.02)
    jobs(env).stop_all()
    assert wait_gone(f"sleep\0{tag}".encode()) == []


@needs_sandbox
def test_a_background_job_logs_into_the_session_tmp(box):
    env = env_of(box)
    r = run(env, "echo from-job; sleep 300", run_in_background=True)
    assert "/tmp/cox-jobs/" in r.visible
    log = Path(r.meta["log"])
    assert log.is_relative_to(box["tmp"].path())
    deadline = time.monotonic() + BOUND_S
    while "from-job" not in log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    seen = run(env, f"cat /tmp/cox-jobs/{log.name}", Risk.READ_ONLY)
    assert "from-job" in seen.visible
    jobs(env).stop_all()


@pytest.mark.parametrize("mode", [SandboxMode.WORKSPACE_WRITE, SandboxMode.READ_ONLY])
def test_without_a_working_sandbox_nothing_runs(box, mode, monkeypatch):
    monkeypatch.setattr(shell_env, "_sandbox", (False, "bubblewrap (bwrap) is not installed"))
    marker = box["ws"] / "marker"
    for risk in (Risk.EXEC, Risk.READ_ONLY):
        r = run(env_of(box, mode), f"touch {marker}", risk)
        assert r.status.value == "error" and not marker.exists()
        assert "install bubblewrap" in r.visible and 'sandbox.mode = "danger-full-access"' in r.visible
    r = run(env_of(box, mode), f"touch {marker}", run_in_background=True)
    assert r.status.value == "error" and not marker.exists()
    r = run(env_of(box, SandboxMode.DANGER_FULL_ACCESS), f"touch {marker}")
    assert r.exit_code == 0 and marker.exists(), "an explicit danger-full-access runs bare"


@needs_sandbox
def test_an_environment_under_tmp_stays_usable_and_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A checkout (its virtualenv on PATH) and a home that live under /tmp: the private /tmp must
    # not hide them (CI clones into /tmp; so does many a newcomer), yet they stay read-only, the
    # COX_HOME inside that home stays hidden, and the rest of the host's /tmp stays out of sight.
    base = Path(tempfile.mkdtemp(prefix="cox-envtmp-", dir="/tmp"))
    other = Path(tempfile.mkdtemp(prefix="cox-other-", dir="/tmp"))
    tmp = SessionTmp("envtmp")
    try:
        venv_bin = base / "checkout" / ".venv" / "bin"
        venv_bin.mkdir(parents=True)
        (base / "checkout" / ".venv" / "lib.txt").write_text("venv-lib\n")
        tool = venv_bin / "mytool"
        tool.write_text("#!/bin/sh\ncat \"$(dirname \"$0\")/../lib.txt\"\n")
        tool.chmod(0o755)
        home = base / "home"
        (home / ".cox").mkdir(parents=True)
        (home / ".cox" / "config.toml").write_text("# cox's own\n")
        (home / "notes.txt").write_text("home-notes\n")
        (other / "stranger.txt").write_text("not yours\n")
        ws = tmp_path / "ws"
        ws.mkdir()
        monkeypatch.setattr(shell_env, "_login_env", {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"})
        env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope(), home=home,
                      services=ToolServices(session_tmp=tmp, cox_home=home / ".cox"))
        r = run(env, f"mytool && cat {home}/notes.txt && ls {home}/.cox | wc -l && "
                     f"(cat {other}/stranger.txt || echo stranger-hidden) && "
                     f"(touch {home}/planted || echo home-read-only)")
        assert r.visible.splitlines()[:5] == ["venv-lib", "home-notes", "0", "stranger-hidden", "home-read-only"], \
            r.visible
        assert not (home / "planted").exists()
    finally:
        tmp.remove()
        import shutil

        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)
