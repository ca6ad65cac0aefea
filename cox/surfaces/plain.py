"""The line-mode surface: ``cox`` (and ``cox --resume ID``) in any terminal, and for screen
readers. It sends Submissions and renders Events like every other surface: type a message and
press Enter; approvals ask y/s/n/e; Ctrl+C interrupts a running turn; Ctrl+D or /quit leaves.
"""

from __future__ import annotations

import json
import queue
import signal
import sys
import threading
from typing import IO, Any

from cox.policy.sanitize import sanitize
from cox.protocol import messages as m
from cox.protocol.types import Decision, PermissionMode, RewindWhat

from .questions import shape
from .runtime import SessionHandle
from .transcript import Transcript

HELP = """commands: /mode architect|editor|default|acceptEdits|plan|bypassPermissions · /rewind N [code|conversation|both]
          /compact [focus] · /help · /quit     (Ctrl+C interrupts a running turn)"""


def _answer(call: Any, reason: str, ask: Any, out: IO[str]) -> m.Approve:
    out.write(f"\n  {call.name} wants to run: {sanitize(call.subject or json.dumps(call.input))}\n"
              f"  risk {call.risk.value} · {sanitize(reason)}\n")
    while True:
        choice = ask("  allow? [y]es once · [s]ession · [n]o · [e]dit input › ").strip().lower()
        if choice in ("y", "yes"):
            return m.Approve(call_id=call.id, decision=Decision.ALLOW)
        if choice in ("s", "session"):
            return m.Approve(call_id=call.id, decision=Decision.ALLOW_FOR_SESSION)
        if choice in ("n", "no"):
            return m.Approve(call_id=call.id, decision=Decision.DENY)
        if choice in ("e", "edit"):
            raw = ask(f"  new input as JSON (now {json.dumps(call.input)}) › ")
            try:
                edited = json.loads(raw)
                if isinstance(edited, dict):
                    return m.Approve(call_id=call.id, decision=Decision.EDIT, edited_input=edited)
            except json.JSONDecodeError:
                pass
            out.write("  that is not a JSON object; try again\n")


def _question(event: Any, ask: Any, out: IO[str]) -> m.Answer:
    """One question (an MCP server's form field, review step or URL): ``question from
    mcp:<server>:``, the prompt, the choices; an empty line cancels the whole request (or keeps
    the last answer in an edit round), ``-`` is an empty answer (the default, or skip)."""
    q = shape(event)
    out.write(f"\n  question from {q.source}:\n")
    for line in q.prompt.splitlines() or [""]:
        out.write(f"    {line}\n")
    if q.options:
        out.write("    " + "   ".join(f"{i}) {label}" for i, (_, label) in enumerate(q.options, 1)) + "\n")
    how = {"choice": "a number or a name", "multi": "numbers or names, separated by commas"}.get(q.kind, "")
    empty = "an empty line keeps the last answer" if q.keep else "an empty line cancels"
    hint = " · ".join(x for x in (how, empty, "" if q.step in ("review", "url") else "- for an empty answer") if x)
    line = ask(f"  ({hint}) › ").strip()
    if not line:
        return m.Answer(question_id=event.question_id, answer="") if q.keep else \
            m.Answer(question_id=event.question_id, declined=True)
    if line == "-":
        return m.Answer(question_id=event.question_id, answer="")
    if q.kind == "choice" and line.isdigit() and 1 <= int(line) <= len(q.options):
        return m.Answer(question_id=event.question_id, answer=q.options[int(line) - 1][0])
    return m.Answer(question_id=event.question_id, answer=line)


def _command(line: str, handle: SessionHandle, out: IO[str], ask: Any = None, think_price: str = "") -> bool | None:
    """Run a slash command. False to quit, True when handled, None when not a command."""
    if not line.startswith("/"):
        return None
    word, _, rest = line[1:].partition(" ")
    rest = rest.strip()
    if word in ("quit", "exit"):
        return False
    if word == "help":
        out.write(HELP + "\n")
    elif word == "mode":
        if rest == "architect":
            if ask is None or _consent(ask, think_price):
                handle.submit(m.SetMode(preset="architect"))
        elif rest == "editor":
            handle.submit(m.SetMode(preset="editor"))
        else:
            try:
                handle.submit(m.SetMode(mode=PermissionMode(rest)))
            except ValueError:
                out.write("  modes: architect, editor, default, acceptEdits, plan, bypassPermissions\n")
    elif word == "rewind":
        parts = rest.split()
        if not parts or not parts[0].isdigit():
            out.write("  /rewind N [code|conversation|both]\n")
        else:
            what: RewindWhat = "both"
            if len(parts) > 1 and parts[1] in ("code", "conversation", "both"):
                what = parts[1]  # type: ignore[assignment]
            handle.submit(m.Rewind(to_turn=int(parts[0]), what=what))
    elif word == "compact":
        handle.submit(m.Compact(focus=rest or None))
    else:
        out.write(f"  unknown command /{word}; /help lists them\n")
    return True


def _consent(ask: Any, think_price: str) -> bool:
    """Architect mode's think tier costs more: say how much and ask, once per architect stretch."""
    answer = ask(f"  architect mode runs main turns on {think_price or 'the think tier'}; go on? [y/N] › ")
    return answer.strip().lower() in ("y", "yes")


def run(handle: SessionHandle, *, resumed: Any = None, stdin: IO[str] | None = None,
        out: IO[str] | None = None, think_price: str = "", architect_from_config: bool = False) -> int:
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    view = Transcript(out)

    def ask(prompt: str) -> str:
        out.write(prompt)
        out.flush()
        line = stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    interrupted = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.set()
        handle.interrupt()

    previous = signal.signal(signal.SIGINT, on_sigint) if threading.current_thread() is threading.main_thread() else None
    in_turn = False
    if resumed is not None:
        out.write(f"resumed session {handle.session_id}: {len(resumed.history)} messages, "
                  f"{resumed.last_turn} turns\n")
    out.write("cox — type a message, /help for commands\n")
    if architect_from_config:
        try:
            if not _consent(ask, think_price):
                handle.submit(m.SetMode(preset="editor"))
                out.write("  staying in editor mode\n")
        except EOFError:
            return 0
    try:
        while True:
            try:
                event, _ = handle.events.get(timeout=0.05)
            except queue.Empty:
                if not handle.alive():
                    out.write("  the session stopped\n")
                    return 1
                if in_turn:
                    continue
                try:
                    line = ask("\n› ")
                except EOFError:
                    return 0
                if not line.strip():
                    continue
                handled = _command(line.strip(), handle, out, ask, think_price)
                if handled is False:
                    return 0
                if handled is None:
                    handle.submit(m.UserTurn(text=line))
                    in_turn = True
                continue
            if event.type == "session_started":
                continue
            if event.type == "user_message" and not event.steered:
                in_turn = True
                continue  # the person just typed it
            view.event(event)
            if event.type == "approval_required":
                try:
                    handle.submit(_answer(event.call, event.reason, ask, out))
                except EOFError:
                    handle.interrupt()
            elif event.type == "question":
                try:
                    handle.submit(_question(event, ask, out))
                except EOFError:
                    handle.submit(m.Answer(question_id=event.question_id, declined=True))
            elif event.type == "turn_done":
                in_turn = False
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
