"""The object a session calls at each hook point (``cox.protocol.interfaces.Hook``): it picks the
hooks whose event and matcher fit, gives each the event as Claude Code's JSON on stdin, runs them
(several at once in parallel), and folds their answers into the seam's.

The seam's points and payloads (what the session actor passes) become Claude Code's input:
``session_id``, ``transcript_path`` (cox's rollout), ``cwd``, ``permission_mode``,
``hook_event_name`` and the event's own fields (``prompt``; ``tool_name``, ``tool_input``,
``tool_use_id``, ``tool_response`` / ``error``; ``stop_hook_active``; ``source``; ``trigger``;
``message``, ``notification_type``; ``reason``). A tool call is shown in Claude Code's spelling
(``cox.actors.tools.spelling``, the one mapping): ``tool_name`` ``Bash``, ``Read``, ``MultiEdit``…
where it has a counterpart, else cox's name (``apply_patch``, ``mcp__srv__tool``); ``tool_input``
in Claude Code's fields (an absolute ``file_path``, Bash's ``timeout`` in milliseconds, Grep's
``output_mode`` / ``-i`` / ``-C``, TodoWrite's ``activeForm``…), with cox's own beside them as
``cox_tool_name`` / ``cox_tool_input``. A PreToolUse ``updatedInput`` is read in the same
spelling and mapped back to cox's input. Matchers see both names, and ``Edit``/``MultiEdit`` match
every tool that edits a file in place (``edit``, ``apply_patch``), as in Claude Code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.actors.tools.spelling import claude_name, to_claude, to_cox
from cox.slim import dataclass

from .spec import TOOL_EVENTS, HookSpec

if TYPE_CHECKING:  # how a hook runs and what it answered load with the first hook a session has
    from .run import Outcome, Wrap
    from .sources import Loaded
    from .zygote import HookSandbox

EDIT_MATCHERS: dict[str, tuple[str, ...]] = {"edit": ("Edit", "MultiEdit"), "apply_patch": ("Edit", "MultiEdit")}
"""Names a matcher also sees beyond the two spellings: Claude Code's edit hooks cover every
in-place edit, whichever form the call took."""
MATCH_KEY = {"SessionStart": "source", "PreCompact": "trigger", "Notification": "notification_type",
             "SessionEnd": "reason"}
SESSION_END_S = 5.0
"""The most a SessionEnd hook may take: the session closes within its supervisor's 10 s."""
MAX_STOP_CONTINUES = 5
"""A Stop hook that always says "continue" would loop the model forever: after this many in a row
in one turn, its answer is ignored with a warning."""


def tool_names(name: str, given: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The names a matcher sees for cox tool ``name``: Claude Code's (``MultiEdit`` for an edit
    with ``edits``) first, then the edit aliases, then cox's own."""
    return tuple(dict.fromkeys((claude_name(name, given), *EDIT_MATCHERS.get(name, ()), name)))


