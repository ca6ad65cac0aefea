"""``cox run``: one session driven from a script.

Prints the session's events (``stream-json``), only the result objects (``json``) or the answer
(``text``). Every run ends with a ``result`` — even when an actor crashed or a signal arrived;
with ``--input-format stream-json`` each turn ends with its own, written as the turn ends, and
user turns from stdin run one after another (one sent while a turn runs waits for it). The exit
code is a function of the last result (``exit_code``): 0 ok · 1 error · 2 a call was denied ·
3 budget · 4 interrupted · 64 usage error. After a failure ``result`` is the error and
``partial_result`` what the model had said.

Everything printed is scrubbed of secret shapes (stream-json lines are the session's scrubbed
rollout lines; the result object is scrubbed value by value). What is printed as text — the
answer on stdout, the status lines (denied calls, errors, "interrupted", the session id) on
stderr — is sanitised too; JSON stays lossless (its encoder escapes controls).
"""

from __future__ import annotations

import collections
import json
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import field
from typing import IO, TYPE_CHECKING, Any

from cox.policy.redact import scrub, scrub_data
from cox.policy.sanitize import sanitize
from cox.protocol import messages as m
from cox.protocol.messages import ProtocolError, decode_submission
from cox.slim import dataclass

from .stopper import Stopper

if TYPE_CHECKING:
    from .runtime import SessionHandle
    from .structured import StructuredAnswer

EXIT_OK, EXIT_ERROR, EXIT_DENIED, EXIT_BUDGET, EXIT_INTERRUPTED, EXIT_USAGE = 0, 1, 2, 3, 4, 64

FLUSH_EVERY_S = 0.002  # the longest a stream-json line waits in the stdout buffer under a burst
INTERRUPT_GRACE_S = 10.0
"""How long a turn may take to stop after a signal before the run reports it interrupted anyway."""

SUBTYPES = {
    "end_turn": "success",
    "max_turns": "error_max_turns",
    "budget": "error_max_budget_usd",
    "error": "error_during_execution",
    "interrupted": "error_interrupted",
    "denied": "error_permission_denied",
    "usage": "error_usage",
}
EXIT_CODES = {"success": EXIT_OK, "error_permission_denied": EXIT_DENIED, "error_max_budget_usd": EXIT_BUDGET,
              "error_interrupted": EXIT_INTERRUPTED, "error_usage": EXIT_USAGE}
NOTHING: Any = object()
"""No structured output (a None would be the JSON value null)."""
WAKE: tuple[Any, str] = (None, "")
"""Put on the event queue by the stdin reader and the signal relay: the loop has something to look at."""
SEQUENCED = (m.UserTurn, m.Rewind)
"""Submissions from stdin that wait until no turn runs; the others (approve, interrupt, answer,
…) go to the session at once, since a running turn may be waiting for them."""


FINAL_WORDS_S = 2.0
"""How long a session that left the registry may take to emit what its crash handling says (one
turn_done for the open turn); it is quick, and a session that died before it began says nothing."""


class TurnRefused(Exception):
    """A ``/name args`` line from stdin that could not be expanded: ``str()`` says why; ``stop``
    is the result's stop reason (``error``, or ``usage`` for a name that cannot be used so)."""

    def __init__(self, message: str, stop: str = "error") -> None:
        super().__init__(message)
        self.stop = stop


Slash = Callable[[str], Any]
"""A stdin turn's ``/name args`` → its ``cox.commands.turns.Expanded`` (the turn, the model to
switch to or None, the allow rules it pre-approves); raises TurnRefused."""


def exit_code(result: dict[str, Any]) -> int:
    """The exit code a result stands for: the one place they are tied together."""
    subtype = result["subtype"]
    if subtype == "success":
        return EXIT_DENIED if result.get("permission_denials") else EXIT_OK
    return EXIT_CODES.get(subtype, EXIT_ERROR)


