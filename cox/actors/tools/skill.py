"""The ``skill`` tool (Claude Code's ``Skill``): loads one skill's instructions on demand.

Its description carries the list of skills (names and descriptions, :func:`cox.agents.skills.listing`),
so the list lives in system[0], the tool schemas: computed once when the session starts, sorted,
byte-stable across the session's requests, and present only when there are skills — no skills,
no tool, no list. (The ``agent`` tool lists its agent types the same way, and Claude Code's
``Skill`` tool carries its list in its description too.) The bodies never reach a request until
the model calls this tool: the call re-reads the SKILL.md with discovery's guards and answers
with the instructions and the skill's folder. The other files of the folder are read with
``read`` when it is in the workspace, and with this tool's ``file`` (confined to the folder) in
every case: ``read`` cannot reach the user's ``~/.claude/skills``, outside the workspace.

A user's own skill (not a repository's) pre-approves its ``allowed-tools`` for the rest of the
turn that loads it: the result carries them (``meta["turn_allow"]``) and the session adds them to
that turn's allow rules, which end with it.

Input as Claude Code's: ``{"skill": name, "args": optional text}``, and cox's ``file``. The call only reads a file
the person's folders or the workspace hold, so it is read-only to the permission engine (its
subject is the skill's name: ``Skill(deploy)`` rules match it) and runs beside other calls.
"""

from __future__ import annotations

import os
from typing import Any

from cox.agents.skills import SkillError, Skills, body, grants, listing, render, support_file, valid_name
from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError, read_guard
from .registry import skill_tools as skill_tools  # the session's skill tool: a lazy entry


class SkillTool(BaseTool):
    spec = catalog.SKILL

    def __init__(self, skills: Skills) -> None:
        self.skills = skills
        self.description = catalog.skill_description(listing(skills.listed()))

    def check(self, call_input: dict[str, Any]) -> None:
        super().check(call_input)
        if not isinstance(call_input.get("skill"), str) or not call_input["skill"].strip():
            raise ToolInputError("skill: 'skill' must be a skill's name")
        for key in ("args", "file"):
            if not isinstance(call_input.get(key, ""), str):
                raise ToolInputError(f"skill: {key!r} must be a string")

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return _name(call_input)

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        name = _name(call.input)
        skill = self.skills.by_name.get(name) if valid_name(name) else None
        rel = str(call.input.get("file") or "")
        if skill is None or not (skill.model_invocable or rel):  # a file: also of a skill the user started
            known = ", ".join(s.name for s in self.skills.listed())[:2000] or "none"
            why = ("only the user can start it, by typing /" + name) if skill is not None else "no skill has that name"
            return ToolResult.error(f"skill {name[:80]!r}: {why}; the skills you can load: {known}")
        path = skill.folder / rel if rel else skill.path
        guard = read_guard(env)
        rule = guard.refuses(os.path.normpath(path)) or guard.refuses(os.path.realpath(path))
        if rule is not None:
            return ToolResult.denied(f"skill {name!r}: reading {path} is denied by {rule.text} (from {rule.origin})")
        try:
            if rel:
                return ToolResult(visible=support_file(skill, rel)[1])
            text = render(skill, body(skill), str(call.input.get("args") or "").strip())
            allow = grants(skill)  # the user's own skill: its allowed-tools for the rest of this turn
            return ToolResult(visible=text, meta={"turn_allow": allow} if allow else {})
        except SkillError as exc:
            return ToolResult.error(str(exc))


def _name(call_input: dict[str, Any]) -> str:
    raw = call_input.get("skill")
    return raw.strip().removeprefix("/") if isinstance(raw, str) else ""