@dataclass
class SessionHooks:
    specs: list[HookSpec]
    session_id: str
    cwd: Path
    transcript_path: str
    permission_mode: str
    env: Mapping[str, str]
    wrap: Wrap | None = None
    sandbox: HookSandbox | None = None
    """The session's one hook sandbox (``zygote.py``), when hooks are sandboxed; else each runs alone."""
    observe: Any = None
    """Told of each hook as it runs (Claude Code's ``--include-hook-events``): ``observe.started(point,
    spec, names)`` returns a token, ``observe.ended(token, outcome)`` follows; None: nobody asks."""
    stop_continues: int = field(default=0, init=False)
    # SubagentStop's "continue"s in a row, by agent id: each child's own guard (children share these hooks)
    agent_continues: dict[str, int] = field(default_factory=dict, init=False)

    def run(self, point: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        if point == "UserPromptSubmit":
            self.stop_continues = 0
        chosen = self._chosen(point, payload)
        if not chosen:
            return None
        from .answer import interpret, merge

        data = self._input(point, payload)
        stdin = json.dumps(data, ensure_ascii=False, default=str).encode()
        outcomes = self._run_all(chosen, stdin, payload.get("scope"), point, self._names(point, payload))
        reply = merge([interpret(spec, outcome) for spec, outcome in zip(chosen, outcomes, strict=True)])
        if reply is None:
            if point == "SubagentStop":
                self.agent_continues.pop(str(payload.get("agent_id", "")), None)  # its turn ends
            return None
        if point == "PreToolUse" and isinstance(reply.get("input"), dict):
            reply["input"] = to_cox(str(data.get("tool_name", "")), reply["input"])[1]
        if point == "Stop" and reply.get("continue"):
            self.stop_continues += 1
            if self.stop_continues > MAX_STOP_CONTINUES:
                reply.pop("continue")
                reply.setdefault("warnings", []).append(
                    f"a Stop hook asked to continue {MAX_STOP_CONTINUES} times in a row; the turn ends")
        if point == "SubagentStop":
            self._agent_continue(str(payload.get("agent_id", "")), reply)
        return reply

    def _agent_continue(self, agent: str, reply: dict[str, Any]) -> None:
        """A child's SubagentStop guard, as Stop's for the parent: its "continue"s in a row are
        counted per agent (the children share these hooks); the turn that ends resets it."""
        if not reply.get("continue"):
            self.agent_continues.pop(agent, None)
            return
        count = self.agent_continues.get(agent, 0) + 1
        if count > MAX_STOP_CONTINUES:
            reply.pop("continue")
            reply.setdefault("warnings", []).append(
                f"a SubagentStop hook asked agent {agent} to continue {MAX_STOP_CONTINUES} times in a row; it stops")
            self.agent_continues.pop(agent, None)
            return
        self.agent_continues[agent] = count

    def _names(self, point: str, payload: dict[str, Any]) -> tuple[str, ...] | None:
        """What the event's matchers are matched against (None: the event has no matcher)."""
        if point in TOOL_EVENTS:
            return tool_names(str(payload.get("tool", "")), payload.get("input") or {})
        if point in MATCH_KEY:
            return (str(payload.get(MATCH_KEY[point], "")),)
        return None

    def _chosen(self, point: str, payload: dict[str, Any]) -> list[HookSpec]:
        names = self._names(point, payload)
        chosen: list[HookSpec] = []
        seen: set[str] = set()
        for spec in self.specs:
            if spec.event != point or spec.command in seen:  # one command runs once (Claude Code)
                continue
            if names is None or spec.matches(names):
                seen.add(spec.command)
                chosen.append(spec)
        return chosen

    def _run_all(self, chosen: list[HookSpec], stdin: bytes, scope: Any, point: str,
                 names: tuple[str, ...] | None = None) -> list[Outcome]:
        env = {**self.env, "CLAUDE_PROJECT_DIR": str(self.cwd), "COX_PROJECT_DIR": str(self.cwd),
               "COX_SESSION_ID": self.session_id}
        from .run import run_command

        def one(spec: HookSpec) -> Outcome:
            observe = self.observe
            if observe is None:
                return run(spec)
            token = observe.started(point, spec, names)
            outcome = run(spec)
            observe.ended(token, outcome)
            return outcome

        def run(spec: HookSpec) -> Outcome:
            timeout = min(spec.timeout_s, SESSION_END_S) if point == "SessionEnd" else spec.timeout_s
            if self.sandbox is not None:
                outcome = self.sandbox.run(spec.command, stdin, cwd=self.cwd, env=env, timeout_s=timeout, cancel=scope)
                if outcome is not None:
                    return outcome
            return run_command(spec.command, stdin, cwd=self.cwd, env=env, timeout_s=timeout, wrap=self.wrap,
                               cancel=scope)

        if len(chosen) == 1:
            return [one(chosen[0])]
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(chosen))) as pool:
            return list(pool.map(one, chosen))

    def close(self) -> None:
        """The session has run its last hook (SessionEnd): end its hook sandbox."""
        if self.sandbox is not None:
            self.sandbox.close()

    def _input(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        agent = str(payload.get("agent_id", ""))
        return hook_input(point, payload, session_id=self.session_id, transcript_path=self.transcript_path,
                          cwd=str(self.cwd), permission_mode=self.permission_mode,
                          stop_active=self.agent_continues.get(agent, 0) > 0 if point == "SubagentStop"
                          else self.stop_continues > 0)


def hook_input(point: str, payload: Mapping[str, Any], *, session_id: str, transcript_path: str, cwd: str,
               permission_mode: str, stop_active: bool) -> dict[str, Any]:
    """Claude Code's hook input for the seam's ``point`` and ``payload`` — what a command hook
    reads on stdin and an SDK client's hook callback is given (``claude_code.hooks``).
    ``stop_active``: a Stop (or this agent's SubagentStop) hook asked to continue already."""
    data: dict[str, Any] = {"session_id": session_id, "transcript_path": transcript_path, "cwd": cwd,
                            "permission_mode": payload.get("mode", permission_mode), "hook_event_name": point}
    if point in TOOL_EVENTS:
        name = str(payload.get("tool", ""))
        given = payload.get("input") or {}
        data["tool_name"], data["tool_input"] = to_claude(name, given, cwd=cwd)
        data["cox_tool_name"] = name
        data["cox_tool_input"] = given
        data["tool_use_id"] = payload.get("id", "")
        if point == "PostToolUse":
            data["tool_response"] = {"output": payload.get("output", ""), "status": payload.get("status", "")}
        elif point == "PostToolUseFailure":
            data["error"] = payload.get("output", "")
            data["is_interrupt"] = payload.get("status") == "aborted"
    elif point == "UserPromptSubmit":
        data["prompt"] = payload.get("prompt", "")
    elif point == "Stop":
        data["stop_hook_active"] = stop_active
    elif point == "SubagentStop":  # Claude Code's: the parent's session, the agent named
        agent = str(payload.get("agent_id", ""))
        data["stop_hook_active"] = stop_active
        data["agent_id"] = agent
        data["agent_type"] = str(payload.get("agent_type", ""))
        if transcript_path and agent:
            data["agent_transcript_path"] = os.path.join(os.path.dirname(transcript_path), agent + ".jsonl")
    elif point == "PreCompact":
        data["trigger"] = payload.get("trigger", "manual")
        data["custom_instructions"] = payload.get("focus") or ""
    elif point == "Notification":
        data["message"] = payload.get("message", "")
        data["notification_type"] = payload.get("notification_type", "")
    elif point == "SessionStart":
        data["source"] = payload.get("source", "startup")
        data["model"] = payload.get("model", "")
    elif point == "SessionEnd":
        data["reason"] = payload.get("reason", "other")
    return data

def open_loaded(loaded: Loaded, *, settings: Any, transcript_path: Path) -> SessionHooks:
    """The object the session calls for the hooks ``loaded`` found (``cox.hooks.open_hooks``, which
    imports this module only when some hook is in effect)."""
    from cox.actors.store.layout import cox_home as default_cox_home
    from cox.actors.tools.shell_env import command_environment
    from cox.protocol.types import SandboxMode

    from .sandbox import hook_wrapper

    home = settings.cox_home or default_cox_home()
    child_env, _ = command_environment(tuple(settings.env_keep))
    wrap = None
    if loaded.sandbox:
        from cox.policy.paths import write_roots

        wrap = hook_wrapper(SandboxMode(settings.sandbox_mode), [*write_roots(settings.roots), *settings.writable_roots],
                            network=settings.network, cwd=settings.cwd, home=settings.home, cox_home=Path(home),
                            commands=[s.command for s in loaded.specs])
    mode = getattr(settings.permission_mode, "value", str(settings.permission_mode))
    from .zygote import HookSandbox, sandboxed

    sandbox = HookSandbox(wrap, child_env) if wrap is not None and sandboxed(wrap) else None
    return SessionHooks(loaded.specs, settings.session_id, settings.cwd, str(transcript_path), mode,
                        child_env, wrap, sandbox)
