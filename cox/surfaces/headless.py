"""``cox run``: one session driven from a script.

Prints the session's events (``stream-json``), only the final result object (``json``) or the
final answer (``text``), and always ends with exactly one ``result`` — even when an actor
crashed or a signal arrived. Exit codes: 0 ok · 1 error · 2 denied · 3 budget · 4 interrupted.

Everything printed is scrubbed of secret shapes (stream-json lines are the session's scrubbed
rollout lines; the result object is scrubbed value by value). What is printed as text — the
answer, the stderr lines — is sanitised too; JSON stays lossless (its encoder escapes controls).
"""

from __future__ import annotations

import json
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from cox.policy.redact import scrub, scrub_data
from cox.policy.sanitize import sanitize
from cox.protocol import messages as m
from cox.protocol.messages import ProtocolError, decode_submission

from .runtime import SessionHandle

EXIT_OK, EXIT_ERROR, EXIT_DENIED, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 3, 4

FLUSH_EVERY_S = 0.002  # the longest a stream-json line waits in the stdout buffer under a burst

SUBTYPES = {
    "end_turn": "success",
    "max_turns": "error_max_turns",
    "budget": "error_max_budget_usd",
    "error": "error_during_execution",
    "interrupted": "error_interrupted",
    "denied": "error_permission_denied",
}


@dataclass
class RunState:
    """What the result line reports, gathered from the events as they pass."""

    session_id: str
    started: float = field(default_factory=time.monotonic)
    num_turns: int = 0
    api_ms: float = 0.0
    text: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    cost: float = 0.0
    denials: list[dict[str, Any]] = field(default_factory=list)
    stop: str | None = None
    error: str | None = None
    turns_done: int = 0
    inputs_seen: int = 0
    in_turn: bool = False

    def observe(self, event: Any) -> None:
        t = event.type
        if t == "text_delta":
            self.text.append(event.text)
        elif t == "tool_call_requested":
            self.text = []
        elif t == "assistant_message":
            self.num_turns += 1
        elif t == "usage":
            self.api_ms += event.api_ms or 0.0
            total = event.session_total or event.usage
            self.cost = total.cost_usd
            self.usage = {"input_tokens": total.input_tokens, "output_tokens": total.output_tokens,
                          "cache_read_input_tokens": total.cache_read_tokens,
                          "cache_creation_input_tokens": total.cache_write_tokens}
        elif t == "tool_call_done" and event.result.status == "denied":
            self.denials.append({"tool_use_id": event.call_id, "reason": event.result.visible})
        elif t == "error":
            self.error = event.message
        elif t == "user_message":
            self.inputs_seen += 1
        elif t == "turn_started":
            self.in_turn = True
        elif t == "turn_done":
            self.in_turn = False
            self.stop = event.stop.value
            self.turns_done += 1
            if event.reason and event.stop.value != "end_turn":
                self.error = self.error or event.reason

    def exit_code(self) -> int:
        if self.stop == "interrupted":
            return EXIT_INTERRUPTED
        if self.stop in ("error", "max_turns") or self.stop is None:
            return EXIT_ERROR
        if self.stop == "budget":
            return EXIT_BUDGET
        if self.stop == "denied" or self.denials:
            return EXIT_DENIED
        return EXIT_OK

    def result(self) -> dict[str, Any]:
        stop = self.stop or "error"
        subtype = SUBTYPES.get(stop, "error_during_execution")
        text = "".join(self.text)
        is_error = stop != "end_turn"
        res: dict[str, Any] = {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "result": text if not is_error or text else (self.error or stop),
            "session_id": self.session_id,
            "num_turns": self.num_turns,
            "duration_ms": round((time.monotonic() - self.started) * 1000),
            "duration_api_ms": round(self.api_ms),
            "total_cost_usd": round(self.cost, 6),
            "usage": self.usage or {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                                    "cache_creation_input_tokens": 0},
            "permission_denials": self.denials,
            "terminal_reason": stop,
        }
        return scrub_data(res)[0]  # type: ignore[no-any-return]


def shown(text: str) -> str:
    """``text`` as a line for a person: secret shapes redacted, escape sequences removed."""
    return sanitize(scrub(text)[0])


