"""The session's services for its tools, each made on its first need.

A call's ``ToolServices`` (``cox.actors.tools.base``) hold the session's background jobs, its
private /tmp, its language servers, the judge of a rename's files and the asker of MCP servers'
questions. None of them is needed to send the first request, and their modules (``tools.jobs``,
``tools.shell_env``, ``lsp.pool``, ``lsp.approvals``, ``mcp.elicitation``) are not imported
before it: they are made with the first call the session admits (``tool_services``), or — the
broker — with the first MCP question or answer. A session that calls no tool makes none of them,
and ``release`` ends only what was made.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cox.actors.tools.base import DeferredTool, ToolServices

if TYPE_CHECKING:
    from cox.actors.lsp.approvals import WriteApprovals
    from cox.actors.lsp.pool import LspPool
    from cox.actors.mcp.elicitation import ElicitationBroker
    from cox.actors.tools.base import BaseTool
    from cox.actors.tools.jobs import Jobs
    from cox.actors.tools.shell_env import SessionTmp

    from .actor import SessionActor

__all__ = ["SessionServices"]


class SessionServices:
    def __init__(self, session: SessionActor, deferred: dict[str, BaseTool]) -> None:
        self.session = session
        self.deferred = deferred
        self._lock = threading.Lock()  # the broker may be asked for from an MCP connection's thread
        self._services: ToolServices | None = None
        self.jobs: Jobs | None = None
        self.tmp: SessionTmp | None = None
        self.lsp: LspPool | None = None
        self.approvals: WriteApprovals | None = None
        self._broker: ElicitationBroker | None = None
        self._released = False

    def tool_services(self) -> ToolServices:
        """The services of a call (``loaded``: the deferred tools enabled when it starts)."""
        services = self._services or self._make()
        loaded = frozenset(n for n in self.deferred if n in self.session.tools)
        return services if loaded == services.loaded else replace(services, loaded=loaded)

    def _make(self) -> ToolServices:
        from cox.actors.lsp.approvals import WriteApprovals
        from cox.actors.lsp.pool import LspPool
        from cox.actors.tools.jobs import Jobs
        from cox.actors.tools.shell_env import SessionTmp
        from cox.policy.sandbox import read_deny_patterns

        s, settings = self.session, self.session.s
        self.jobs, self.tmp = Jobs(), SessionTmp(settings.session_id)
        self.lsp, self.approvals = LspPool.for_session(settings), WriteApprovals(s)  # they start nothing
        if self._released:  # a call admitted as the session ends: no folder nobody would remove
            self.tmp.remove()
        self._services = ToolServices(
            sandbox_mode=settings.sandbox_mode, writable_roots=tuple(settings.writable_roots),
            network=settings.network, jobs=self.jobs, archive=s._archive_put,
            deferred_tools=tuple(DeferredTool(t.name, t.description) for t in self.deferred.values()),
            ask=self._ask, session_tmp=self.tmp, agents=s.lazy_agents,
            read_deny=tuple(read_deny_patterns(getattr(s.engine, "deny", ()))),
            cox_home=settings.cox_home, env_keep=tuple(settings.env_keep), lsp=self.lsp,
            approve_writes=self.approvals.approve,
        )
        return self._services

    def _ask(self, request: dict[str, Any]) -> Any:
        return self.broker().ask_from_thread(request)

    def broker(self) -> ElicitationBroker:
        """The broker of MCP servers' questions (``mcp/elicitation.py``), made on first need."""
        with self._lock:
            if self._broker is None:
                from cox.actors.mcp.elicitation import ElicitationBroker

                s = self.session
                self._broker = ElicitationBroker(s.recorder.emit, lambda: s.actor_ref, s._open_url)
            return self._broker

    def close_questions(self, reason: Any) -> None:
        """Cancel every open MCP question (none is open when no broker was made)."""
        if self._broker is not None:
            self._broker.cancel_all(reason)

    def route(self, approve: Any) -> bool:
        """Whether ``approve`` answers a running rename's files (``lsp/approvals.py``)."""
        return self.approvals is not None and self.approvals.route(approve)

    def release(self) -> int:
        """End what was made: rename approvals, language servers, background jobs, the temp
        folder. Returns how many background jobs were stopped."""
        self._released = True
        if self.approvals is not None:
            self.approvals.cancel_all()
        if self.lsp is not None:
            self.lsp.close()
        stopped = self.jobs.stop_all() if self.jobs is not None else 0
        if self.tmp is not None:
            self.tmp.remove()
        return stopped
