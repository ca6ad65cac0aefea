"""The session's one hook sandbox (``cox.hooks.zygote``): set up once, hooks confined in it as
before, an interrupt ends it at once, a dead or busy one never loses a hook, and nothing of it
outlives its session or a killed cox."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cox.actors.tools.shell_env import command_environment
from cox.hooks.sandbox import hook_wrapper
from cox.hooks.zygote import HookSandbox, sandboxed
from cox.protocol.types import SandboxMode
from cox.supervisors import CancelScope
from tests.procs import pids_with
from tests.supervisors.helpers import wait_until

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


@pytest.fixture
def box(tmp_path: Path) -> Iterator[tuple[HookSandbox, Path, dict[str, str]]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "home").mkdir()
    wrap = hook_wrapper(SandboxMode.WORKSPACE_WRITE, [ws], network=False, cwd=ws, home=tmp_path / "home",
                        cox_home=tmp_path / "cox", commands=["true"])
    env, _ = command_environment(())
    sandbox = HookSandbox(wrap, env)
    assert sandboxed(wrap)
    yield sandbox, ws, env
    sandbox.close()


def test_hooks_run_in_one_sandbox_with_their_own_input_env_and_folder(box: tuple[HookSandbox, Path, dict[str, str]],
                                                                    tmp_path: Path) -> None:
    sandbox, ws, env = box
    for i in range(3):
        out = sandbox.run(f'cat > got{i}.json; echo "$HOOK_N"; pwd', b'{"n": %d}' % i, cwd=ws,
                          env={**env, "HOOK_N": str(i)}, timeout_s=30)
        assert out is not None and out.code == 0, out
        assert out.stdout.decode().split() == [str(i), str(ws)]
        assert (ws / f"got{i}.json").read_bytes() == b'{"n": %d}' % i
    assert sandbox.started == 1
    out = sandbox.run("echo no >&2; exit 2", b"", cwd=ws, env=env, timeout_s=30)
    assert out is not None and (out.code, out.stderr) == (2, b"no\n")


def test_a_hook_in_the_session_sandbox_cannot_write_outside_the_workspace(
        box: tuple[HookSandbox, Path, dict[str, str]], tmp_path: Path) -> None:
    sandbox, ws, env = box
    (ws / ".git" / "hooks").mkdir(parents=True)
    out = sandbox.run(f"touch {tmp_path}/home/escaped; touch {ws}/.git/hooks/pre-commit; touch {ws}/inside", b"",
                      cwd=ws, env=env, timeout_s=30)
    assert out is not None and (ws / "inside").exists()
    assert not (tmp_path / "home" / "escaped").exists() and not (ws / ".git" / "hooks" / "pre-commit").exists()


def test_a_timeout_kills_the_hook_and_the_sandbox_serves_the_next(box: tuple[HookSandbox, Path, dict[str, str]]) -> None:
    sandbox, ws, env = box
    out = sandbox.run("sleep 600", b"", cwd=ws, env=env, timeout_s=0.5)
    assert out is not None and out.timed_out
    again = sandbox.run("echo fine", b"", cwd=ws, env=env, timeout_s=30)
    assert again is not None and again.stdout == b"fine\n" and sandbox.started == 1


def test_an_interrupt_ends_the_hook_and_everything_it_started_at_once(
        box: tuple[HookSandbox, Path, dict[str, str]]) -> None:
    sandbox, ws, env = box
    token = f"cox-zygote-int-{os.getpid()}"
    scope = CancelScope()
    threading.Timer(0.5, scope.cancel).start()
    started = time.monotonic()
    out = sandbox.run(f"bash -c 'exec -a {token} sleep 600' & exec bash -c 'exec -a {token} sleep 600'", b"", cwd=ws, env=env,
                      timeout_s=600, cancel=scope)
    assert time.monotonic() - started < 30
    assert out is not None and out.error is not None and "interrupted" in out.error
    assert wait_until(lambda: not pids_with(token, at_start=True), 10), "the interrupted hook's processes to end"
    again = sandbox.run("echo back", b"", cwd=ws, env=env, timeout_s=30)
    assert again is not None and again.stdout == b"back\n" and sandbox.started == 2


def test_a_killed_sandbox_loses_no_hook(box: tuple[HookSandbox, Path, dict[str, str]]) -> None:
    sandbox, ws, env = box
    assert sandbox.run("true", b"", cwd=ws, env=env, timeout_s=30) is not None
    proc = sandbox._proc
    assert proc is not None
    threading.Timer(0.5, lambda: os.killpg(proc.pid, signal.SIGKILL)).start()
    assert sandbox.run("sleep 5; echo late", b"", cwd=ws, env=env, timeout_s=30) is None  # run it directly
    out = sandbox.run("echo next", b"", cwd=ws, env=env, timeout_s=30)
    assert out is not None and out.stdout == b"next\n" and sandbox.started == 2


def test_a_busy_sandbox_sends_the_next_hook_the_direct_way(box: tuple[HookSandbox, Path, dict[str, str]]) -> None:
    sandbox, ws, env = box
    results: list[object] = []
    first = threading.Thread(target=lambda: results.append(sandbox.run("sleep 1", b"", cwd=ws, env=env, timeout_s=30)))
    first.start()
    assert wait_until(lambda: sandbox._busy.locked(), 30), "the first hook to take the sandbox"
    assert sandbox.run("true", b"", cwd=ws, env=env, timeout_s=30) is None
    first.join(60)
    assert results and results[0] is not None


def test_close_ends_the_sandbox_and_later_hooks_run_directly(box: tuple[HookSandbox, Path, dict[str, str]]) -> None:
    sandbox, ws, env = box
    assert sandbox.run("true", b"", cwd=ws, env=env, timeout_s=30) is not None
    proc = sandbox._proc
    assert proc is not None
    sandbox.close()
    assert proc.poll() is not None
    assert sandbox.run("true", b"", cwd=ws, env=env, timeout_s=30) is None


def test_nothing_of_the_sandbox_outlives_a_killed_cox(tmp_path: Path) -> None:
    token = f"cox-zygote-orphan-{os.getpid()}"
    ws = tmp_path / "ws"
    ws.mkdir()
    program = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from cox.actors.tools.shell_env import command_environment
        from cox.hooks.sandbox import hook_wrapper
        from cox.hooks.zygote import HookSandbox
        from cox.protocol.types import SandboxMode
        ws = Path({str(ws)!r})
        wrap = hook_wrapper(SandboxMode.WORKSPACE_WRITE, [ws], network=False, cwd=ws, home=ws, cox_home=ws / ".c",
                            commands=["true"])
        env, _ = command_environment(())
        box = HookSandbox(wrap, env)
        print("up", flush=True)
        box.run("exec bash -c 'exec -a {token} sleep 600'", b"", cwd=ws, env=env, timeout_s=600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, cwd=str(Path(__file__).parents[2]),
                            env={**os.environ, "TMPDIR": tempfile.gettempdir()})
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        assert wait_until(lambda: pids_with(token, at_start=True), 60), "the hook to run in the sandbox"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert wait_until(lambda: not pids_with(token, at_start=True), 30), "the sandbox to end with cox"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in pids_with(token, at_start=True):
            os.kill(pid, signal.SIGKILL)
