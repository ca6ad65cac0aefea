"""Claude Code's spelling of cox's tools — names and input fields — translated both ways.

Why: scripts, SDK callbacks, hooks and permission rules written for Claude Code name its tools
(``Bash``, ``Read``, ``Edit``…) and their fields (``file_path``, ``-i``, ``output_mode``…), and
models trained on Claude Code call them so. cox runs its own tools; this module is the one place
that says how each spelling maps onto the other, so the model may call either, and a surface
speaking Claude Code's dialect shows (and takes back) Claude Code's.

- :func:`to_cox` takes a call in either spelling and gives cox's name and input (a cox name passes
  through untouched). Fields Claude Code has and cox has not are dropped only where dropping them
  changes nothing the caller relies on (``WebFetch``'s ``prompt``: cox returns the page itself;
  ``TodoWrite``'s ``activeForm`` and ``priority``; ``Grep``'s ``-n``: cox's grep always numbers
  its lines; ``LS``'s ``ignore``: cox lists more, never less; ``Bash``'s
  ``dangerouslyDisableSandbox`` when false). Any other unknown field is kept, so the tool's own
  validation names it (``dangerouslyDisableSandbox: true`` is refused that way: cox never turns
  its sandbox off for one call).
- :func:`to_claude` is the reverse, for what is shown in Claude Code's dialect: file paths become
  Claude Code's absolute ``file_path``; a tool with no counterpart (``apply_patch``, MCP tools…)
  keeps cox's name and input. Both are idempotent: a call already in the target spelling is
  left as it is.
- ``MultiEdit`` is cox's ``edit`` with an ``edits`` list.

Where the spellings meet (the choke point, :func:`as_cox_call`): everything after it — the
permission engine, hooks' matchers, batching, checkpoints, the archive, cox's events — sees cox's
name and input only, so a ``Bash`` call is judged, run and recorded exactly as a ``bash`` call.
Only the model's own history keeps the name and fields it used (:func:`as_called`), because the
provider must see its own words again.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from cox.protocol.types import ToolCall

__all__ = ["CLAUDE_NAME", "COX_NAME", "as_called", "as_cox_call", "claude_name", "cox_name", "to_claude",
           "to_cox"]

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
_GREP_MODES = ("content", "files_with_matches", "count")


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
    if name == "Bash":
        if _number(out.get("timeout")):
            out["timeout"] = max(1, math.ceil(out["timeout"] / 1000))  # Claude Code's are milliseconds
        if out.get("dangerouslyDisableSandbox") is False:
            del out["dangerouslyDisableSandbox"]
    elif name == "Grep":
        out = _grep_to_cox(out)
    elif name == "TodoWrite" and isinstance(out.get("todos"), list):
        out["todos"] = [_todo_to_cox(t) for t in out["todos"]]
    return cox, out


def to_claude(name: str, given: Mapping[str, Any], cwd: str | os.PathLike[str] | None = None) -> tuple[str, dict[str, Any]]:
    """A cox call as Claude Code shows it (relative paths made absolute against ``cwd``)."""
    if name not in CLAUDE_NAME:
        return name, dict(given)  # Claude Code's spelling already, or a tool without a counterpart
    shown = claude_name(name, given)
    out = dict(given)
    if name in _PATH_TOOLS and isinstance(out.get("path"), str):
        path = os.path.expanduser(out.pop("path"))
        out["file_path" if name != "ls" else "path"] = os.path.normpath(os.path.join(cwd, path)) if cwd else path
    if name == "bash" and _number(out.get("timeout")):
        out["timeout"] = int(out["timeout"] * 1000)
    elif name == "grep":
        out = _grep_to_claude(out)
    elif name == "todo_write" and isinstance(out.get("todos"), list):
        out["todos"] = [{**t, "activeForm": t.get("content", "")} if isinstance(t, dict) else t for t in out["todos"]]
    return shown, out


def as_cox_call(block: Mapping[str, Any]) -> ToolCall:
    """The model's ``tool_use`` block as the call cox judges and runs, in cox's spelling."""
    given = block.get("input")
    name, spelled = to_cox(str(block.get("name", "")), given if isinstance(given, Mapping) else {})
    return ToolCall(id=str(block.get("id", "")), name=name, input=spelled)


def as_called(used: str, name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """cox's input for tool ``name`` in the spelling of ``used``, the name the model called it by
    (a hook's or the person's changed input goes back into the model's history so)."""
    if used == name or used not in COX_NAME:
        return dict(given)
    return to_claude(name, given)[1]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _grep_to_cox(given: dict[str, Any]) -> dict[str, Any]:
    out = dict(given)
    mode = out.pop("output_mode", "files_with_matches")  # Claude Code's default
    if mode == "files_with_matches":
        out["files_with_matches"] = True
    elif mode == "count":
        out["count"] = True
    elif mode != "content":
        out["output_mode"] = mode  # grep names the bad value
    if "-i" in out:
        out["case_insensitive"] = out.pop("-i")
    around = [out.pop(k) for k in ("-C", "-A", "-B") if _number(out.get(k))]
    if around:
        out["context"] = max(around)  # cox's context is symmetric: the widest side covers both
    if "head_limit" in out:
        out["max_results"] = out.pop("head_limit")
    kind = out.get("type")
    if isinstance(kind, str) and kind and "glob" not in out:
        out.pop("type")
        out["glob"] = f"*.{kind}"
    elif isinstance(kind, str) and kind:
        out.pop("type")  # a glob narrows already; cox's grep takes one filter
    return out


def _grep_to_claude(given: dict[str, Any]) -> dict[str, Any]:
    out = dict(given)
    if out.pop("files_with_matches", False):
        out["output_mode"] = "files_with_matches"
    elif out.pop("count", False):
        out["output_mode"] = "count"
    elif out.get("output_mode") not in _GREP_MODES:
        out["output_mode"] = "content"
    out.pop("files_with_matches", None)
    out.pop("count", None)
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
