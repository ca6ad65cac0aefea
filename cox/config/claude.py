"""Claude Code's permission files, read as layers of cox's configuration.

Why: a person moving from Claude Code has written their rules once, in ``~/.claude/settings.json``
(``$CLAUDE_CONFIG_DIR/settings.json`` when that is set) and in a project's
``.claude/settings.json`` / ``.claude/settings.local.json``. A file they denied there must stay
denied in cox; reading ``CLAUDE.md`` but not these would send it to the model.

What is read, and only this: ``permissions.allow``, ``ask``, ``deny`` and ``defaultMode``.
Nothing else in these files (``env``, ``hooks``, ``apiKeyHelper``, ``model``, MCP settings,
``additionalDirectories`` …) is read: those name programs, endpoints or extra folders.

- The user file's rules all apply. Its ``defaultMode`` applies only when it is as strict as cox's
  own setting or stricter (``plan``); a looser mode (``acceptEdits``, ``bypassPermissions``) is
  ignored with a warning, since a mode chosen for one tool should not loosen another.
- A project file may only narrow: its ``deny`` and ``ask`` rules apply, its ``allow`` rules are
  ignored (one warning per file), its ``defaultMode`` the same as the user file's.
- Rules are Claude Code's grammar, which cox parses (:mod:`cox.policy.rules`), with four
  translations: a path rule's ``/path`` is relative to the project root in Claude Code, so it
  becomes cox's ``./path`` (each workspace root); a deny or ask path rule with no slash
  (``Read(.env)``, ``Read(*.pem)``) matches in every folder, as in gitignore, so it becomes
  ``Read(**/.env)`` (an allow rule keeps the narrower, root-only meaning); Claude's ``Bash(npm run *)`` is cox's
  ``Bash(npm run:*)``; a deny or ask rule on ``LS`` or ``NotebookRead`` becomes the same rule on
  ``Read``, which covers cox's ``ls`` and ``read`` tools (an allow rule on ``LS`` stays on cox's
  ``ls``). ``TodoWrite`` rules apply to cox's ``todo_write``, the same tool under cox's name: a
  deny written to keep the model off the plan list keeps it off in cox too (it is read-only, so
  an allow or ask rule changes nothing). Rules naming tools cox does not have (``ExitPlanMode``,
  ``KillShell`` …) are skipped: they cannot match anything.
- A rule cox cannot parse, or a ``*`` inside a Bash rule (cox matches Bash rules as exact text or
  ``prefix:*``), is skipped with a warning naming the file and line; a file that is not valid
  JSON, or whose ``permissions`` is not an object, is one warning and cox goes on without it. A
  settings file never stops cox and never drops the other layers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import field
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.protocol.types import PermissionMode
from cox.slim import dataclass

from .readfile import NotASettingsFile, read_settings_bytes

if TYPE_CHECKING:  # the line finder and the project rules load with the first settings file read
    from .lines import KeyPath
    from .project import Current, Keys

__all__ = ["ClaudeFile", "claude_verdict", "read_settings", "read_settings_text"]

KINDS = ("allow", "ask", "deny")
_PATH_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Grep", "Glob", "LS"})
_AS_READ = frozenset({"LS", "NotebookRead"})  # Claude tools whose deny/ask cox applies to Read
# Claude Code tools cox has no counterpart for: a rule on one of them cannot match a cox call.
_ABSENT = frozenset({"TodoRead", "ExitPlanMode", "KillShell", "KillBash", "BashOutput",
                     "SlashCommand", "NotebookRead", "EnterPlanMode", "AskUserQuestion", "LSP"})


@dataclass
class ClaudeFile:
    """What one settings file contributes: rules in cox's spelling, each with its line, the mode,
    and a warning for everything skipped."""

    path: str
    rules: dict[str, list[tuple[str, int | None]]] = field(default_factory=dict)
    mode: tuple[str, int | None] | None = None
    lines: dict[KeyPath, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def where(self, line: int | None) -> str:
        return f"{self.path}:{line}" if line else self.path


def read_settings(path: Path, *, home: str, roots: Sequence[str]) -> ClaudeFile | None:
    """The permission part of one Claude Code settings file; ``None`` when it does not exist.
    Never raises: every problem is a warning in the result."""
    name = str(path)
    out = ClaudeFile(name)
    try:
        text = read_settings_bytes(path).decode("utf-8-sig")
    except FileNotFoundError:
        return None
    except NotASettingsFile as exc:
        out.warnings.append(f"{name}: cannot read: it {exc.strerror}; cox goes on without it")
        return out
    except OSError as exc:
        out.warnings.append(f"{name}: cannot read ({exc.strerror or exc}); cox goes on without its permission rules")
        return out
    except UnicodeDecodeError as exc:
        out.warnings.append(f"{name}: not valid UTF-8 (byte {exc.start}); cox goes on without its permission rules")
        return out
    return read_settings_text(text, name, home=home, roots=roots)


def read_settings_text(text: str, name: str, *, home: str, roots: Sequence[str]) -> ClaudeFile:
    """The permission part of a settings document already read (``name`` says where it came
    from: a file, or ``--settings`` given as JSON). Never raises, as :func:`read_settings`."""
    out = ClaudeFile(name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        out.warnings.append(f"{name}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); cox goes on without "
                            "its permission rules")
        return out
    out.lines = json_lines(text)
    if not isinstance(data, dict):
        out.warnings.append(f"{name}: expected a JSON object, got {_kind(data)}; cox goes on without it")
        return out
    perms = data.get("permissions")
    if perms is None:
        return out
    if not isinstance(perms, dict):
        out.warnings.append(f"{out.where(out.lines.get(('permissions',)))}: permissions: expected an object, got "
                            f"{_kind(perms)}; cox goes on without this file's permission rules")
        return out
    for kind in KINDS:
        _read_rules(out, perms, kind, home, roots)
    mode = perms.get("defaultMode")
    if mode is not None:
        line = out.lines.get(("permissions", "defaultMode"))
        if not isinstance(mode, str) or mode not in {m.value for m in PermissionMode}:
            shown = json.dumps(mode)[:60]
            out.warnings.append(f"{out.where(line)}: ignored permissions.defaultMode: cox has no permission mode "
                                f"{shown} (it has {', '.join(m.value for m in PermissionMode)})")
        else:
            out.mode = (mode, line)
    return out


def _read_rules(out: ClaudeFile, perms: dict[str, Any], kind: str, home: str, roots: Sequence[str]) -> None:
    from cox.policy.rules import RuleError, parse_rule

    value = perms.get(kind)
    if value is None:
        return
    if not isinstance(value, list):
        out.warnings.append(f"{out.where(out.lines.get(('permissions', kind)))}: permissions.{kind}: expected a list "
                            f"of rule strings, got {_kind(value)}; cox goes on without these rules")
        return
    kept: list[tuple[str, int | None]] = []
    for index, item in enumerate(value):
        line = out.lines.get(("permissions", kind, index))
        if not isinstance(item, str):
            out.warnings.append(f"{out.where(line)}: ignored permissions.{kind} item {index + 1}: expected a rule "
                                f"string, got {_kind(item)}")
            continue
        rule, problem = translate(item, kind)
        if rule is None:
            if problem:
                out.warnings.append(f"{out.where(line)}: ignored rule {_shown(item)}: {problem}")
            continue
        try:
            parse_rule(rule, out.where(line), home=home, roots=roots)
        except RuleError as exc:
            out.warnings.append(f"{out.where(line)}: ignored rule {_shown(item)}: {exc.problem}")
            continue
        kept.append((rule, line))
    out.rules[kind] = kept


def translate(rule: str, kind: str) -> tuple[str | None, str]:
    """A Claude Code rule in cox's spelling, or ``(None, why)`` (``why`` empty for a rule on a
    tool cox does not have, which is skipped without a warning)."""
    text = rule.strip()
    name, paren, spec = text.partition("(")
    name = name.strip()
    if paren and not spec.endswith(")"):
        return text, ""  # let the parser say what is wrong
    spec = spec[:-1] if paren else ""
    if name in _AS_READ and kind != "allow":
        name = "Read"
    elif name in _ABSENT:
        return None, ""
    if not paren:
        return name, ""
    if name in _PATH_TOOLS and spec.startswith("/") and not spec.startswith("//"):
        spec = "." + spec  # Claude Code: /path is relative to the project root
    elif name in _PATH_TOOLS and kind != "allow" and _floating(spec):
        spec = "**/" + spec  # gitignore: a name without a slash matches at any depth
    if name == "Bash":
        body = spec.strip()
        if body.endswith(" *") and "*" not in body[:-2] and body[:-2].strip():
            spec = body[:-2].rstrip() + ":*"
        elif body != "*" and "*" in (body[:-2] if body.endswith(":*") else body):
            return None, ("cox matches Bash rules as the exact command or a prefix (Bash(npm run:*)); a '*' "
                          "elsewhere in the rule is not supported")
    return f"{name}({spec})", ""


def _floating(spec: str) -> bool:
    """A gitignore-style pattern with no slash but a trailing one (``.env``, ``*.pem``,
    ``secrets/``), which Claude Code matches in every folder, not only at the root."""
    body = spec.strip()
    return bool(body) and body != "*" and "/" not in body.rstrip("/") and not body.startswith(("~", "**"))


def claude_verdict(scope: str) -> Any:
    """The restriction for a settings file of ``scope`` (``user`` or ``project``), in the shape
    the loader's ``_restrict`` takes: why an entry is ignored, or ``None``."""

    def verdict(path: Keys, value: Any, current: Current, user: str) -> str | None:
        if path == ("permissions", "mode"):
            from .project import narrower_rank

            reason = narrower_rank(path, value, current)
            return f"{reason}; to use it with cox, set permissions.mode in {user}" if reason else None
        if scope == "project" and path == ("permissions", "allow") and value:
            return (f"a project's Claude settings may only narrow, so their {len(value)} allow rule(s) are not "
                    f"used; put allow rules in your ~/.claude/settings.json or {user}")
        return None

    return verdict


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number")