@dataclass
class RunState:
    """What the next result line reports, gathered from the events as they pass. The fields of
    the current action (a turn, or what happened since the last result) start again after each
    result; cost and usage are the session's totals."""

    session_id: str | None
    started: float = field(default_factory=time.monotonic)
    num_turns: int = 0
    api_ms: float = 0.0
    text: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    cost: float = 0.0
    agents_cost: float = 0.0
    """What the session's subagents spent (their usage, relayed): the result's cost is the tree's."""
    denials: list[dict[str, Any]] = field(default_factory=list)
    stop: str | None = None
    error: str | None = None
    in_turn: bool = False
    rewinds: int = 0
    warning: str | None = None
    """The last warning or error notice: why a rewind did not happen."""
    structured: Any = NOTHING
    """``--output-schema`` / ``--json-schema``: the final answer's parsed value, once it passed."""

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
        elif t == "agent_event" and event.event.get("type") == "usage":  # a subagent's request: the tree's cost
            self.agents_cost += float((event.event.get("usage") or {}).get("cost_usd") or 0.0)
        elif t == "tool_call_done" and event.result.status == "denied":
            self.denials.append({"tool_use_id": event.call_id, "reason": event.result.visible})
        elif t == "error":
            self.error = event.message
        elif t == "notice" and event.level in ("warning", "error"):
            self.warning = event.message
        elif t == "rewound":
            self.rewinds += 1
        elif t == "turn_started":
            self.in_turn = True
            self.text = []
        elif t == "turn_done":
            self.in_turn = False
            self.stop = event.stop.value
            if event.reason and event.stop.value != "end_turn":
                self.error = event.reason if event.stop.value != "error" or not self.error else self.error

    def next_action(self) -> None:
        """A result was written: what follows is reported by the next one."""
        self.started = time.monotonic()
        self.num_turns, self.api_ms, self.text, self.denials = 0, 0.0, [], []
        self.stop = self.error = None
        self.structured = NOTHING

    def result(self) -> dict[str, Any]:
        stop = self.stop or "error"
        subtype = SUBTYPES.get(stop, "error_during_execution")
        text = "".join(self.text)
        is_error = subtype != "success"
        res: dict[str, Any] = {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "result": (self.error or stop) if is_error else text,
            "session_id": self.session_id,
            "num_turns": self.num_turns,
            "duration_ms": round((time.monotonic() - self.started) * 1000),
            "duration_api_ms": round(self.api_ms),
            "total_cost_usd": round(self.cost + self.agents_cost, 6),
            "usage": self.usage or {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                                    "cache_creation_input_tokens": 0},
            "permission_denials": self.denials,
            "terminal_reason": stop,
        }
        if is_error:
            res["errors"] = [res["result"]]
            res["partial_result"] = text
        elif self.structured is not NOTHING:
            res["structured_output"] = self.structured
        return scrub_data(res)[0]  # type: ignore[no-any-return]


def shown(text: str) -> str:
    """``text`` as a line for a person: secret shapes redacted, escape sequences removed."""
    return sanitize(scrub(text)[0])


