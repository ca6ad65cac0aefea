"""OTP-style supervision on pykka: actors that fail alone and report their exit, supervisors with
restart strategies and intensity, stable names that survive restarts, and cancel scopes.

Typical use::

    root = start_supervisor("root", children=[ChildSpec("store", Store.start)])
    mcp = start_supervisor("mcp", parent=root)
    mcp.start_child(ChildSpec("github", lambda: McpServer.start(cfg), backoff=(0.1, 30.0)))
    ref = mcp.whereis("github", timeout=1.0)      # resolve when needed; never cache the ref
    ...
    shutdown()                                     # in main()'s finally
"""

from .actor import ActorCrash, CoxActor, Exit, ExitKind, ExitListener, spawn_linked
from .cancel import Cancelled, CancelScope
from .handle import (
    SupervisorHandle,
    SupervisorNotRunning,
    SupervisorStartError,
    shutdown,
    start_supervisor,
    supervisor_spec,
)
from .registry import NameTaken, registry, whereis
from .spec import Backoff, ChildSpec, Restart, Strategy
from .supervisor import AlreadyStarted, RestartIntensityExceeded, Supervisor, SupervisorError

__all__ = [
    "ActorCrash",
    "AlreadyStarted",
    "Backoff",
    "CancelScope",
    "Cancelled",
    "ChildSpec",
    "CoxActor",
    "Exit",
    "ExitKind",
    "ExitListener",
    "NameTaken",
    "Restart",
    "RestartIntensityExceeded",
    "Strategy",
    "Supervisor",
    "SupervisorError",
    "SupervisorHandle",
    "SupervisorNotRunning",
    "SupervisorStartError",
    "registry",
    "shutdown",
    "spawn_linked",
    "start_supervisor",
    "supervisor_spec",
    "wait_cancelled",
    "whereis",
]
