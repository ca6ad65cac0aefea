"""What the session hears from its children and timers, and what its machine asks it to do.

Two vocabularies, both typed and matched with ``match`` (no tuples routed by name):

- **Messages** come in: from the turn's stream actor (``Stream*``), its tool-call actors
  (``ToolOutput``, ``ToolDone``), the supervisor link (``ChildExit``), the watchdog timer, the
  store (``StorageFailed``), an MCP server's elicitation (``Elicit``, ``QuestionGone``), a
  rename's files to approve (``AskWrites``), a timer of the reaper (``Reap``). Submissions
  (``cox.protocol.messages``) come in too.
- **Effects** go out of the :class:`~cox.actors.session.machine.TurnMachine`: the actor
  interprets each, in order. An effect that needs an answer carries ``then``, the continuation
  the interpreter calls with it; what it returns is interpreted next, before the effects that
  followed, so a synchronous answer keeps the order a plain call would have.

``cox.slim`` dataclasses: they are built on the start-up path of ``cox run -p``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cox.slim import dataclass

if TYPE_CHECKING:
    import concurrent.futures

    from cox.actors.provider.stream import StreamResult
    from cox.protocol.model import ModelRequest
    from cox.protocol.types import QuestionCloseReason, ToolCall, ToolResult
    from cox.supervisors import CancelScope

# ---------------------------------------------------------------- messages in


@dataclass(frozen=True, slots=True)
class StreamText:
    stream_id: int
    text: str


@dataclass(frozen=True, slots=True)
class StreamThinking:
    stream_id: int
    text: str


@dataclass(frozen=True, slots=True)
class StreamNotice:
    """The stream's word for the person (a retry after a failed request)."""

    stream_id: int
    text: str


@dataclass(frozen=True, slots=True)
class StreamEnd:
    result: StreamResult


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A chunk of a running call's output, for the surfaces (never the model's history)."""

    gen: int
    call_id: str
    chunk: str


@dataclass(frozen=True, slots=True)
class ToolDone:
    gen: int
    call_id: str
    result: ToolResult
    ms: float
    files: list[str] | None = None
    """The files a writing call checkpointed (a CheckpointEvent)."""


@dataclass(frozen=True, slots=True)
class ChildExit:
    """A linked child stopped (after anything it told before). ``kind`` is call, stream or
    compact; ``gen`` the turn it belongs to; ``ident`` the call id or the stream id."""

    kind: str
    gen: int
    ident: Any
    why: str


@dataclass(frozen=True, slots=True)
class WatchdogTick:
    gen: int


@dataclass(frozen=True, slots=True)
class StorageFailed:
    """The store could not write this session's record (a full disk)."""

    episode: int
    sentence: str


@dataclass(frozen=True, slots=True)
class Elicit:
    """An MCP server asks the person something during a call (``request`` the elicitation's
    params); ``reply`` settles with what goes back to that server, and nowhere else."""

    request: dict[str, Any]
    reply: concurrent.futures.Future[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class QuestionGone:
    did: int


@dataclass(frozen=True, slots=True)
class UrlNotOpened:
    source: str
    url: str
    why: str


@dataclass(frozen=True, slots=True)
class AskWrites:
    """From a running rename_symbol (``cox.actors.lsp.approvals``): show this approval of the
    files it would write (emit it, on the session's thread)."""

    call: ToolCall
    reason: str


@dataclass(frozen=True, slots=True)
class Reap:
    """A finished turn's processes whose calls had time to reap them and did not."""

    processes: list[Any]


@dataclass(frozen=True, slots=True)
class ChildEvent:
    """Events of a subagent (``agents.py``: relayed from its sink), for the parent's surfaces:
    what one message of the child emitted, as (event, its scrubbed line) pairs, in order."""

    agent_id: str
    kind: str
    """The agent's type (explore, general-purpose, a custom one)."""
    call_id: str
    events: tuple[tuple[Any, str], ...]


# ---------------------------------------------------------------- effects out


@dataclass(frozen=True, slots=True)
class Emit:
    """An event to the rollout and every surface. ``breathe``: hand the GIL to the surface
    after it (the reply's first words show at once)."""

    event: Any
    breathe: bool = False


@dataclass(frozen=True, slots=True)
class Store:
    """A tell to the store actor (a title, a usage row)."""

    message: Any


@dataclass(frozen=True, slots=True)
class BeginTurn:
    """A turn starts: hold its scope for an out-of-band interrupt, watch its children."""

    gen: int
    scope: CancelScope


@dataclass(frozen=True, slots=True)
class EndTurn:
    """A turn is over: stop watching, let go of its scope, reap what its commands left."""

    gen: int


@dataclass(frozen=True, slots=True)
class Hold:
    """The scope an out-of-band interrupt cancels (None: nothing runs)."""

    scope: CancelScope | None


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel a scope: everything started under it stops (streams, calls, hooks, processes)."""

    scope: CancelScope


@dataclass(frozen=True, slots=True)
class StartStream:
    """Stream ``request`` in a ProviderStream actor linked as ``(kind, gen, stream_id)``."""

    kind: str
    gen: int
    stream_id: int
    request: ModelRequest
    scope: CancelScope


@dataclass(frozen=True, slots=True)
class StartCall:
    """Run ``call`` in a ToolCall actor of turn ``gen`` (turn number ``turn``)."""

    gen: int
    turn: int
    call: ToolCall
    scope: CancelScope


@dataclass(frozen=True, slots=True)
class RunHook:
    """Run the hooks of ``point``; ``then`` gets their combined answer (None: none ran, or it
    failed — a warning the interpreter emits)."""

    point: str
    payload: dict[str, Any]
    scope: CancelScope | None
    then: Callable[[dict[str, Any] | None], list[Any]]


@dataclass(frozen=True, slots=True)
class Mark:
    """Write the turn's /rewind marker (off the session's thread)."""

    turn: int
    text: str


@dataclass(frozen=True, slots=True)
class SettleMarkers:
    """Wait, bounded, for the markers, and emit their warnings."""


@dataclass(frozen=True, slots=True)
class RestoreCode:
    """Put the files back as they were before ``to_turn``; ``then`` gets whether it did."""

    to_turn: int
    next_turn: int
    force: bool
    then: Callable[[bool], list[Any]]


@dataclass(frozen=True, slots=True)
class CloseQuestions:
    """Cancel every open MCP question; each closes on the surfaces with ``reason``."""

    reason: QuestionCloseReason


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop the session actor (a Shutdown submission)."""