class Printer:
    """Writes one output format. stream-json lines are the session's scrubbed rollout lines; in
    text the answer alone goes to stdout and every status line to stderr."""

    def __init__(self, fmt: str, out: IO[str], err: IO[str], verbose: bool = False) -> None:
        self.fmt = fmt
        self.out = out
        self.err = err
        self.verbose = verbose
        self.transcript = None
        self.calls: dict[str, str] = {}
        self.said: set[str] = set()
        """The error lines already on stderr (the result does not repeat them)."""
        self.since_result = False
        """Something was printed after the last result line (so the run needs one more)."""
        if fmt == "transcript":
            from .transcript import Transcript

            self.transcript = Transcript(out)

    def _status(self, text: str) -> None:
        line = shown(text)
        self.said.add(line)
        self.err.write(f"cox: {line}\n")

    def event(self, event: Any, line: str) -> None:
        self.since_result = True
        if self.transcript is not None:
            self.transcript.event(event)
            return
        if self.fmt == "stream-json":
            self.out.write(line + "\n")
            return
        t = event.type
        if t == "notice" and event.level in ("warning", "security", "error"):
            self._status(f"{event.level}: {event.message}")
            self.said.add(shown(event.message))  # a turn ended for that reason: said once
        elif t == "error":
            self._status(f"error: {event.message}")
            self.said.add(shown(event.message))
        elif t == "tool_call_requested":
            self.calls[event.call.id] = f"{event.call.name} {event.call.subject}".strip()
            if self.verbose:
                self.err.write(f"● {shown(event.call.name)}  {shown(event.call.subject)}\n")
        elif t == "tool_call_done" and event.result.status == "denied":
            why = (event.result.visible or "").strip().splitlines()
            self._status(f"denied: {self.calls.get(event.call_id, event.call_id)}" + (f": {why[0]}" if why else ""))

    def result(self, state: RunState) -> dict[str, Any]:
        res = state.result()
        if self.fmt in ("stream-json", "json"):
            self.out.write(json.dumps(res, ensure_ascii=False, separators=(",", ":")) + "\n")
        elif self.fmt == "transcript":
            self.out.write(f"\nresult: {res['subtype']} · {res['num_turns']} model calls · "
                           f"{res['duration_ms']} ms · ${res['total_cost_usd']:.4f} · "
                           f"{len(res['permission_denials'])} denied\n")
        else:
            answer = sanitize(res["partial_result"] if res["is_error"] else res["result"])
            if answer:
                self.out.write(answer.rstrip("\n") + "\n")
            if res["is_error"] and shown(res["result"]) not in self.said:
                self._status(res["result"])
        self.out.flush()
        self.since_result = False
        return res


