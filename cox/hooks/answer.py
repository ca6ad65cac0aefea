"""What a command hook's exit code and output mean, in Claude Code's terms, as the session seam's
answer (``deny``, ``input``, ``prompt``, ``block``, ``continue``, ``context``, plus ``warnings``
and ``notices`` for the person).

- exit 2 blocks, its stderr the reason: a PreToolUse or PermissionRequest call is denied, a
  prompt blocked, a Stop continued with it; after a tool call (PostToolUse, PostToolUseFailure)
  it is fed to the model with the result; for the other events it is a warning.
- exit 0: a stdout that is a JSON object is an answer — ``decision: "block"`` with ``reason``,
  ``continue: false`` with ``stopReason``, ``systemMessage``, and in ``hookSpecificOutput``
  ``permissionDecision`` (``deny``; ``allow`` and ``ask`` leave cox's own permission decision as
  it is: a hook never loosens it) with ``permissionDecisionReason``, ``updatedInput``,
  ``additionalContext``, and PermissionRequest's ``decision.behavior``. Plain text is context
  for UserPromptSubmit and SessionStart (as in Claude Code) and ignored elsewhere.
- any other exit, a timeout, a hook that could not start, output that is not text or a JSON
  object that does not parse: a warning naming the hook, and no answer (the turn goes on as if
  the hook were absent).
"""

from __future__ import annotations

import json
from typing import Any

from .run import Outcome
from .spec import HookSpec

CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
MAX_TEXT = 10_000  # characters of a hook's text that reach the model


def _text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    return text.strip()[:MAX_TEXT]


def _name(spec: HookSpec) -> str:
    cmd = spec.command if len(spec.command) <= 72 else spec.command[:24] + "…" + spec.command[-47:]  # the script's name
    return f"{spec.event} hook `{cmd}` ({spec.source})"


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:200] if text else ""


def interpret(spec: HookSpec, outcome: Outcome) -> dict[str, Any]:
    """The seam's answer to one hook run (an empty dict: no answer)."""
    event = spec.event
    if outcome.error is not None:
        return {"warnings": [f"{_name(spec)} {outcome.error}; skipped"]}
    if outcome.timed_out:
        return {"warnings": [f"{_name(spec)} did not finish within {spec.timeout_s:g} s and was stopped; skipped "
                             "(a hook's `timeout` sets its limit)"]}
    if outcome.code == 2:
        reason = _text(outcome.stderr) or f"blocked by a {event} hook"
        return _block(event, reason, spec)
    if outcome.code != 0:
        why = _first_line(outcome.stderr)
        return {"warnings": [f"{_name(spec)} failed (exit {outcome.code}{': ' + why if why else ''}); skipped"]}
    text = _text(outcome.stdout)
    if text is None:
        return {"warnings": [f"{_name(spec)} printed bytes that are not text; its output is ignored"]}
    if not text:
        return {}
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return _json(event, data, spec)
        return {"warnings": [f"{_name(spec)} printed something that is not a JSON object; its output is ignored"]}
    if event in CONTEXT_EVENTS:
        return {"context": text}
    return {}


def _block(event: str, reason: str, spec: HookSpec) -> dict[str, Any]:
    if event in ("PreToolUse", "PermissionRequest"):
        return {"deny": reason}
    if event == "UserPromptSubmit":
        return {"block": reason}
    if event in ("Stop", "SubagentStop"):
        return {"continue": reason}
    if event in ("PostToolUse", "PostToolUseFailure"):
        return {"context": reason}
    return {"warnings": [f"{_name(spec)} exited 2 ({reason[:200]}); a {event} hook cannot block"]}


def _json(event: str, data: dict[str, Any], spec: HookSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(data.get("systemMessage"), str) and data["systemMessage"]:
        out["notices"] = [data["systemMessage"][:MAX_TEXT]]
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
    if data.get("continue") is False:
        stop = data.get("stopReason") if isinstance(data.get("stopReason"), str) else ""
        if event in ("PreToolUse", "PermissionRequest", "UserPromptSubmit"):
            out.update(_block(event, stop or reason or f"a {event} hook stopped the turn", spec))
            return out
        if event in ("Stop", "SubagentStop"):
            return out  # it may stop: nothing to continue with
    decision = data.get("decision")
    if decision == "block":
        out.update(_block(event, reason or f"blocked by a {event} hook", spec))
    if event == "PreToolUse":
        verdict = specific.get("permissionDecision")
        why = specific.get("permissionDecisionReason")
        if verdict == "deny":
            out["deny"] = why if isinstance(why, str) and why else reason or "denied by a PreToolUse hook"
        updated = specific.get("updatedInput")
        if isinstance(updated, dict) and "deny" not in out:
            out["input"] = updated
    if event == "PermissionRequest":
        behaviour = specific.get("decision")
        if isinstance(behaviour, dict) and behaviour.get("behavior") == "deny":
            message = behaviour.get("message")
            out["deny"] = message if isinstance(message, str) and message else "denied by a PermissionRequest hook"
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        out["context"] = "\n".join(filter(None, [out.get("context"), context.strip()[:MAX_TEXT]]))
    return out


def merge(answers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Several hooks' answers to one event: a deny or block wins, texts join, the last input stands."""
    out: dict[str, Any] = {}
    for a in answers:
        for key in ("warnings", "notices"):
            if a.get(key):
                out.setdefault(key, []).extend(a[key])
        for key in ("deny", "block", "continue", "context"):
            if a.get(key):
                out[key] = "\n".join(filter(None, [out.get(key), a[key]]))
        if isinstance(a.get("input"), dict):
            out["input"] = a["input"]
    if "deny" in out:
        out.pop("input", None)
    return out or None
