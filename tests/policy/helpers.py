"""Helpers for the policy tests: an engine over a fixed home and root, and tool calls built the
way the tools build them (bash calls carry classify's risk, segments and opacity)."""

from __future__ import annotations

from collections.abc import Sequence

from cox.policy.bash import classify
from cox.policy.permission import Engine, Outcome
from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk, SandboxMode, ToolCall

HOME = "/home/alice"
ROOT = "/repo"


def bash(line: str) -> ToolCall:
    c = classify(line)
    return ToolCall(id="c1", name="bash", input={"command": line}, risk=c.risk, subject=line,
                    segments=list(c.segments), opaque=c.opaque)


def call(name: str, subject: str, risk: Risk = Risk.READ_ONLY) -> ToolCall:
    return ToolCall(id="c1", name=name, input={}, risk=risk, subject=subject)


def engine(allow: Sequence[str] = (), ask: Sequence[str] = (), deny: Sequence[str] = (), *,
           mode: str = "default", origins: dict[str, str] | None = None, default_deny: bool = True) -> Engine:
    return Engine.compile(allow, ask, deny, home=HOME, roots=[ROOT], mode=mode, origins=origins,
                          default_deny=default_deny)


def decide(e: Engine, c: ToolCall | str, mode: PermissionMode = PermissionMode.DEFAULT,
           policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST, sandbox: SandboxMode = SandboxMode.WORKSPACE_WRITE,
           grants: Sequence[str] = ()) -> Outcome:
    if isinstance(c, str):
        c = bash(c)
    return e.decide(c, mode, policy, sandbox, list(grants))


def kind(e: Engine, c: ToolCall | str, mode: PermissionMode = PermissionMode.DEFAULT,
         policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST, sandbox: SandboxMode = SandboxMode.WORKSPACE_WRITE,
         grants: Sequence[str] = ()) -> str:
    return decide(e, c, mode, policy, sandbox, grants).kind
