"""The subagent tools: ``agent`` (Claude Code's Task), ``agent_wait``, ``agent_send``, ``agent_close``.

``agent`` runs a subagent — a child session of its own (``cox/actors/session/agents.py``) — on a
task and answers with its final report; with ``run_in_background`` it answers at once with the
agent's id, and the other three wait for, steer and stop background agents (Codex's
``wait``/``send_input``/``close_agent`` in cox's terms). The inputs are Claude Code's, so a
migrating user's prompts and agent files work.

Several foreground ``agent`` calls of one step run together (they are read-only to the batch:
each child's own calls go through its own permission engine, no wider than the parent's), and
their reports return in call order. ``isolation: "worktree"`` is Destructive: it asks, and plan
mode refuses it.
"""

from __future__ import annotations

from typing import Any

from cox.protocol.types import Risk, ToolCall, ToolResult

from .base import BaseTool, ToolEnv, ToolInputError


def _runner(env: ToolEnv) -> Any:
    runner = env.services.agents
    if runner is None:
        raise ToolInputError("this surface runs no subagents (they need a session: cox, cox run, the TUI)")
    return runner


class AgentTool(BaseTool):
    name = "agent"
    parallel = True
    required = ("description", "prompt")
    input_schema = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "the task in 3-5 words (shown in the agent list)"},
            "prompt": {"type": "string", "description": "the whole task, self-contained: the agent sees nothing of "
                                                        "this conversation"},
            "subagent_type": {"type": "string",
                              "description": "one of the agent types listed above (default general-purpose)"},
            "run_in_background": {"type": "boolean",
                                  "description": "return at once with the agent's id; agent_wait gets its report"},
            "isolation": {"type": "string", "enum": ["worktree"],
                          "description": "worktree: the agent works in a git worktree of its own (it asks the user "
                                         "first; refused in plan mode)"},
            "model": {"type": "string", "description": "cheap, main, think, or a model id (default: its type's)"},
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }

    def __init__(self, types: dict[str, str] | None = None) -> None:
        kinds = types or {"general-purpose": "does a task end to end with every tool",
                          "explore": "reads the code and reports what it found (read-only)"}
        listed = "\n".join(f"- {name}: {what}" for name, what in sorted(kinds.items()))
        self.description = (
            "Start a subagent on one task and return its final report. A subagent is a session of its own, "
            "with its own context and tools, and only its report comes back, so your own context stays small. "
            "It sees nothing of this conversation: the prompt must give the goal, what you already know, the "
            "files involved, and what the report must contain. Use explore for broad searches and questions "
            "that take many reads (it changes nothing); use general-purpose for a separable piece of work. Do "
            "not start one for a single search or read you can make yourself. Several agent calls in one step "
            "run at the same time. With run_in_background the call returns at once with the agent's id: go on "
            "working, then collect the report with agent_wait; agent_send steers the agent and agent_close "
            "stops it. A subagent cannot start agents of its own. The agent types:\n" + listed)

    def check(self, call_input: dict[str, Any]) -> None:
        super().check(call_input)
        for key in ("description", "prompt"):
            if not isinstance(call_input.get(key), str) or not call_input[key].strip():
                raise ToolInputError(f"agent: {key!r} must be a non-empty string")
        isolation = call_input.get("isolation")
        if isolation not in (None, "worktree"):
            raise ToolInputError("agent: 'isolation' is \"worktree\" or absent")

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.DESTRUCTIVE if call_input.get("isolation") == "worktree" else Risk.READ_ONLY

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return f"{call_input.get('subagent_type') or 'general-purpose'}: {call_input.get('description', '')}"

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.session.agents import AgentError
        from cox.agents.runner import AgentTask

        self.check(call.input)
        runner = _runner(env)
        i = call.input
        task = AgentTask(description=i["description"], prompt=i["prompt"],
                         subagent_type=i.get("subagent_type") or "general-purpose", isolation=i.get("isolation"),
                         model=i.get("model"))
        try:
            if i.get("run_in_background"):
                agent_id = runner.start(task, call.id)
                return ToolResult(visible=f"agent {agent_id} started in the background; agent_wait "
                                          f"{{\"ids\": [\"{agent_id}\"]}} gets its report, agent_send steers it, "
                                          "agent_close stops it", meta={"agent_id": agent_id})
            report = runner.run(task, env.cancel, call.id)
        except AgentError as exc:
            return ToolResult.error(str(exc))
        meta = {"agent_id": report.agent_id, "stop": report.stop, "cost_usd": report.cost_usd, "changes_files": True}
        if report.ok:
            return ToolResult(visible=report.text, meta=meta)
        return ToolResult.error(report.text, **meta)


class AgentWaitTool(BaseTool):
    name = "agent_wait"
    description = ("Wait for background agents (by the ids agent returned) and return the report of each one "
                   "that finished within timeout seconds (default 300); the others are listed as still running, "
                   "and you can wait for them again. Do your own work first, then wait.")
    parallel = True
    required = ("ids",)
    input_schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "string"},
                               "description": "the ids of the background agents to wait for"},
                       "timeout": {"type": "number", "description": "seconds to wait at most (default 300)"}},
        "required": ["ids"],
        "additionalProperties": False,
    }

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        ids = call.input.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(x, str) for x in ids):
            raise ToolInputError("agent_wait: 'ids' must be a non-empty list of agent ids")
        timeout = call.input.get("timeout", 300)
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ToolInputError("agent_wait: 'timeout' must be a number of seconds")
        try:
            reports = _runner(env).wait(ids, float(timeout), env.cancel)
        except KeyError as exc:
            return ToolResult.error(f"agent_wait: no agent {exc.args[0]}")
        parts = []
        for agent_id in ids:
            report = reports.get(agent_id)
            if report is None:
                parts.append(f"## {agent_id}: still running")
            else:
                parts.append(f"## {agent_id}: {'done' if report.ok else report.stop}\n{report.text}")
        return ToolResult(visible="\n\n".join(parts), meta={"changes_files": True})


class AgentSendTool(BaseTool):
    name = "agent_send"
    description = ("Send a message to a background agent by its id: it reads it at its next step, or, if it had "
                   "finished, starts a new turn with it (agent_wait then gets the new report). Use it to correct "
                   "course or add what the agent needs to know.")
    parallel = True
    required = ("id", "text")
    input_schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "the agent's id"},
                       "text": {"type": "string", "description": "the message"}},
        "required": ["id", "text"],
        "additionalProperties": False,
    }

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        why = _runner(env).send(str(call.input["id"]), str(call.input["text"]))
        return ToolResult.error(f"agent_send: {why}") if why else ToolResult(visible=f"sent to {call.input['id']}")


class AgentCloseTool(BaseTool):
    name = "agent_close"
    description = ("Stop a background agent by its id, when its work is no longer needed. What it did so far stays "
                   "(files it changed are not put back), and its report says it was closed.")
    parallel = True
    required = ("id",)
    input_schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "the agent's id"}},
        "required": ["id"],
        "additionalProperties": False,
    }

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        why = _runner(env).close(str(call.input["id"]))
        return ToolResult.error(f"agent_close: {why}") if why else ToolResult(visible=f"closed {call.input['id']}")


def agent_tools(types: dict[str, str] | None = None) -> dict[str, BaseTool]:
    """The four, for a session that may start agents (``types``: name → what it is for)."""
    tools: list[BaseTool] = [AgentTool(types), AgentWaitTool(), AgentSendTool(), AgentCloseTool()]
    return {t.name: t for t in tools}
