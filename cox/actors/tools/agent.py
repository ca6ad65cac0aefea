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

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError
from .registry import agent_tools as agent_tools  # the session's set of the four: lazy entries


def _runner(env: ToolEnv) -> Any:
    runner = env.services.agents
    if runner is None:
        raise ToolInputError("this surface runs no subagents (they need a session: cox, cox run, the TUI)")
    return runner


class AgentTool(BaseTool):
    spec = catalog.AGENT

    def __init__(self, types: dict[str, str] | None = None) -> None:
        self.description = catalog.agent_description(types)

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
    spec = catalog.AGENT_WAIT

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
    spec = catalog.AGENT_SEND

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        why = _runner(env).send(str(call.input["id"]), str(call.input["text"]))
        return ToolResult.error(f"agent_send: {why}") if why else ToolResult(visible=f"sent to {call.input['id']}")


class AgentCloseTool(BaseTool):
    spec = catalog.AGENT_CLOSE

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        why = _runner(env).close(str(call.input["id"]))
        return ToolResult.error(f"agent_close: {why}") if why else ToolResult(visible=f"closed {call.input['id']}")
