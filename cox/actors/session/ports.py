"""The machine's synchronous questions — what a call describes, what it writes, what the engine
decides, which calls run in parallel, the tools' schemas — answered from the session's tools and
permission engine. The machine holds only this narrow object, never the actor."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.protocol.types import PermissionMode, ToolCall

if TYPE_CHECKING:
    from .actor import SessionActor


class MachinePorts:
    def __init__(self, session: SessionActor) -> None:
        self.session = session
        self.provider_name = str(getattr(session.provider, "name", "") or "")

    def describe(self, call: ToolCall) -> ToolCall:
        return self.session.tools[call.name].describe(call, self.session.env(0, None, call))

    def writes(self, call: ToolCall) -> list[Path] | None:
        return self.session.tools[call.name].writes(call, self.session.env(0, None, call))

    def decide(self, call: ToolCall, mode: PermissionMode, grants: list[str], turn_allow: list[str]) -> Any:
        s = self.session.s
        return self.session.engine.decide(call, mode, s.approval_policy, s.sandbox_mode, grants,
                                          turn_allow=turn_allow)

    def grants_for(self, call: ToolCall) -> list[str]:
        return list(self.session.engine.grants_for(call))

    def parallel(self, name: str) -> bool:
        return bool(self.session.tools[name].parallel)

    def specs(self, tools: dict[str, Any]) -> list[Any]:
        from cox.actors.tools.registry import specs

        return specs(tools)
