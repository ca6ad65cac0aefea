"""First form of the ``bash`` tool: ``bash -lc`` in its own process group, with a timeout.

The whole group is killed on timeout, on cancel, and when the call returns (so a ``server &``
left behind does not outlive the call). The tools issue adds the sandbox and background jobs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Any

from cox.protocol.types import Risk, ToolCall, ToolResult

from .base import BaseTool, ToolEnv, ToolInputError

GRACE_S = 0.2


def kill_group(pgid: int) -> None:
    """SIGTERM the group, wait a short grace period, then SIGKILL whatever is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class BashTool(BaseTool):
    name = "bash"
    description = (
        "Run a shell command line with bash in the workspace. Returns stdout, stderr and the exit code. "
        "timeout is in seconds (default 120, at most 600)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout": {"type": "number", "minimum": 1},
            "description": {"type": "string"},
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    parallel = True  # a read-only line runs beside other reads; any other line runs alone
    required = ("command",)

    def risk(self, call_input: dict[str, Any]) -> Risk:
        from cox.policy.bash import classify

        return classify(str(call_input.get("command", ""))).risk

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return str(call_input.get("command", ""))

    def describe(self, call: ToolCall, env: ToolEnv) -> ToolCall:
        from cox.policy.bash import classify

        line = str(call.input.get("command", ""))
        c = classify(line)
        return call.model_copy(update={"risk": c.risk, "subject": line, "segments": list(c.segments),
                                       "opaque": c.opaque})

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        command = call.input.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolInputError("'command' must be a non-empty string")
        timeout = float(call.input.get("timeout") or env.bash_timeout_s)
        timeout = min(max(timeout, 1.0), env.bash_max_timeout_s)
        proc = subprocess.Popen(
            ["bash", "-lc", command],
            cwd=str(env.cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        pgid = proc.pid
        env.processes.append(proc)
        LIVE[proc.pid] = proc
        killed = threading.Event()

        def on_cancel() -> None:
            # Runs on the interrupting thread: signal and return at once; this call's own
            # thread does the grace period and the SIGKILL.
            killed.set()
            try:
                os.killpg(pgid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

        unregister = env.cancel.on_cancel(on_cancel)
        timed_out = False
        try:
            stdout, stderr = _collect(proc, timeout, killed)
            if stdout is None:
                timed_out = not killed.is_set()
                kill_group(pgid)
                stdout, stderr = proc.communicate()
        finally:
            unregister()
            kill_group(pgid)  # reap anything the line left running in its group
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            _forget(env.processes, proc)
        out = stdout.decode("utf-8", "replace")
        err = stderr.decode("utf-8", "replace")
        code = proc.returncode
        parts = []
        if out:
            parts.append(out.rstrip("\n"))
        if err:
            parts.append(("[stderr]\n" if out else "") + err.rstrip("\n"))
        if timed_out:
            parts.append(f"[timed out after {timeout:g} s; the command and its children were killed]")
        elif killed.is_set():
            parts.append("[interrupted; the command and its children were killed]")
        parts.append(f"[exit code {code}]")
        status = "ok" if code == 0 and not timed_out else "error"
        return ToolResult(status=status, visible="\n".join(parts), exit_code=code,
                          meta={"timed_out": timed_out})


LIVE: dict[int, subprocess.Popen[bytes]] = {}
"""Every command process a tool started and nobody has reaped yet, by pid."""


def _forget(processes: list[Any], proc: Any) -> None:
    if proc.returncode is not None:
        LIVE.pop(proc.pid, None)
    try:
        processes.remove(proc)
    except ValueError:  # already reaped by whoever ended the call early
        pass


def reap_strays() -> int:
    """Wait for exited command processes nobody waited for: tracked ones whose call died
    before reaping them, and ones whose ``Popen`` was dropped unwaited (a call that died while
    starting its process; CPython parks those in ``subprocess._active``). Returns how many
    tracked ones were reaped."""
    reaped = 0
    for pid, proc in list(LIVE.items()):
        if proc.poll() is not None:  # poll() waits for an exited child; safe beside its owner
            LIVE.pop(pid, None)
            reaped += 1
    cleanup = getattr(subprocess, "_cleanup", None)
    if cleanup is not None:
        cleanup()
    return reaped


def reap(processes: list[subprocess.Popen[bytes]]) -> None:
    """End and wait for processes a call left behind when it did not finish normally."""
    for proc in list(processes):
        kill_group(proc.pid)
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _forget(processes, proc)


def _collect(proc: subprocess.Popen[bytes], timeout: float, killed: threading.Event) -> tuple[Any, Any]:
    """Wait for the command's output; (None, None) on timeout or when the call was cancelled
    and the command did not end by itself (a process that ignores SIGTERM)."""
    deadline = time.monotonic() + timeout
    while True:
        step = min(0.05 if killed.is_set() else 0.5, deadline - time.monotonic())
        if step <= 0:
            return None, None
        try:
            return proc.communicate(timeout=step)
        except subprocess.TimeoutExpired:
            if killed.is_set() and step == 0.05:
                return None, None
