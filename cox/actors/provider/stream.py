"""The ProviderStream actor: one per model request.

It runs the provider's blocking stream in its own thread, assembles the deltas into a finished
response (text, thinking with its signature, tool_use blocks with parsed input), and tells the
session each visible delta as it arrives and the finished response at the end. Retryable
failures (429, 5xx, overloaded, connection reset, a stalled stream) are retried with backoff
honouring ``retry_after`` — but only while nothing has reached the session yet, so a retry never
shows a person the same text twice. Every wait is bounded (``waits``): a notice names its length,
a ``retry_after`` above ``provider.max_retry_after_s`` fails the request at once, and no attempt
or wait runs past ``provider.request_timeout_s`` before the answer starts. Cancelling the turn's
scope makes the provider's blocked read return; the actor then ends quietly.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import field
from typing import Any

import pykka

from cox.actors.session.messages import StreamEnd, StreamNotice, StreamText, StreamThinking
from cox.config.schema import ProviderConfig
from cox.policy.redact import scrub
from cox.protocol.interfaces import CancelToken, Provider
from cox.protocol.model import (
    ModelRequest,
    ProviderError,
    StopDelta,
    TextPart,
    ThinkingPart,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageDelta,
)
from cox.slim import dataclass
from cox.supervisors import CancelScope, CoxActor
from cox.supervisors.cancel import wait_cancelled
from cox.supervisors.timer import scheduler

from .waits import over_cap, past_deadline, seconds, waits_of

MAX_RETRIES = 4
_DEADLINE = "request deadline"


@dataclass(slots=True)
class StreamResult:
    """What the session receives when a stream ends."""

    stream_id: int
    content: list[dict[str, Any]] = field(default_factory=list)
    stop: str = "end_turn"
    usage: UsageDelta = field(default_factory=UsageDelta)
    error: ProviderError | None = None
    cancelled: bool = False
    api_ms: float = 0.0
    model: str = ""


class _Assembler:
    """Turns a delta stream into content blocks, merging consecutive text/thinking pieces."""

    def __init__(self) -> None:
        self.content: list[dict[str, Any]] = []
        self.tools: dict[int, dict[str, Any]] = {}
        self.usage = UsageDelta()
        self.stop = "end_turn"

    def text(self, t: str) -> None:
        if self.content and self.content[-1]["type"] == "text":
            self.content[-1]["text"] += t
        else:
            self.content.append({"type": "text", "text": t})

    def thinking(self, t: str, signature: str | None, extra: dict[str, Any] | None = None) -> None:
        last: dict[str, Any] = self.content[-1] if self.content else {}
        open_block = last.get("type") == "thinking" and last.get("signature") is None
        if open_block and (not extra or (not t and not any(k in last for k in extra))):
            # More text of the same block, or (an OpenAI reasoning item) the item's own data
            # arriving after its streamed summary: one block either way.
            block = last
            block["thinking"] += t
        else:
            block = {"type": "thinking", "thinking": t, "signature": None}
            self.content.append(block)
        if signature is not None:
            block["signature"] = signature
        if extra:
            block.update(extra)

    def tool_start(self, d: ToolUseStart) -> None:
        block = {"type": "tool_use", "id": d.id, "name": d.name, "input": {}, "_raw": []}
        self.tools[d.index] = block
        self.content.append(block)

    def tool_input(self, d: ToolUseInputDelta) -> None:
        self.tools[d.index]["_raw"].append(d.partial_json)

    def tool_stop(self, d: ToolUseStop) -> None:
        block = self.tools[d.index]
        raw = "".join(block.pop("_raw"))
        try:
            value = json.loads(raw) if raw.strip() else {}
            if not isinstance(value, dict):
                raise ValueError("tool input must be a JSON object")
            block["input"] = value
        except ValueError:
            block["input"] = {}
            block["input_error"] = raw

    def feed(self, d: Any) -> str | None:
        """Apply one delta; returns the visible text it carries (``"text"``/``"thinking"`` kind
        decided by the caller from the delta type), or None."""
        if isinstance(d, TextPart):
            if d.text:
                self.text(d.text)
                return d.text
        elif isinstance(d, ThinkingPart):
            self.thinking(d.text, d.signature, d.extra)
            return d.text or None
        elif isinstance(d, ToolUseStart):
            self.tool_start(d)
        elif isinstance(d, ToolUseInputDelta):
            self.tool_input(d)
        elif isinstance(d, ToolUseStop):
            self.tool_stop(d)
        elif isinstance(d, UsageDelta):
            self.usage = d
        elif isinstance(d, StopDelta):
            self.stop = d.reason
        return None

    def finish(self) -> list[dict[str, Any]]:
        for block in self.tools.values():  # a block that never got its stop (cut response)
            if "_raw" in block:
                block["input_error"] = "".join(block.pop("_raw"))
        return self.content


class ProviderStreamActor(CoxActor):
    """Streams one request and reports to ``reply_to`` with ``("stream", …)`` tuples."""

    def __init__(self, provider: Provider, request: ModelRequest, reply_to: pykka.ActorRef[Any],
                 stream_id: int, cancel: CancelToken) -> None:
        super().__init__()
        self.provider = provider
        self.request = request
        self.reply_to = reply_to
        self.stream_id = stream_id
        self.cancel = cancel
        self.clock: Callable[[], None] | None = None  # stops the running attempt's deadline

    def on_failure(self, *exc_info: Any) -> None:
        clock, self.clock = self.clock, None
        if clock is not None:
            clock()
        super().on_failure(*exc_info)

    def on_receive(self, message: Any) -> Any:
        if message == "run":
            try:
                self._run()
            except pykka.ActorDeadError:  # its session stopped first (closed with its stream open): nobody waits
                pass
            self.stop()
        return None

    def _run(self) -> None:
        sid = self.stream_id
        waits = waits_of(self.provider)
        started = time.monotonic()
        deadline = started + waits.request_timeout_s
        attempt = 0  # retries so far
        last: ProviderError | None = None
        while True:
            asm = _Assembler()
            emitted = False
            # Each attempt runs under its own scope: the turn's cancel reaches it, and so does the
            # request's deadline, until the answer starts (a streaming answer is then bounded by
            # the transport's idle timeout, never cut for being long).
            scope = CancelScope("model-attempt")
            unlink = self.cancel.on_cancel(_canceller(scope, "cancelled"))
            stop_clock: Callable[[], None] | None = None
            try:
                try:
                    # Inside the try and kept on the actor, so that whatever ends this thread
                    # (the chaos test's injected exceptions) also stops the clock: a leftover
                    # would keep the timer thread alive for the whole request timeout.
                    stop_clock = self.clock = scheduler.call_later(
                        max(0.0, deadline - time.monotonic()), _canceller(scope, _DEADLINE))
                    for d in self.provider.stream(self.request, scope):
                        if scope.cancelled:
                            break
                        shown = asm.feed(d)
                        if shown:
                            kind = StreamText if isinstance(d, TextPart) else StreamThinking
                            self.reply_to.tell(kind(sid, shown))
                            if not emitted:
                                # Hand the GIL over once: the session relays the first delta now
                                # instead of after this thread's next switch interval of parsing.
                                time.sleep(0)
                            emitted = True
                        if stop_clock is not None:
                            # The answer started: the deadline no longer applies. Stopped after
                            # the delta was relayed, so the timer thread's wake-up cannot delay it.
                            stop_clock()
                            stop_clock = self.clock = None
                finally:
                    if stop_clock is not None:
                        stop_clock()
                    self.clock = None
                    unlink()
            except ProviderError as raised:
                if self.cancel.cancelled:
                    break
                if scope.reason == _DEADLINE:
                    self._end(asm, started, past_deadline(last, waits.request_timeout_s, attempt + 1))
                    return
                err = last = scrubbed(raised)
                if err.retryable and not emitted and attempt < MAX_RETRIES:
                    delay = err.retry_after if err.retry_after is not None else backoff(attempt + 1)
                    final = self._refuse_wait(err, delay, waits, attempt + 1, deadline)
                    if final is not None:
                        self._end(asm, started, final)
                        return
                    attempt += 1
                    self.reply_to.tell(StreamNotice(sid, f"model request failed ({err}); retrying in "
                                                    f"{seconds(delay)} s (retry {attempt} of {MAX_RETRIES})"))
                    if wait_cancelled(self.cancel, delay):
                        break
                    continue
                self._end(asm, started, err)
                return
            except Exception as exc:  # an adapter bug or a transport error the SDK let escape
                if self.cancel.cancelled:
                    break
                self._end(asm, started, scrubbed(ProviderError(f"model stream failed: {type(exc).__name__}: {exc}")))
                return
            if scope.reason == _DEADLINE and not self.cancel.cancelled:
                self._end(asm, started, past_deadline(last, waits.request_timeout_s, attempt + 1))
                return
            break
        api_ms = (time.monotonic() - started) * 1000
        if self.cancel.cancelled:
            self.reply_to.tell(StreamEnd(StreamResult(sid, content=asm.finish(), cancelled=True, api_ms=api_ms)))
            return
        self.reply_to.tell(StreamEnd(StreamResult(sid, content=asm.finish(), stop=asm.stop, usage=asm.usage,
                                                  api_ms=api_ms, model=self.request.model)))

    @staticmethod
    def _refuse_wait(err: ProviderError, delay: float, waits: ProviderConfig, retry: int,
                     deadline: float) -> ProviderError | None:
        """Why the wait of ``delay`` before ``retry`` must not happen (the request's final error),
        or None: the server asks for more than ``max_retry_after_s``, or the wait would pass the
        deadline."""
        if err.retry_after is not None and err.retry_after > waits.max_retry_after_s:
            return over_cap(err, err.retry_after, waits.max_retry_after_s)
        if time.monotonic() + delay > deadline:
            return past_deadline(err, waits.request_timeout_s, retry, wait=delay)
        return None

    def _end(self, asm: _Assembler, started: float, err: ProviderError) -> None:
        self.reply_to.tell(StreamEnd(StreamResult(self.stream_id, content=asm.finish(), error=err,
                                                  api_ms=(time.monotonic() - started) * 1000)))


def _canceller(scope: CancelScope, reason: str) -> Callable[[], None]:
    def cancel() -> None:
        scope.cancel(reason)

    return cancel


def backoff(retry: int) -> float:
    """Seconds before ``retry`` when the server named none: exponential with jitter, ≤ 8 s."""
    return min(8.0, 0.5 * 2.0**retry) * (0.5 + random.random() / 2)


def scrubbed(err: ProviderError) -> ProviderError:
    """``err`` with its message scrubbed of secret shapes: an API error may echo the key it
    rejected, and this message reaches notices, the turn's reason, the rollout and stdout."""
    text, changed = scrub(str(err))
    if not changed:
        return err
    clean = ProviderError(text, retryable=err.retryable, retry_after=err.retry_after, status=err.status,
                          context_overflow=err.context_overflow)
    return clean
