"""One ``cox run --dialect claude``: the wire, the printer, the stdin channel, the client's
hooks and approvals put together for ``headless.run`` (whose loop — turns in order, one result
each, every way of ending reported — this dialect shares with cox's own)."""

from __future__ import annotations

import sys
import threading
from typing import IO, Any

from .commands import listing, names, skill_names
from .control import Channel
from .hooks import BothHooks, ClientHooks
from .ids import ulid_to_uuid
from .outgoing import Outgoing
from .permission import Permissions
from .translate import ClaudePrinter, exit_code
from .wire import Wire


class ClaudeDialect:
    exit_code = staticmethod(exit_code)

    def __init__(self, args: Any, prep: Any, *, stdin: IO[str] | None = None, out: IO[str] | None = None,
                 err: IO[str] | None = None) -> None:
        self.args = args
        self.prep = prep
        self.err = err or sys.stderr
        self.wire = Wire(out or sys.stdout)
        self.outgoing = Outgoing(self.wire)
        self.handle: Any = None
        s = prep.settings
        fmt = args.output_format
        self.printer: Any
        if fmt == "text":
            from ..headless import Printer

            self.printer = Printer("text", self.wire.out, self.err, getattr(args, "verbose", False))
        else:
            self.printer = ClaudePrinter(self.wire, self.err, partial=bool(getattr(args, "include_partial_messages", False)),
                                         replay_user=bool(getattr(args, "replay_user_messages", False)),
                                         only_result=fmt == "json")
        streaming = args.input_format == "stream-json"
        self.client_hooks = ClientHooks(self.outgoing, session_id=s.session_id, cwd=str(prep.cwd),
                                        transcript_path=str(prep.layout.rollout(s.session_id)),
                                        permission_mode=str(getattr(s.permission_mode, "value", s.permission_mode))) \
            if streaming else None
        self._agent_list: list[dict[str, Any]] | None = None
        self.commands: Any = None
        self.skills: Any = None
        if isinstance(self.printer, ClaudePrinter):
            self.printer.agents = lambda: [a["name"] for a in self.agents()]
            self.printer.commands = lambda: names(self.commands, self.skills)
            self.printer.skills = lambda: skill_names(self.skills)
            self.printer.on_turn_end = self._turn_ended
        self.permissions: Permissions | None = None
        self.channel = Channel(self.wire, self.outgoing, self.err, printer=self.printer, hooks=self.client_hooks,
                               mcp=self._mcp_status, models=self._models, info=lambda: {"agents": self.agents()},
                               commands=lambda: listing(self.commands, self.skills))
        if getattr(args, "permission_prompt_tool", None) == "stdio" and isinstance(self.printer, ClaudePrinter):
            self.permissions = Permissions(self.outgoing, lambda: self.handle, str(prep.cwd))
            self.printer.on_approval = self.permissions.ask
        from .sdk_mcp import sdk_servers

        prep.extra_mcp.update(sdk_servers(prep.flags.sdk_servers if prep.flags is not None else {}, self.outgoing))
        if streaming:
            self.channel.start(stdin or sys.stdin)

    def hooks(self, commands: Any) -> Any:
        """The session's hook runner: the command hooks, and the client's callbacks beside them.
        With ``--include-hook-events`` (and a stream on stdout) each command hook's run is streamed."""
        if commands is not None and getattr(self.args, "include_hook_events", False) \
                and isinstance(self.printer, ClaudePrinter) and not self.printer.only_result and hasattr(commands, "observe"):
            from .hook_events import HookEvents

            commands.observe = HookEvents(self.wire, ulid_to_uuid(self.prep.settings.session_id))
        return BothHooks(commands, self.client_hooks) if self.client_hooks is not None else commands

    def set_commands(self, commands: Any, skills: Any) -> None:
        """The session's commands (``session_commands``) and skills, as ``system/init`` and
        ``initialize`` list them; the MCP servers' prompts are added from a thread (they wait for
        the servers), then ``initialize`` is answered."""
        self.commands, self.skills = commands, skills

        def load() -> None:
            try:
                if commands is not None:
                    commands.load_prompts()
            except Exception as exc:  # a server that cannot list its prompts is left out, said once
                self.err.write(f"cox: warning: the MCP servers' prompts could not be listed ({exc})\n")
            finally:
                self.channel.ready.set()

        threading.Thread(target=load, name="cox-claude-commands", daemon=True).start()

    def attach(self, handle: Any, inbox: Any, closed: Any, wake: Any) -> None:
        self.handle = handle
        if isinstance(self.printer, ClaudePrinter):
            self.printer.mcp_manager = self.prep.mcp
        self.channel.attach(handle, inbox, closed, wake)

    def _turn_ended(self) -> None:
        if self.permissions is not None:
            self.permissions.turn_ended()

    def agents(self) -> list[dict[str, Any]]:
        """The subagent types the ``Task`` tool takes here (built-ins and the agent files), as
        ``initialize`` and ``system/init`` list them; read once."""
        if self._agent_list is None:
            s = self.prep.settings
            self._agent_list = []
            if s.max_agent_depth > 0:
                try:
                    from cox.agents.defs import load_agents

                    defs = load_agents(self.prep.cwd, s.home, cox_home=s.cox_home or self.prep.home,
                                       parent_model=s.model, models=s.model_overrides).defs
                except Exception:  # the session reports a broken agent file itself
                    defs = {}
                self._agent_list = [{"name": name, "description": d.description, **({"model": d.model} if d.model else {})}
                                    for name, d in defs.items()]
        return self._agent_list

    def _models(self) -> list[str]:
        s = self.prep.settings
        names: list[str] = []
        for name in (s.model, getattr(s, "cheap_model", ""), getattr(s, "think_model", "")):
            if name and name not in names:
                names.append(name)
        return names

    def _mcp_status(self) -> list[dict[str, Any]]:
        from .translate import _server_status

        rows = self.prep.mcp.state() if self.prep.mcp is not None else []
        return [{"name": r.get("name", ""), "status": _server_status(r),
                 **({"error": r["status"][len("failed: "):]} if str(r.get("status", "")).startswith("failed") else {})}
                for r in rows]


def refusal(args: Any, message: str, stop: str, session_id: str | None = None) -> int:
    """A run in this dialect that could not start: the ``cox: …`` line on stderr and, in the JSON
    formats, Claude Code's result object saying why; exit 1."""
    from ..headless import RunState, shown

    sys.stderr.write(f"cox: {shown(message)}\n")
    if args.output_format in ("json", "stream-json"):
        state = RunState(session_id, stop=stop, error=message)
        printer = ClaudePrinter(Wire(sys.stdout), sys.stderr)
        printer.session_id = ulid_to_uuid(session_id or "")
        printer.result(state)
    return 1
