"""The session's slash commands as Claude Code lists them: names in ``system/init``'s
``slash_commands`` (and skills in its ``skills``), ``{name, description, argumentHint}`` in the
``initialize`` response's ``commands`` (the SDK's ``get_server_info()``).

What is listed is what a ``/name args`` user message expands to here (``commands.slash_turn``):
``/init``, the custom command files, the MCP servers' prompts (``mcp__server__prompt``) and the
skills a person may name — one source, so the listing never offers a name the session refuses.
cox's TUI-only commands (``/mode``, ``/rewind`` …) are not listed: sent as a message they are text.
Descriptions are the files' words: scrubbed of secret shapes like everything on this wire.
"""

from __future__ import annotations

from typing import Any

from cox.policy.redact import scrub_data

INIT = {"name": "init", "description": "Survey the repository and write (or improve) its AGENTS.md",
        "argumentHint": ""}


def listing(commands: Any, skills: Any) -> list[dict[str, str]]:
    """``initialize``'s ``commands``: /init, the commands (files and MCP prompts), then the
    skills the person may name that no command shadows."""
    out = [dict(INIT)]
    seen = {"init"}
    if commands is not None:
        for name in commands.names():
            c = commands.get(name)
            if c is None or name in seen:
                continue
            seen.add(name)
            out.append({"name": name, "description": c.description, "argumentHint": c.argument_hint})
    for skill in _skills(skills):
        if skill.name not in seen:
            seen.add(skill.name)
            out.append({"name": skill.name, "description": skill.description, "argumentHint": ""})
    return scrub_data(out)[0]  # type: ignore[no-any-return]


def names(commands: Any, skills: Any) -> list[str]:
    """``system/init``'s ``slash_commands``."""
    return [c["name"] for c in listing(commands, skills)]


def skill_names(skills: Any) -> list[str]:
    """``system/init``'s ``skills``: every skill of the session (the model's and the person's)."""
    return sorted(getattr(skills, "by_name", {}) or {})


def _skills(skills: Any) -> list[Any]:
    by_name = getattr(skills, "by_name", None) or {}
    return [s for _, s in sorted(by_name.items()) if s.user_invocable]
