"""The ``bash`` tool: one command line in its own process group, inside the session's sandbox.

- The line runs with ``bash -c`` in the login shell's environment without its secret-looking
  variables (see ``shell_env``), wrapped in bubblewrap (``cox.policy.sandbox``) unless the
  session chose danger-full-access. A call rated read-only runs on a read-only file system.
- Fail closed: with no working sandbox, nothing runs unless sandbox.mode is danger-full-access;
  the call fails with one sentence saying what to do.
- Timeout (default 120 s, at most ``bash_max_timeout_s``) and cancel end the whole group:
  SIGTERM from the interrupting thread at once, SIGKILL after a short grace from this one.
- Output streams to the session as it arrives (ToolCallOutput, at most ~10 chunks a second);
  the first MiB stays in memory, the rest spills to disk and the whole of it is archived.
- Whatever the line leaves running (``server &``, ``setsid`` and double-forked children too) is
  ended when the call returns, unless the call asked to run in the background: then the session
  owns the process and ends it when the session stops. In the sandbox the pid namespace does it
  (when the line exits, the namespace dies); bare, every process the line started carries a tag
  in its environment (``COX_CALL_TAG``) and whatever still carries it is killed.
- A model's ``apply_patch <<'EOF'`` shell call is rerouted to the apply_patch tool, as Codex does.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cox.protocol.types import Risk, SandboxMode, ToolCall, ToolResult, ToolStatus

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError
from .reaper import REAPER, TAG_VAR  # TAG_VAR: set in every command's environment (kill_tagged)
from .spool import Spool
from .visible import cap

GRACE_S = 0.2
STREAM_EVERY_S = 0.1
STREAM_MAX_CHARS = 64 * 1024
"""Live output shown while a command runs; the rest is in the result (and the archive)."""

LIVE: dict[int, subprocess.Popen[bytes]] = {}
"""Every command process a tool started and nobody has reaped yet, by pid."""



def kill_tagged(tag: str) -> int:
    """SIGKILL every process whose environment carries ``TAG_VAR=tag`` (an unconfined call's
    leftovers, however they detached), scanning until none is left. Returns how many."""
    needle = f"{TAG_VAR}={tag}".encode()
    me = os.getpid()
    killed = 0
    for _ in range(20):  # a leftover that forks between two scans is caught by the next
        found = 0
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return killed
        for pid in pids:
            if pid == me:
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if needle in data.split(b"\0"):
                try:
                    os.kill(pid, signal.SIGKILL)
                    found += 1
                except (ProcessLookupError, PermissionError):
                    pass
        killed += found
        if not found:
            break
    return killed


def _group_alive(pgid: int) -> bool:
    """Whether the group has a member that is not a zombie. ``killpg(pgid, 0)`` also counts
    zombies, and in a container whose PID 1 does not reap, an orphaned zombie (bwrap's inner
    process, say) stays in the group for good."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        pids = os.listdir("/proc")
    except OSError:
        return True
    for pid in pids:
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def kill_group(pgid: int) -> None:
    """SIGTERM the group, wait a short grace period, then SIGKILL whatever is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.01)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _forget(processes: list[Any], proc: Any) -> None:
    if proc.returncode is not None:
        LIVE.pop(proc.pid, None)
    try:
        processes.remove(proc)
    except ValueError:  # already reaped by whoever ended the call early
        pass


def reap_strays() -> int:
    """Wait for exited command processes nobody waited for: tracked ones whose call died
    before reaping them, and ones whose ``Popen`` was dropped unwaited (CPython parks those in
    ``subprocess._active``). Returns how many tracked ones were reaped."""
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
        proc.poll()  # a zombie leader would keep the group alive to killpg
        kill_group(proc.pid)
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _forget(processes, proc)


class BashTool(BaseTool):
    spec = catalog.BASH

    def risk(self, call_input: dict[str, Any]) -> Risk:
        from cox.policy.bash import classify

        return classify(str(call_input.get("command", ""))).risk

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return str(call_input.get("command", ""))

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        return [] if call.risk is Risk.READ_ONLY else None

    def describe(self, call: ToolCall, env: ToolEnv) -> ToolCall:
        from cox.policy.bash import classify

        line = str(call.input.get("command", ""))
        c = classify(line)
        return replace(call, risk=c.risk, subject=line, segments=list(c.segments), opaque=c.opaque)

    def argv(self, command: str, env: ToolEnv, *, read_only: bool = False) -> list[str]:
        """The argv that runs ``command``: bubblewrap around ``bash -c`` (``bash -c`` alone for
        danger-full-access). Raises ``SandboxMissing`` when there is no working sandbox."""
        return self._prepare(command, env, read_only)[0]

    def _prepare(self, command: str, env: ToolEnv, read_only: bool) -> tuple[list[str], Any]:
        """(argv, the sandbox policy or None)."""
        from cox.policy.sandbox import bwrap_argv

        policy = sandbox_for(env, read_only=read_only)
        if policy is None:
            return ["bash", "-c", command], None
        return bwrap_argv(policy, ["bash", "-c", command], cwd=env.cwd), policy

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        command = call.input.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolInputError("'command' must be a non-empty string")
        rerouted = self._reroute_patch(command, call, env)
        if rerouted is not None:
            return rerouted
        from .shell_env import command_environment

        read_only = call.risk is Risk.READ_ONLY
        try:
            argv, policy = self._prepare(command, env, read_only)
        except SandboxMissing as exc:
            return ToolResult.error(str(exc))
        planted: tuple[str, ...] = policy.must_not_appear if policy is not None else ()
        child_env, _ = command_environment(env.services.env_keep)
        bare = argv[0] == "bash"
        if bare:
            REAPER.start()
        tag = REAPER.tag() if bare else os.urandom(8).hex()
        child_env[TAG_VAR] = tag
        if call.input.get("run_in_background"):
            return self._background(command, env, child_env, argv, tag if bare else None, planted)
        timeout = float(call.input.get("timeout") or env.bash_timeout_s)
        timeout = min(max(timeout, 1.0), env.bash_max_timeout_s)
        proc = subprocess.Popen(argv, cwd=str(env.cwd), env=child_env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        pgid = proc.pid
        if bare:
            REAPER.watch(pgid)  # dies with cox even when cox is SIGKILLed (reaper.py)
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
        out, err = Spool(), Spool()
        timed_out = False
        try:
            timed_out = _pump(proc, timeout, killed, out, err, env)
        finally:
            unregister()
            if not timed_out and not killed.is_set():
                try:  # the pipes closed: the leader is exiting; a SIGTERM now would turn its code into -15
                    proc.wait(timeout=GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
            proc.poll()  # reap the leader first: a zombie leader keeps its group "alive" to killpg
            if bare or proc.returncode is None or killed.is_set() or timed_out:
                # end anything the line left running in its group. A sandboxed line whose bwrap
                # exited on its own needs nothing: bwrap's pid namespace died with it, and the
                # kernel ends every process inside before bwrap's own exit is seen (the /proc
                # scan that tells live members from zombies costs ~1-5 ms a call).
                kill_group(pgid)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if bare:
                kill_tagged(tag)  # and what detached from it (setsid, double fork)
                REAPER.unwatch(pgid)
            _forget(env.processes, proc)
        from cox.policy.sandbox import remove_planted

        removed = remove_planted(planted)
        tmp = env.services.session_tmp
        if tmp is not None and policy is not None:
            tmp.done_with(policy.tmp)
        try:
            result = _result(proc.returncode, out, err, timeout, timed_out, killed.is_set(), env)
            if removed:
                result = replace(result, visible=result.visible + f"\n[removed {', '.join(removed)}: it would "
                                                                  "make git obey a config of the command's choosing]")
            return result
        finally:
            out.close()
            err.close()

    def _background(self, command: str, env: ToolEnv, child_env: dict[str, str], argv: list[str],
                    tag: str | None, planted: tuple[str, ...] = ()) -> ToolResult:
        jobs = env.services.jobs
        if jobs is None:
            return ToolResult.error("this session cannot run background commands")
        tmp = env.services.session_tmp
        host_tmp = tmp.path() if tmp is not None else None  # private to this session (0700)
        inside = host_tmp is not None and argv[0] != "bash"  # the log is then at /tmp/… in the sandbox
        # Never a shared /tmp/cox-jobs: another user's (or an attacker's) folder or link there.
        import tempfile

        folder = (host_tmp / "cox-jobs") if host_tmp is not None else Path(tempfile.mkdtemp(prefix="cox-jobs-"))
        folder.mkdir(exist_ok=True)
        log = Path(tempfile.mkstemp(prefix="job-", suffix=".log", dir=folder)[1])
        shown = f"/tmp/cox-jobs/{log.name}" if inside else str(log)
        with open(log, "wb") as sink:
            proc = subprocess.Popen(argv, cwd=str(env.cwd), env=child_env,
                                    stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        if tag is not None:
            REAPER.watch(proc.pid)
        job = jobs.add(command, proc, log, tag=tag, planted=planted)
        return ToolResult(visible=f"started in the background as {job.id} (pid {proc.pid}); its output goes to "
                                  f"{shown} (read it with `tail -n 50 {shown}`); it is stopped when the session ends",
                          meta={"job": job.id, "pid": proc.pid, "log": str(log)})

    def _reroute_patch(self, command: str, call: ToolCall, env: ToolEnv) -> ToolResult | None:
        from .patch.shell import detect_shell_apply_patch

        found = detect_shell_apply_patch(command)
        if found is None:
            return None
        from .apply_patch import ApplyPatchTool

        patch_input: dict[str, Any] = {"patch": found.patch}
        if found.workdir:
            patch_input["workdir"] = found.workdir
        result = ApplyPatchTool().call(replace(call, name="apply_patch", input=patch_input), env)
        note = "(this shell call was run as the apply_patch tool)\n"
        return replace(result, visible=note + result.visible)


class SandboxMissing(Exception):
    """There is no working sandbox and the session did not choose danger-full-access."""


def sandbox_for(env: ToolEnv, *, read_only: bool = False) -> Any:
    """The ``SandboxPolicy`` a command of this session runs under (None: danger-full-access, no
    wrapper). Raises ``SandboxMissing`` (with the sentence for the model) when none works here."""
    from cox.policy.sandbox import SandboxPolicy, fail_closed_sentence, harden, read_deny_patterns

    from .shell_env import sandbox_status

    services = env.services
    mode = SandboxMode(services.sandbox_mode)
    if mode is SandboxMode.DANGER_FULL_ACCESS:
        return None
    ok, why = sandbox_status()
    if not ok:
        raise SandboxMissing(fail_closed_sentence(why))
    from cox.policy.paths import write_roots

    writable = tuple(write_roots(env.roots)) + tuple(Path(p) for p in services.writable_roots)
    base = SandboxPolicy(mode, writable, bool(services.network))
    tmp = services.session_tmp
    cox_home = services.cox_home
    if cox_home is None:
        from cox.actors.store.layout import cox_home as default_cox_home

        cox_home = default_cox_home()
    deny = services.read_deny
    from .shell_env import login_environment

    return harden(base, cwd=env.cwd, home=env.home, cox_home=Path(cox_home),
                  read_deny=list(deny) if deny is not None else read_deny_patterns(()),
                  tmp=tmp.path() if tmp is not None else None, frozen=read_only,
                  path_env=login_environment()[0].get("PATH", ""),
                  read_roots=env.roots[1:])


def _pump(proc: subprocess.Popen[bytes], timeout: float, killed: threading.Event, out: Spool, err: Spool,
          env: ToolEnv) -> bool:
    """Read both pipes until they close, streaming to ``env.output``. True on timeout."""
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    deadline = time.monotonic() + timeout
    killed_at: float | None = None
    exited_at: float | None = None
    pending: list[str] = []
    streamed = 0
    last_flush = time.monotonic()
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                return True
            if killed.is_set():
                killed_at = killed_at or now
                if now - killed_at > GRACE_S:  # something ignores SIGTERM or holds the pipe
                    return False
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > GRACE_S:
                return False  # the line is done; what it left running (holding the pipes) is ended next
            for key, _ in sel.select(timeout=min(0.05, deadline - now)):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                text = key.data.write(data)
                if text and streamed < STREAM_MAX_CHARS:
                    text = text[: STREAM_MAX_CHARS - streamed]
                    streamed += len(text)
                    pending.append(text)
            if pending and time.monotonic() - last_flush >= STREAM_EVERY_S:
                env.output("".join(pending))
                pending.clear()
                last_flush = time.monotonic()
        if pending:
            env.output("".join(pending))
        return False
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()


def _result(code: int, out: Spool, err: Spool, timeout: float, timed_out: bool, killed: bool,
            env: ToolEnv) -> ToolResult:
    """What the command printed (stdout, then stderr under a ``[stderr]`` line), followed by
    cox's own lines (timed out, interrupted, ``[exit code N]``) for the model. The archive gets
    the printed bytes alone, exactly as they came, so ``cox expand ID > file`` is the output."""
    archive = env.services.archive
    archive_id: str | None = None
    total = out.size + err.size
    o, e = out.read(), err.read()
    printed = o + ((b"[stderr]\n" if o.endswith(b"\n") else b"\n[stderr]\n") if o and e else b"") + e
    if archive is not None:  # nothing printed is archived too: its id expands to nothing, never to the footer
        try:
            archive_id = archive(printed)
        except Exception:  # the session archives what the model sees instead, or says it could not
            archive_id = None
    if (out.spilled or err.spilled) and archive_id is not None:
        parts = [cap(printed.decode("utf-8", "replace"), archive_id)]
    else:
        parts = []
        if o:
            parts.append(o.decode("utf-8", "replace").rstrip("\n"))
        if e:
            parts.append(("[stderr]\n" if o else "") + e.decode("utf-8", "replace").rstrip("\n"))
    if timed_out:
        parts.append(f"[timed out after {timeout:g} s; the command and its children were killed]")
    elif killed:
        parts.append("[interrupted; the command and its children were killed]")
    parts.append(f"[exit code {code}]")
    status = ToolStatus.OK if code == 0 and not timed_out else ToolStatus.ERROR
    return ToolResult(status=status, visible="\n".join(parts), exit_code=code, archive_id=archive_id,
                      total_bytes=total if archive_id and (out.spilled or err.spilled) else None,
                      meta={"timed_out": timed_out})
