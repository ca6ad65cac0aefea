"""Claude Code's spelling of cox's tools — names and input fields — translated both ways.

Why: scripts, SDK callbacks, hooks and permission rules written for Claude Code name its tools
(``Bash``, ``Read``, ``Edit``…) and their fields (``file_path``, ``-i``, ``output_mode``…), and
models trained on Claude Code call them so. cox runs its own tools; this module is the one place
that says how each spelling maps onto the other, so the model may call either, and a surface
speaking Claude Code's dialect shows (and takes back) Claude Code's.

- :func:`to_cox` takes a call in either spelling and gives cox's name and input (a cox name passes
  through untouched). Fields Claude Code has and cox has not are dropped only where dropping them
  changes nothing the caller can see (``WebFetch``'s ``prompt``, ``TodoWrite``'s ``activeForm``,
  ``Grep``'s ``-n``); any other unknown field is kept, so the tool's own validation names it.
- :func:`to_claude` is the reverse, for what is shown in Claude Code's dialect: file paths become
  Claude Code's absolute ``file_path``; a tool with no counterpart (``apply_patch``, MCP tools…)
  keeps cox's name and input.
- ``MultiEdit`` is cox's ``edit`` with an ``edits`` list.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["CLAUDE_NAME", "COX_NAME", "claude_name", "cox_name", "to_claude", "to_cox"]

COX_NAME: dict[str, str] = {
    "Bash": "bash", "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit",
    "Grep": "grep", "Glob": "glob", "LS": "ls", "WebFetch": "web_fetch", "TodoWrite": "todo_write",
    "Task": "agent", "Agent": "agent", "Skill": "skill",
}
"""Claude Code's tool name → cox's."""

CLAUDE_NAME: dict[str, str] = {
    "bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "grep": "Grep", "glob": "Glob",
    "ls": "LS", "web_fetch": "WebFetch", "todo_write": "TodoWrite", "agent": "Task", "skill": "Skill",
}
"""cox's tool name → Claude Code's (``edit`` with ``edits`` is ``MultiEdit``: see :func:`to_claude`)."""

_PATH_TOOLS = frozenset({"read", "write", "edit", "ls"})
_DROPPED: dict[str, frozenset[str]] = {
    "WebFetch": frozenset({"prompt"}),
    "Grep": frozenset({"-n"}),
    "LS": frozenset({"ignore"}),
}


def cox_name(name: str) -> str:
    """cox's name for a tool named in either spelling."""
    return COX_NAME.get(name, name)


def claude_name(name: str, given: Mapping[str, Any] | None = None) -> str:
    """Claude Code's name for a cox tool (cox's own where there is no counterpart)."""
    if name == "edit" and given is not None and "edits" in given:
        return "MultiEdit"
    return CLAUDE_NAME.get(name, name)


def to_cox(name: str, given: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call in either spelling as cox's tool name and input."""
    if name not in COX_NAME:
        return name, dict(given)
    cox = COX_NAME[name]
    out = {k: v for k, v in given.items() if k not in _DROPPED.get(name, frozenset())}
    if "file_path" in out and "path" not in out and cox in _PATH_TOOLS:
        out["path"] = out.pop("file_path")
    if name == "Bash" and isinstance(out.get("timeout"), int | float) and not isinstance(out["timeout"], bool):
        out["timeout"] = max(1, math.ceil(out["timeout"] / 1000))  # Claude Code's are milliseconds
    elif name == "Grep":
        out = _grep_to_cox(out)
    elif name == "TodoWrite" and isinstance(out.get("todos"), list):
        out["todos"] = [_todo_to_cox(t) for t in out["todos"]]
    return cox, out


def to_claude(name: str, given: Mapping[str, Any], cwd: str | os.PathLike[str] | None = None) -> tuple[str, dict[str, Any]]:
    """A cox call as Claude Code shows it (relative paths made absolute against ``cwd``)."""
    shown = claude_name(name, given)
    out = dict(given)
    if name in _PATH_TOOLS and isinstance(out.get("path"), str):
        path = os.path.expanduser(out.pop("path"))
        out["file_path" if name != "ls" else "path"] = os.path.normpath(os.path.join(cwd, path)) if cwd else path
    if name == "bash" and isinstance(out.get("timeout"), int | float) and not isinstance(out["timeout"], bool):
        out["timeout"] = int(out["timeout"] * 1000)
    elif name == "grep":
        out = _grep_to_claude(out)
    elif name == "todo_write" and isinstance(out.get("todos"), list):
        out["todos"] = [{**t, "activeForm": t.get("content", "")} if isinstance(t, dict) else t for t in out["todos"]]
    return shown, out


def _grep_to_cox(given: dict[str, Any]) -> dict[str, Any]:
    out = dict(given)
    mode = out.pop("output_mode", "files_with_matches")  # Claude Code's default
    if mode == "files_with_matches":
        out["files_with_matches"] = True
    if "-i" in out:
        out["case_insensitive"] = bool(out.pop("-i"))
    around = [out.pop(k) for k in ("-C", "-A", "-B") if isinstance(out.get(k), int)]
    if around:
        out["context"] = max(around)
    if "head_limit" in out:
        out["max_results"] = out.pop("head_limit")
    kind = out.pop("type", None)
    if isinstance(kind, str) and kind and "glob" not in out:
        out["glob"] = f"*.{kind}"
    return out


def _grep_to_claude(given: dict[str, Any]) -> dict[str, Any]:
    out = dict(given)
    out["output_mode"] = "files_with_matches" if out.pop("files_with_matches", False) else "content"
    if "case_insensitive" in out:
        out["-i"] = out.pop("case_insensitive")
    if "context" in out:
        out["-C"] = out.pop("context")
    if "max_results" in out:
        out["head_limit"] = out.pop("max_results")
    return out


def _todo_to_cox(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    return {k: v for k, v in item.items() if k not in ("activeForm", "priority")}