def _shown(rule: str) -> str:
    return json.dumps(rule, ensure_ascii=True)[:200]


# --------------------------------------------------------------------------------------------
# Lines of a JSON document


def json_lines(text: str) -> dict[KeyPath, int]:
    """The 1-based line on which each value of an (already valid) JSON document starts, by key
    path (object keys and list indexes); the first of duplicate keys wins."""
    from bisect import bisect_right

    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    decoder = json.JSONDecoder()
    out: dict[KeyPath, int] = {}
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in " \t\r\n":
            i += 1
        return i

    def value(i: int, path: KeyPath) -> int:
        i = skip(i)
        out.setdefault(path, bisect_right(newlines, i - 1) + 1)
        if text[i] == "{":
            i = skip(i + 1)
            if text[i] == "}":
                return i + 1
            while True:
                key, i = scanstring(text, skip(i) + 1)
                i = skip(i) + 1  # the colon
                i = skip(value(i, (*path, key)))
                if text[i] == "}":
                    return i + 1
                i += 1  # the comma
        if text[i] == "[":
            i = skip(i + 1)
            if text[i] == "]":
                return i + 1
            index = 0
            while True:
                i = skip(value(i, (*path, index)))
                index += 1
                if text[i] == "]":
                    return i + 1
                i += 1
        return decoder.raw_decode(text, i)[1]

    try:
        value(0, ())
    except (IndexError, ValueError):
        pass  # keep what was found; callers fall back to the file alone
    out.pop((), None)
    return out
