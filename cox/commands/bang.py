"""A command's ``!`…``` parts, run the way a model's bash call would be.

Why: a repository's command file is as hostile as the repository. Its shell lines must not run
on a person's machine because they typed ``/review``: each is described by the bash tool,
judged by the session's permission engine (its rules, mode and approval policy) and run by the
bash tool in the session's sandbox, exactly as the model's own call of that line would be.

``allowed-tools`` in the command's front matter only narrows what its lines may be, whoever
wrote it: a line it does not allow (read-only lines always are) is refused. The session's
PreToolUse and PermissionRequest hooks see each line as they see the model's calls. A user's own file
may also grant: a line its ``allowed-tools`` covers runs without the question the engine would
ask (a deny rule still wins). A repository's file never grants; what the engine would ask
about is put to the person (``ask``), refused when no one can answer (``--approve never``, or a
surface without a way to ask), and every refusal stops the command with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cox.protocol.types import ApprovalPolicy, PermissionMode, ToolCall, new_ulid

from .expand import CommandError
from .files import Command

__all__ = ["BangRunner"]

Ask = Callable[[ToolCall, str], bool]
"""Puts one line to the person (the call, the engine's reason); True: run it."""


class BangRunner:
    """Runs ``!`…``` lines for one session: its bash tool, engine and settings."""

    def __init__(self, bash: Any, engine: Any, settings: Any, ask: Ask | None = None, hooks: Any = None) -> None:
        self.bash = bash
        self.engine = engine
        self.s = settings
        self.ask = ask
        self.hooks = hooks
        """The session's hooks (``cox.hooks``): PreToolUse and PermissionRequest see each line as
        they see a model's bash call, and may deny it or change its input."""

    def _hook(self, point: str, call: ToolCall) -> dict[str, Any]:
        if self.hooks is None:
            return {}
        reply = self.hooks.run(point, {"tool": call.name, "input": call.input, "subject": call.subject, "id": call.id,
                                       "mode": str(PermissionMode(self.s.permission_mode).value)})
        return reply or {}

    def __call__(self, line: str, command: Command) -> str:
        call, env = self._described(line)
        what = f"/{command.name}'s `{line}` ({command.source})"
        reply = self._hook("PreToolUse", call)
        if reply.get("deny"):
            raise CommandError(f"{what} is denied by a PreToolUse hook: {reply['deny']}; not run")
        if isinstance(reply.get("input"), dict):
            call = self.bash.describe(ToolCall(id=call.id, name="bash", input=reply["input"]), env)
        outcome = self.engine.decide(call, self.s.permission_mode, ApprovalPolicy.ON_REQUEST, self.s.sandbox_mode, [])
        kind = str(getattr(outcome.kind, "value", outcome.kind))
        if command.allowed_tools is not None and kind != "deny":
            from cox.policy.permission import Engine

            own = Engine.compile(allow=list(command.allowed_tools), home=self.s.home, roots=self.s.roots,
                                 default_deny=False)
            if str(own.decide(call, PermissionMode.DEFAULT).kind) != "allow":
                raise CommandError(f"{what} is not among the command's allowed-tools "
                                   f"({', '.join(command.allowed_tools) or 'none'}); not run")
            if kind == "ask" and command.scope == "user":
                kind = "allow"  # the person's own file granted it
        if kind == "deny":
            raise CommandError(f"{what} is denied: {outcome.reason}; not run")
        if kind == "ask":
            if ApprovalPolicy(self.s.approval_policy) is ApprovalPolicy.NEVER:
                raise CommandError(f"{what} needs approval ({outcome.reason}) and the approval policy is never; "
                                   "not run. An allow rule for it (Bash(...)) lets it run")
            denied = self._hook("PermissionRequest", call).get("deny")
            if denied:
                raise CommandError(f"{what} is denied by a PermissionRequest hook: {denied}; not run")
            if self.ask is None:
                raise CommandError(f"{what} needs approval ({outcome.reason}), and this surface cannot ask; not run")
            if not self.ask(call, str(outcome.reason)):
                raise CommandError(f"{what}: you declined it; the command was not sent")
        result = self.bash.call(call, env)
        return str(result.visible).rstrip("\n")

    def _described(self, line: str) -> tuple[ToolCall, Any]:
        from cox.actors.tools.base import ToolEnv, ToolServices
        from cox.policy.sandbox import read_deny_patterns
        from cox.supervisors.cancel import CancelScope

        s = self.s
        services = ToolServices(sandbox_mode=s.sandbox_mode, writable_roots=tuple(s.writable_roots),
                                network=s.network, read_deny=tuple(read_deny_patterns(getattr(self.engine, "deny", ()))),
                                cox_home=s.cox_home, env_keep=tuple(s.env_keep))
        env = ToolEnv(roots=list(s.roots), cwd=s.cwd, cancel=CancelScope(), bash_timeout_s=s.bash_timeout_s,
                      bash_max_timeout_s=s.bash_max_timeout_s, home=s.home, services=services,
                      reads=self.engine.read_guard() if hasattr(self.engine, "read_guard") else None)
        call = ToolCall(id=f"cmd_{new_ulid()}", name="bash", input={"command": line})
        return self.bash.describe(call, env), env