def refusal(fmt: str, message: str, *, stop: str = "error", session_id: str | None = None,
            out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """A run that could not start: one ``cox: …`` line on stderr, and in json formats the result
    line too (``subtype`` ``error_*``, the message in ``result`` and ``errors``). Returns the exit
    code that result stands for."""
    out = out or sys.stdout
    err = err or sys.stderr
    state = RunState(session_id, stop=stop, error=message)
    printer = Printer(fmt, out, err)
    printer._status(message)
    try:
        res = printer.result(state) if fmt in ("json", "stream-json") else state.result()
    except (BrokenPipeError, ValueError):
        res = state.result()
    return exit_code(res)


def _stdin_reader(handle: SessionHandle, stdin: IO[str], err: IO[str], closed: threading.Event,
                  inbox: collections.deque[Any]) -> None:
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
            if isinstance(sub, SEQUENCED):
                inbox.append(sub)
                handle.events.put(WAKE)
            else:
                handle.submit(sub)
    finally:
        closed.set()
        handle.events.put(WAKE)


def run(handle: SessionHandle, prompt: str | None, *, fmt: str = "text", input_format: str = "text",
        stdin: IO[str] | None = None, out: IO[str] | None = None, err: IO[str] | None = None,
        verbose: bool = False, install_signals: bool = True, idle_timeout: float = 0.25,
        stopper: Stopper | None = None, explain: Callable[[], str | None] | None = None,
        dialect: Any = None, structured: StructuredAnswer | None = None,
        final: Callable[[dict[str, Any] | None], None] | None = None, slash: Slash | None = None,
        allow: list[str] | None = None) -> int:
    """Drive ``handle`` until its input is used up; returns the exit code of the last result.

    ``stopper``: the process's signal handling (``cox run`` installs it before start-up);
    without one, ``install_signals`` installs one for the length of this call. ``explain``: asked
    why when the session stops unexpectedly (``cox run`` checks its home: a store that could not
    open cox.db takes the session down with it). ``dialect``: another wire (Claude Code's,
    ``claude_code.driver``): its ``printer`` writes, its ``attach`` reads stdin, its
    ``exit_code`` maps the last result; the loop — turns in order, one result each — is this one.
    ``structured`` (``--json-schema``, ``--output-schema``): each turn's final answer is checked;
    one that fails goes back to the model once before the result is written. ``final`` is handed
    the last result (``--output-last-message``) before this returns. ``slash`` expands a stdin
    turn that is a ``/name args`` line (custom command, MCP prompt, ``/init``, skill) before it
    is submitted, as ``-p "/name args"`` is at start-up; one it refuses gets an error result and
    the run goes on with the next input. ``allow``: the allow rules ``prompt``'s turn pre-approves
    (the person's command's or skill's ``allowed-tools``)."""
    out = out or sys.stdout
    err = err or sys.stderr
    printer: Any = dialect.printer if dialect is not None else Printer(fmt, out, err, verbose)
    code_of: Callable[[dict[str, Any]], int] = dialect.exit_code if dialect is not None else exit_code
    flush: Callable[[], None] = dialect.wire.flush if dialect is not None else out.flush
    from .trace import Trace

    trace = Trace()
    state = RunState(handle.session_id)
    own = stopper is None
    if stopper is None:
        stopper = Stopper()
        if install_signals:
            stopper.install()
    interrupted = threading.Event()
    inbox: collections.deque[Any] = collections.deque()
    stdin_closed = threading.Event()
    last: dict[str, Any] | None = None
    awaiting = False  # a user turn was submitted and its turn_done not seen yet
    interrupted_at = 0.0
    tail = False  # the run ends with a result of its own (not the last turn's)

    def on_signal() -> None:  # the relay thread, never the signal handler itself
        interrupted.set()
        handle.interrupt()
        handle.events.put(WAKE)

    # Before anything is submitted: from here a signal interrupts the session instead of start-up.
    stopper.running(on_signal)
    typed: list[Any] = []  # the turns this loop made (the prompt, a schema's retry): never expanded
    if prompt is not None:
        typed.append(m.UserTurn(text=prompt, allow=allow))
        inbox.append(typed[-1])
    if input_format == "stream-json" and dialect is not None:
        dialect.attach(handle, inbox, stdin_closed, lambda: handle.events.put(WAKE))
    elif input_format == "stream-json":
        threading.Thread(target=_stdin_reader, name="cox-stdin",
                         args=(handle, stdin or sys.stdin, err, stdin_closed, inbox), daemon=True).start()
    else:
        stdin_closed.set()
    try:
        flushed = 0.0
        while True:
            if not awaiting and not state.in_turn:
                remaining = bool(inbox) or not stdin_closed.is_set()
                if interrupted.is_set():
                    # A tail result only when the signal stopped something the last result does
                    # not already report: input still to come, or output since that result.
                    cut_short = remaining and (last is None or last["subtype"] != "error_interrupted")
                    if cut_short or printer.since_result or last is None:
                        state.stop, state.error = "interrupted", _interrupted(stopper)
                        tail = True
                    break
                if inbox:
                    sub = inbox.popleft()
                    if isinstance(sub, m.UserTurn) and slash is not None and not any(sub is t for t in typed) \
                            and sub.text.lstrip().startswith("/"):
                        try:
                            sub = _expanded(handle, sub, slash)
                        except TurnRefused as exc:
                            state.stop, state.error = exc.stop, str(exc)
                            last = _write(printer, state)
                            continue
                    if isinstance(sub, m.UserTurn):
                        awaiting = handle.submit(sub)
                        if not awaiting:
                            state.error = _why(explain, "the session stopped before it took the turn")
                            tail = True
                            break
                    else:
                        _rewind(handle, sub, printer, state)
                    continue
                if not remaining:
                    break
            elif interrupted.is_set():
                interrupted_at = interrupted_at or time.monotonic()
                if stopper.count >= 2 or time.monotonic() - interrupted_at > INTERRUPT_GRACE_S:
                    state.stop = "interrupted"
                    state.error = f"{_interrupted(stopper)}; the turn did not stop in time"
                    tail = True
                    break
            try:
                event, line = handle.events.get(timeout=idle_timeout)
            except queue.Empty:
                if not handle.alive():  # nobody stopped it: whatever it was doing, that is an error
                    handle.holder.finished.wait(FINAL_WORDS_S)  # its crash's last events, if it says them
                    if not handle.events.empty():
                        continue  # what it said before it went (a turn_done gets its result)
                    state.stop = "error"
                    state.error = state.error or _why(explain, "the session stopped unexpectedly")
                    tail = True
                    break
                continue
            if event is None:
                continue
            state.observe(event)
            printer.event(event, line)
            trace.event(event)
            now = time.monotonic()
            if handle.events.empty() or now - flushed >= FLUSH_EVERY_S:
                # Idle: show it now. Under a burst lines leave in big writes, but never sit in the
                # buffer longer than FLUSH_EVERY_S (the first delta of a fast stream included).
                flush()
                flushed = now
            if event.type == "turn_done":
                awaiting = False
                if structured is not None and state.stop == "end_turn" and _answer_again(structured, state, inbox):
                    continue  # the answer failed the schema: the same action goes on, its result comes later
                if state.stop == "interrupted":
                    state.error = _interrupted(stopper) if interrupted.is_set() else state.error or "interrupted"
                last = _write(printer, state)
    except Exception as exc:  # a bug here must still end in a result
        state.stop, state.error = "error", f"cox run failed: {exc}"
        tail = True
    finally:
        stopper.settle()
        if tail or last is None or printer.since_result:
            last = _write(printer, state)
        stopper.exit_code = code_of(last)
        if final is not None:
            final(last)
        if fmt == "text" and dialect is None and last is not None and last.get("session_id"):
            _say(err, f"cox: session {last['session_id']}\n")
        if own:
            stopper.restore()
    return stopper.exit_code


def _answer_again(structured: StructuredAnswer, state: RunState, inbox: collections.deque[Any]) -> bool:
    """Judge the turn's final answer against the schema. True when it goes back to the model
    (the validation error first in the inbox); else the result carries the value or the failure."""
    verdict = structured.check("".join(state.text))
    if verdict.retry is not None:
        inbox.appendleft(m.UserTurn(text=verdict.retry))  # begins with no "/": never taken for a command
        return True
    if verdict.ok:
        state.structured = verdict.value
    else:
        state.stop, state.error = "error", verdict.error
    return False


def _expanded(handle: SessionHandle, sub: m.UserTurn, slash: Slash) -> m.UserTurn:
    """The turn a stdin ``/name args`` line stands for (the command's model switched to first,
    as ``/model NAME`` would); raises TurnRefused."""
    got = slash(sub.text)
    if got.text == sub.text:
        return sub  # it names no command nor skill: it goes to the model as typed
    if got.model:
        handle.submit(m.SetModel(model=got.model))
    return m.UserTurn(text=got.text, images=sub.images, allow=got.allow)


def _write(printer: Any, state: RunState) -> dict[str, Any]:
    if state.stop is None:  # nothing ran since the last result (a rewind, a notice, no input at all)
        state.stop = "error" if state.error else "end_turn"
    try:
        res: dict[str, Any] = printer.result(state)
    except (BrokenPipeError, ValueError):  # stdout went away; the exit code still says how it ended
        res = state.result()
    state.next_action()
    return res


def _why(explain: Callable[[], str | None] | None, fallback: str) -> str:
    try:
        return (explain() if explain is not None else None) or fallback
    except Exception:
        return fallback


def _say(err: IO[str], text: str) -> None:
    try:
        err.write(text)
        err.flush()
    except (BrokenPipeError, ValueError):
        pass


def _interrupted(stopper: Stopper) -> str:
    return f"interrupted by {stopper.name}" if stopper.name else "interrupted"


def _rewind(handle: SessionHandle, sub: m.Rewind, printer: Any, state: RunState) -> None:
    """Run a rewind to its end (an ``ask``: every event it emitted is queued when it returns), so
    a run that only rewinds reports how the rewind went, and a failed one is an error."""
    before = state.rewinds
    state.warning = None
    ref = handle.ref()
    try:
        if ref is None:
            raise RuntimeError("the session is not running")
        ref.ask(sub, timeout=60)
    except Exception as exc:
        state.error = f"rewind to turn {sub.to_turn} failed: {exc}"
    _drain(handle, printer, state)
    if state.rewinds == before and state.error is None:
        state.error = f"rewind to turn {sub.to_turn} did not happen: {state.warning or 'the session did not say why'}"
    printer.since_result = True


def _drain(handle: SessionHandle, printer: Any, state: RunState) -> None:
    while True:
        try:
            event, line = handle.events.get_nowait()
        except queue.Empty:
            return
        if event is None:
            continue
        state.observe(event)
        printer.event(event, line)
