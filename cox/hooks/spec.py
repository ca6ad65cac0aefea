"""One configured hook, and the parser of Claude Code's ``"hooks"`` object into them.

The shape (Claude Code's settings.json, and cox's ``[hooks]`` table, the same written in TOML)::

    {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}

Only ``command`` hooks exist in cox; another ``type`` (``prompt``, ``http``…) is a warning. A
malformed entry is a warning naming its source and place, and the other entries still load.
"""

from __future__ import annotations

import re
from typing import Any

from cox.slim import dataclass

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
          "PermissionRequest", "Notification", "Stop", "SubagentStop", "PreCompact", "SessionEnd")
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
OPTIONS = frozenset({"sandbox"})
"""Keys of cox's ``[hooks]`` table that are not events (``sandbox = false``: run hooks unconfined)."""
DEFAULT_TIMEOUT_S = 60.0  # Claude Code's


@dataclass(frozen=True)
class HookSpec:
    event: str
    matcher: str
    command: str
    timeout_s: float
    source: str
    """Where it was configured: a file path (and for cox's config, ``[hooks]``)."""

    def matches(self, names: tuple[str, ...]) -> bool:
        """Does the matcher take any of ``names`` (for tool events: cox's and Claude Code's names
        of the tool)? Empty or ``*`` takes all; else a regular expression over the whole name
        (``Edit|Write``, ``mcp__github__.*``); one that is not a valid expression matches its
        ``|``-separated words exactly."""
        m = self.matcher
        if m in ("", "*"):
            return True
        try:
            pattern = re.compile(m)
        except re.error:
            words = set(m.split("|"))
            return any(n in words for n in names)
        return any(pattern.fullmatch(n) for n in names)


def parse_hooks(obj: Any, source: str) -> tuple[list[HookSpec], list[str]]:
    """The hooks of one ``"hooks"`` object, and a warning for everything skipped."""
    specs: list[HookSpec] = []
    warnings: list[str] = []
    if not isinstance(obj, dict):
        return [], [f"{source}: hooks is not an object (event name → list of matchers); its hooks are skipped"]
    for event, groups in obj.items():
        if event in OPTIONS:
            continue
        if event not in EVENTS:
            warnings.append(f"{source}: hooks.{event} is not a hook event cox knows "
                            f"(known: {', '.join(EVENTS)}); skipped")
            continue
        if not isinstance(groups, list):
            warnings.append(f"{source}: hooks.{event} is not a list of {{matcher, hooks}} entries; skipped")
            continue
        for i, group in enumerate(groups):
            where = f"{source}: hooks.{event}[{i}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks", None), list):
                warnings.append(f"{where} has no list of hooks; skipped")
                continue
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                warnings.append(f"{where}.matcher is not a string; skipped")
                continue
            for j, hook in enumerate(group["hooks"]):
                spec, problem = _one(hook, event, matcher, source, f"{where}.hooks[{j}]")
                if spec is not None:
                    specs.append(spec)
                if problem:
                    warnings.append(problem)
    return specs, warnings


def _one(hook: Any, event: str, matcher: str, source: str, where: str) -> tuple[HookSpec | None, str | None]:
    if not isinstance(hook, dict):
        return None, f"{where} is not an object; skipped"
    kind = hook.get("type", "command")
    if kind != "command":
        return None, f"{where} is a {kind!r} hook; cox runs only command hooks; skipped"
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        return None, f"{where} has no command; skipped"
    timeout = hook.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        return None, f"{where}.timeout must be a positive number of seconds; skipped"
    return HookSpec(event, matcher, command, float(timeout), source), None
