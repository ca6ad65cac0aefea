"""``bash`` in the editor's terminal (ACP's ``terminal/*``), when the client offers it.

What runs is exactly what the bash tool would run itself: its argv — bubblewrap around
``bash -c LINE`` with the session's sandbox policy, or ``bash -c`` alone in danger-full-access —
its cleaned environment (``shell_env.command_environment``) and its working folder; only the
process is the client's, so the person watches it live in the editor (the call's content is
the terminal). The engine judged the call before, as for any bash call; the sandbox holds inside
the editor's terminal as it does in cox's own.

The call waits for the terminal's exit at most its timeout; on a timeout or an interrupt
(``session/cancel``) the terminal is killed (``terminal/kill``: the client ends the process, and
with it bubblewrap's pid namespace), and always released. The result is the bash tool's: the
output (archived whole; the model sees it capped), ``[timed out …]`` / ``[interrupted …]`` and
``[exit code N]``. Background jobs (``run_in_background``) and a rerouted ``apply_patch`` line
stay cox's own.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any

from cox.actors.tools.base import ToolEnv
from cox.actors.tools.bash import BashTool
from cox.protocol.types import Risk, ToolCall, ToolResult

from .bridge import Client, Delegate

__all__ = ["OUTPUT_LIMIT", "Terminal"]

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 4 * 1024 * 1024
"""Bytes of output the client keeps (``outputByteLimit``; it drops the beginning past that)."""
KILL_WAIT_S = 10.0


class Terminal(Delegate):
    inner: BashTool

    def __init__(self, inner: BashTool, client: Client, announce: Callable[[str, str], Any]) -> None:
        super().__init__(inner, client)
        self.announce = announce
        """``announce(call_id, terminal_id)``: the coroutine that shows the terminal in the call."""

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        command = call.input.get("command")
        if call.input.get("run_in_background") or not isinstance(command, str) or not command.strip():
            return self.inner.call(call, env)
        rerouted = self.inner._reroute_patch(command, call, env)
        if rerouted is not None:
            return rerouted
        from acp.schema import EnvVariable

        from cox.actors.tools.bash import SandboxMissing, _result
        from cox.actors.tools.shell_env import command_environment
        from cox.actors.tools.spool import Spool
        from cox.policy.sandbox import remove_planted

        try:
            argv, policy = self.inner._prepare(command, env, call.risk is Risk.READ_ONLY)
        except SandboxMissing as exc:
            return ToolResult.error(str(exc))
        child_env, _ = command_environment(env.services.env_keep)
        timeout = min(max(float(call.input.get("timeout") or env.bash_timeout_s), 1.0), env.bash_max_timeout_s)
        c, sid = self.client, self.client.session_id
        # From the moment it is asked for until it is released, the terminal counts as under way
        # (``Client.settling``): a cancel at any point still has the prompt's answer wait for its
        # kill and release. Its creation is not cancellable for the same reason: a terminal the
        # editor made is always killed (the cancel callback below runs at once if the call was
        # cancelled meanwhile) and released.
        released: concurrent.futures.Future[None] = concurrent.futures.Future()
        c.settling.add(released)
        released.add_done_callback(c.settling.discard)
        try:
            made = c.call(None, lambda conn: conn.create_terminal(
                session_id=sid, command=argv[0], args=argv[1:], cwd=str(env.cwd),
                env=[EnvVariable(name=k, value=v) for k, v in child_env.items()], output_byte_limit=OUTPUT_LIMIT))
        except BaseException:
            released.set_result(None)
            raise
        tid = made.terminal_id
        try:
            c.call(None, lambda conn: self.announce(call.id, tid))
        except Exception:
            log.exception("showing terminal %s failed", tid)
        killed = timed_out = False
        code: int | None = None
        output = ""

        async def end(conn: Any) -> None:  # kill, then release: one request after the other
            try:
                await conn.kill_terminal(session_id=sid, terminal_id=tid)
            finally:
                try:
                    await conn.release_terminal(session_id=sid, terminal_id=tid)
                finally:
                    released.set_result(None)

        def kill() -> None:  # on the interrupting thread, at once (as bash's SIGTERM is); the
            c.soon(end)      # prompt's answer waits for it (bridge.Client.settling)

        unregister = env.cancel.on_cancel(kill)
        try:
            try:
                done = c.call(env, lambda conn: conn.wait_for_terminal_exit(session_id=sid, terminal_id=tid),
                              timeout=timeout)
                code = done.exit_code
            except concurrent.futures.CancelledError:
                killed = True  # ``end`` kills and releases it; this call's result is not read
            except TimeoutError:
                timed_out = True
                c.call(None, lambda conn: conn.kill_terminal(session_id=sid, terminal_id=tid), timeout=KILL_WAIT_S)
            if not killed:
                shown = c.call(None, lambda conn: conn.terminal_output(session_id=sid, terminal_id=tid))
                output = shown.output
                if code is None and shown.exit_status is not None:
                    code = shown.exit_status.exit_code
        finally:
            unregister()
            if not killed:
                try:
                    c.call(None, lambda conn: conn.release_terminal(session_id=sid, terminal_id=tid),
                           timeout=KILL_WAIT_S)
                except Exception as exc:
                    log.warning("terminal/release %s failed: %s", tid, exc)
                finally:
                    released.set_result(None)
            if policy is not None:
                remove_planted(policy.must_not_appear)
                tmp = env.services.session_tmp
                if tmp is not None:
                    tmp.done_with(policy.tmp)
        out, err = Spool(), Spool()
        try:
            out.write(output.encode("utf-8", "replace"))
            result = _result(-1 if code is None else code, out, err, timeout, timed_out, killed, env)
        finally:
            out.close()
            err.close()
        result.meta["terminal_id"] = tid
        return result


def terminal_update(session: Any, call_id: str, terminal_id: str) -> Any:
    """The coroutine :class:`Terminal` announces with: the session's consumer shows the terminal
    in the call, in order with the call's other updates (and not once the call ended)."""
    from .session import TerminalShown

    async def send() -> None:
        session.queue.put_nowait(TerminalShown(call_id, terminal_id))

    return send()