class Printer:
    """Writes one output format. stream-json lines are the session's scrubbed rollout lines."""

    def __init__(self, fmt: str, out: IO[str], err: IO[str], verbose: bool = False) -> None:
        self.fmt = fmt
        self.out = out
        self.err = err
        self.verbose = verbose
        self.transcript = None
        if fmt == "transcript":
            from .transcript import Transcript

            self.transcript = Transcript(out)

    def event(self, event: Any, line: str) -> None:
        if self.transcript is not None:
            self.transcript.event(event)
            return
        if self.fmt == "stream-json":
            self.out.write(line + "\n")
            return
        if event.type == "notice" and event.level in ("warning", "security", "error"):
            self.err.write(f"cox: {event.level}: {shown(event.message)}\n")
        elif event.type == "error":
            self.err.write(f"cox: error: {shown(event.message)}\n")
        elif self.verbose and event.type == "tool_call_requested":
            self.err.write(f"● {shown(event.call.name)}  {shown(event.call.subject)}\n")

    def result(self, state: RunState) -> None:
        res = state.result()
        if self.fmt in ("stream-json", "json"):
            self.out.write(json.dumps(res, ensure_ascii=False, separators=(",", ":")) + "\n")
        elif self.fmt == "transcript":
            self.out.write(f"\nresult: {res['subtype']} · {res['num_turns']} model calls · "
                           f"{res['duration_ms']} ms · ${res['total_cost_usd']:.4f} · "
                           f"{len(res['permission_denials'])} denied\n")
        else:
            text = sanitize(res["result"])
            if text:
                self.out.write(text.rstrip("\n") + "\n")
        self.out.flush()


def _stdin_reader(handle: SessionHandle, stdin: IO[str], err: IO[str], closed: threading.Event,
                  turns_submitted: list[int]) -> None:
    try:
        for lineno, line in enumerate(stdin, start=1):
            if not line.strip():
                continue
            try:
                sub = decode_submission(line)
            except ProtocolError as exc:
                err.write(f"cox: stdin line {lineno}: {shown(str(exc))}\n")
                err.flush()
                continue
            if isinstance(sub, m.UserTurn):
                turns_submitted[0] += 1
            handle.submit(sub)
    finally:
        closed.set()


def run(handle: SessionHandle, prompt: str | None, *, fmt: str = "text", input_format: str = "text",
        stdin: IO[str] | None = None, out: IO[str] | None = None, err: IO[str] | None = None,
        verbose: bool = False, install_signals: bool = True, idle_timeout: float = 0.25) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    printer = Printer(fmt, out, err, verbose)
    state = RunState(handle.session_id)
    interrupted = threading.Event()
    previous: dict[int, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        interrupted.set()
        handle.interrupt()

    if install_signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    stdin_closed = threading.Event()
    turns_submitted = [0]
    try:
        if prompt is not None:
            turns_submitted[0] += 1
            handle.submit(m.UserTurn(text=prompt))
        if input_format == "stream-json":
            reader = threading.Thread(target=_stdin_reader, name="cox-stdin",
                                      args=(handle, stdin or sys.stdin, err, stdin_closed, turns_submitted),
                                      daemon=True)
            reader.start()
        else:
            stdin_closed.set()
        flushed = 0.0
        while True:
            try:
                event, line = handle.events.get(timeout=idle_timeout)
            except queue.Empty:
                if not handle.alive():
                    _drain(handle, printer, state)
                    if state.stop is None:
                        state.error = state.error or "the session stopped unexpectedly"
                    break
                if interrupted.is_set() and not state.in_turn:
                    state.stop = "interrupted"
                    break
                if _idle(state, stdin_closed, turns_submitted):
                    break
                continue
            state.observe(event)
            printer.event(event, line)
            now = time.monotonic()
            if handle.events.empty() or now - flushed >= FLUSH_EVERY_S:
                # Idle: show it now. Under a burst lines leave in big writes, but never sit in the
                # buffer longer than FLUSH_EVERY_S (the first delta of a fast stream included).
                out.flush()
                flushed = now
            if event.type == "turn_done":
                if interrupted.is_set():
                    state.stop = "interrupted"
                    break
                if _idle(state, stdin_closed, turns_submitted):
                    break
        if interrupted.is_set():
            state.stop = "interrupted"
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        try:
            printer.result(state)
        except (BrokenPipeError, ValueError):
            pass
    return state.exit_code()


def _idle(state: RunState, stdin_closed: threading.Event, turns_submitted: list[int]) -> bool:
    """Nothing more will happen: input is closed, every submitted message was taken, no turn runs."""
    return stdin_closed.is_set() and state.inputs_seen >= turns_submitted[0] and not state.in_turn


def _drain(handle: SessionHandle, printer: Printer, state: RunState) -> None:
    while True:
        try:
            event, line = handle.events.get_nowait()
        except queue.Empty:
            return
        state.observe(event)
        printer.event(event, line)
