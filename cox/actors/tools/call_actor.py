"""The ToolCall actor: one per tool call.

It runs the call in its own thread through the one choke point (``execute.execute``:
checkpoint, run, cap and archive), so a slow or stuck tool never blocks the session, and tells
the session one ``ToolDone`` (``cox.actors.session.messages``) exactly once. If the actor dies
without that message, its supervisor's exit report reaches the session, which fills in an error
result instead. Whoever ends the call early ends and reaps the processes it started.
"""

from __future__ import annotations

import time
from typing import Any

import pykka

from cox.actors.session.messages import ToolDone
from cox.protocol.types import ToolCall
from cox.supervisors import CoxActor

from .base import ArchivePut, BaseTool, ToolEnv
from .execute import execute

__all__ = ["ArchivePut", "ToolCallActor"]


class ToolCallActor(CoxActor):
    def __init__(self, tool: BaseTool, call: ToolCall, env: ToolEnv, reply_to: pykka.ActorRef[Any], gen: int,
                 archive_put: ArchivePut | None, limits: dict[str, int] | None = None) -> None:
        super().__init__()
        self.tool = tool
        self.call = call
        self.env = env
        self.reply_to = reply_to
        self.gen = gen
        self.archive_put = archive_put
        self.limits = limits or {}

    def on_receive(self, message: Any) -> Any:
        if message == "run":
            started = time.monotonic()
            done = execute(self.tool, self.call, self.env, archive=self.archive_put, limits=self.limits)
            try:
                self.reply_to.tell(ToolDone(self.gen, self.call.id, done.result, (time.monotonic() - started) * 1000,
                                            list(done.files)))
            except pykka.ActorDeadError:
                pass  # the session closed while the call ran: nobody is left to hear it

            self.stop()
        return None

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        from .bash import reap

        reap(self.env.processes)
        super().on_failure(exception_type, exception_value, traceback)

    def on_stop(self) -> None:
        from .bash import reap

        reap(self.env.processes)
