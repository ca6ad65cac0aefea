"""Hooks the client registered at ``initialize`` (the SDK's ``hooks=`` option), run at cox's
hook points by asking the client (``hook_callback``) instead of running a command.

The registration is Claude Code's: per event a list of ``{matcher, hookCallbackIds, timeout,
onFailure}``. At a hook point each matching callback is asked with Claude Code's hook input
(tool names and fields as ``spelling.to_claude`` spells them); its answer is read exactly as a
command hook's JSON stdout is (``cox.hooks.answer.interpret``), and the answers of the command
hooks and the callbacks are folded by the same ``merge``: a deny from either wins. A callback
that fails or does not answer in time is a warning, or — ``onFailure: "block"`` — a deny of the
call (a guard set to fail closed stays closed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cox.actors.tools.spelling import to_claude, to_cox
from cox.hooks.answer import interpret, merge
from cox.hooks.run import Outcome
from cox.hooks.session import MAX_STOP_CONTINUES, hook_input
from cox.hooks.spec import TOOL_EVENTS, HookSpec
from cox.slim import dataclass

from .ids import ulid_to_uuid
from .outgoing import ClientGone, Outgoing

DEFAULT_TIMEOUT_S = 60.0


@dataclass
class Callback:
    spec: HookSpec
    callback_id: str
    blocks_on_failure: bool


class ClientHooks:
    def __init__(self, outgoing: Outgoing, *, session_id: str, cwd: str, transcript_path: str = "",
                 permission_mode: str = "default") -> None:
        self.outgoing = outgoing
        self.session_id = ulid_to_uuid(session_id)
        self.cwd = cwd
        self.transcript_path = transcript_path
        self.permission_mode = permission_mode
        self.callbacks: list[Callback] = []
        self.stop_continues = 0

    def register(self, config: Any) -> list[str]:
        """``initialize``'s ``hooks``; returns what could not be registered, as sentences."""
        problems: list[str] = []
        if not isinstance(config, Mapping):
            return problems if config is None else ["initialize: 'hooks' is not an object; no hook callbacks registered"]
        for event, matchers in config.items():
            for entry in matchers if isinstance(matchers, list) else []:
                if not isinstance(entry, Mapping):
                    continue
                ids = entry.get("hookCallbackIds")
                timeout = entry.get("timeout")
                seconds = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else DEFAULT_TIMEOUT_S
                for callback_id in ids if isinstance(ids, list) else []:
                    spec = HookSpec(str(event), str(entry.get("matcher") or ""), f"hook callback {callback_id}",
                                    seconds, "the SDK client")
                    self.callbacks.append(Callback(spec, str(callback_id), entry.get("onFailure", "continue") != "continue"))
        return problems

    def run(self, point: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        if point == "UserPromptSubmit":
            self.stop_continues = 0
        chosen = self._chosen(point, payload)
        if not chosen:
            return None
        data = self._input(point, payload)
        answers = [self._ask(c, data, payload) for c in chosen]
        reply = merge(answers)
        if reply and point == "PreToolUse" and isinstance(reply.get("input"), dict):
            _, reply["input"] = to_cox(data["tool_name"], reply["input"])
        if reply and point == "Stop" and reply.get("continue"):
            self.stop_continues += 1  # a callback that always says "continue" would loop the model forever
            if self.stop_continues > MAX_STOP_CONTINUES:
                reply.pop("continue")
                reply.setdefault("warnings", []).append(
                    f"a Stop hook callback asked to continue {MAX_STOP_CONTINUES} times in a row; the turn ends")
        elif point == "Stop":
            self.stop_continues = 0
        return reply

    def _chosen(self, point: str, payload: dict[str, Any]) -> list[Callback]:
        if point in TOOL_EVENTS:
            name = str(payload.get("tool", ""))
            names: tuple[str, ...] | None = (to_claude(name, payload.get("input") or {})[0], name)
        else:
            names = None
        return [c for c in self.callbacks if c.spec.event == point and (names is None or c.spec.matches(names))]

    def _ask(self, callback: Callback, data: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        request = {"subtype": "hook_callback", "callback_id": callback.callback_id, "input": data,
                   "tool_use_id": data.get("tool_use_id")}
        try:
            output = self.outgoing.ask(request, callback.spec.timeout_s, payload.get("scope"))
        except ClientGone as exc:
            why = f"the SDK's {callback.spec.event} hook callback {callback.callback_id} failed ({exc})"
            if callback.blocks_on_failure and callback.spec.event in ("PreToolUse", "PermissionRequest"):
                return {"deny": f"{why}; its onFailure is block"}
            if callback.blocks_on_failure and callback.spec.event == "UserPromptSubmit":
                return {"block": f"{why}; its onFailure is block"}
            return {"warnings": [f"{why}; skipped"]}
        stdout = json.dumps(output, ensure_ascii=False, default=str).encode()
        return interpret(callback.spec, Outcome(0, stdout))

    def _input(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The hook input a command hook gets (``cox.hooks.session.hook_input``), with this
        dialect's UUID session id."""
        return hook_input(point, payload, session_id=self.session_id, transcript_path=self.transcript_path,
                          cwd=self.cwd, permission_mode=self.permission_mode,
                          stop_active=point == "Stop" and self.stop_continues > 0)

class BothHooks:
    """The session's one hook runner when the client registered callbacks: the command hooks
    (``cox.hooks.SessionHooks``, when any is in effect) and the callbacks, answers merged."""

    def __init__(self, commands: Any, client: ClientHooks) -> None:
        self.commands = commands
        self.client = client

    def run(self, point: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        first: dict[str, Any] | None = self.commands.run(point, payload) if self.commands is not None else None
        if first and first.get("deny"):
            return first  # denied already: the client is not asked about a call that will not run
        if first and point == "PreToolUse" and isinstance(first.get("input"), dict):
            payload = {**payload, "input": first["input"]}
        second = self.client.run(point, payload)
        return merge([first or {}, second or {}])
