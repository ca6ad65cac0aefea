"""The line-mode surface: ``cox`` (and ``cox --resume ID``) in any terminal, and for screen
readers. It sends Submissions and renders Events like every other surface: type a message and
press Enter; approvals ask y/s/n/e; Ctrl+C interrupts a running turn; Ctrl+D or /quit leaves.

A question (an MCP server's elicitation) can close while its prompt waits for a line
(``QuestionClosed``: the server withdrew it, the turn was interrupted). The prompt then stops
waiting, and what was typed for it must not answer whatever is asked next. Why stdin is read
the way :class:`Lines` reads it, and not by a thread blocked in ``readline``: such a thread
holds a read in flight when the question closes, and the line it returns next — the end of the
withdrawn answer, or a line typed for the next prompt, there is no telling which — would land
on the next question (or be sent to the model). :class:`Lines` only ever takes a *complete*
line from the terminal (``select`` says one is there; the terminal's line discipline holds a
half-typed line until Enter), so nothing is in flight when a question closes; what was typed
for it (a half-typed line, or a line finished as it closed) is then discarded from the
terminal's input queue (``tcflush``) and the notice says so. Input from a pipe or a file is
left alone: it is a script, and its next line is meant for the next prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import sys
import threading
from collections import deque
from typing import IO, Any

from cox.policy.sanitize import sanitize
from cox.protocol import messages as m
from cox.protocol.types import Decision, PermissionMode, RewindWhat

from .questions import closed_text, shape
from .runtime import SessionHandle
from .transcript import Transcript
from .tui.agents import Agents
from .tui.agents import line as agent_line

HELP = """commands: /mode architect|editor|default|acceptEdits|plan|dontAsk|bypassPermissions · /rewind N [code|conversation|both]
          /compact [focus] · /agents · /init (write AGENTS.md) · /help · /quit     (Ctrl+C interrupts a running turn)"""


def _answer(call: Any, reason: str, ask: Any, out: IO[str]) -> m.Approve:
    out.write(f"\n  {sanitize(call.name)} wants to run: {sanitize(call.subject or json.dumps(call.input))}\n"
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


class QuestionGone(Exception):
    """The question being asked closed (``QuestionClosed``) before a line came."""


class Lines:
    """Lines from stdin, taken only when complete (see the module's docstring).

    ``get(timeout)`` returns a line (without its newline), ``None`` when none came within
    ``timeout`` (``None``: wait as long as it takes), and raises ``EOFError`` at the end of input. ``discard()`` drops what the
    person typed but the program has not read (a terminal only). A stream without a usable file
    descriptor (a ``StringIO``) or a platform without ``select`` on it is read with a plain,
    blocking ``readline``."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.fd: int | None = None
        self.tty = False
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self.buf = b""
        self.eof = False
        if os.name == "posix":
            with contextlib.suppress(AttributeError, OSError, ValueError):
                fd = stream.fileno()
                select.select([fd], [], [], 0)  # a descriptor select cannot watch raises here
                self.fd = fd
                self.tty = os.isatty(fd)

    def get(self, timeout: float | None) -> str | None:
        if self.fd is None:
            line = self.stream.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")
        while b"\n" not in self.buf:
            if self.eof:
                if not self.buf:
                    raise EOFError
                rest, self.buf = self.buf, b""
                return rest.decode(self.encoding, "replace")
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                self.eof = True
            self.buf += chunk
            timeout = 0.0
        raw, _, self.buf = self.buf.partition(b"\n")
        return raw.decode(self.encoding, "replace").rstrip("\r")

    def discard(self) -> bool:
        """Drop typed-ahead input of a terminal (a half-typed line included); True if done."""
        if not self.tty or self.fd is None:
            return False
        import termios

        try:
            termios.tcflush(self.fd, termios.TCIFLUSH)
        except (OSError, termios.error):
            return False
        self.buf = b""
        return True


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
    line = ask(f"  ({hint}) › ", event.question_id).strip()
    if not line:
        return m.Answer(question_id=event.question_id, answer="") if q.keep else \
            m.Answer(question_id=event.question_id, declined=True)
    if line == "-":
        return m.Answer(question_id=event.question_id, answer="")
    if q.kind == "choice" and line.isdigit() and 1 <= int(line) <= len(q.options):
        return m.Answer(question_id=event.question_id, answer=q.options[int(line) - 1][0])
    return m.Answer(question_id=event.question_id, answer=line)


class ChildLines:
    """The subagents' relayed events as lines: one per call and per result, prefixed ``⑂ <id>``
    (``a1`` for ``<session>-a1``), and one when an agent's turn ends. The
    child's events are untrusted text: all of it passes ``sanitize`` (``Agents`` and here)."""

    def __init__(self) -> None:
        self.agents = Agents()
        self.calls: dict[tuple[str, str], str] = {}  # (agent, call id) -> tool name
        self.cwd = ""

    def event(self, event: Any, out: IO[str]) -> None:
        t = event.type
        if t == "session_started":
            self.cwd = event.cwd.rstrip("/") + "/"
        elif t == "tool_call_requested":
            self.agents.called(event.call)
        elif t == "tool_call_done":
            self.agents.result(event)
        if t != "agent_event":
            return
        got = self.agents.relayed(event)
        if got is None:
            return
        agent, child = got
        who = f"  ⑂ {agent.short}"
        c = child.type
        if c == "tool_call_requested":
            name = sanitize(child.call.name)
            self.calls[(agent.id, child.call.id)] = name
            subject = " ".join(sanitize(child.call.subject or json.dumps(child.call.input)).split())
            if self.cwd:
                subject = subject.replace(self.cwd, "")  # paths inside the workspace, as written
            out.write(f"{who} ● {name}  {_short(subject)}\n")
        elif c == "tool_call_done":
            name = self.calls.pop((agent.id, child.call_id), "tool")
            r = child.result
            mark = {"ok": "✓", "denied": "⊘", "aborted": "■"}.get(r.status.value, "✗")
            first = sanitize(r.visible.strip().splitlines()[0] if r.visible.strip() else "")
            out.write(f"{who} {mark} {name}  {_short(first, 100)}\n")
        elif c == "turn_done":
            out.write(f"{who} {agent.type} {agent.state}" + (f" ({child.stop.value})" if agent.state != "done" else "")
                      + "\n")
        else:
            return
        out.flush()

    def listing(self) -> str:
        rows = self.agents.rows()
        if not rows:
            return "  no subagents run yet\n"
        return "".join(f"  {agent_line(a)}\n" for a in rows)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _command(line: str, handle: SessionHandle, out: IO[str], ask: Any = None, think_price: str = "",
             children: ChildLines | None = None, skills: Any = None, commands: Any = None) -> bool | str | None:
    """Run a slash command. False to quit, True when handled, None when not a command, and for
    ``/NAME`` of a skill the turn's text, its instructions loaded (``cox.agents.skills``)."""
    if not line.startswith("/"):
        return None
    word, _, rest = line[1:].partition(" ")
    rest = rest.strip()
    if word in ("quit", "exit"):
        return False
    if word == "help":
        out.write(HELP + "\n")
        for custom in commands.help_lines() if commands is not None else []:
            out.write(f"  {sanitize(custom)}\n")
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
                out.write("  modes: architect, editor, default, acceptEdits, plan, dontAsk, bypassPermissions\n")
    elif word == "rewind":
        parts = rest.split()
        force = "--force" in parts
        parts = [x for x in parts if x != "--force"]
        if not parts or not parts[0].isdigit():
            out.write("  /rewind N [code|conversation|both] [--force]\n")
        else:
            what: RewindWhat = "both"
            if len(parts) > 1 and parts[1] in ("code", "conversation", "both"):
                what = parts[1]  # type: ignore[assignment]
            handle.submit(m.Rewind(to_turn=int(parts[0]), what=what, force=force))
    elif word == "compact":
        handle.submit(m.Compact(focus=rest or None))
    elif word == "agents":
        out.write(children.listing() if children is not None else "  no subagents run yet\n")
    else:
        from cox.agents.skills import user_named

        turn, why = user_named(line, skills)
        if turn is not None:
            return turn
        out.write(f"  {sanitize(why)}\n" if why else f"  unknown command /{word}; /help lists them\n")
    return True


def _consent(ask: Any, think_price: str) -> bool:
    """Architect mode's think tier costs more: say how much and ask, once per architect stretch."""
    answer = ask(f"  architect mode runs main turns on {think_price or 'the think tier'}; go on? [y/N] › ")
    return answer.strip().lower() in ("y", "yes")


def _leave_worktree(wt: Any, ask: Any, out: IO[str]) -> None:
    """On /quit in a worktree (``cox.worktrees.Worktree``): offer to remove a clean one, keep a
    dirty one and say so; the branch always stays."""
    from cox.worktrees import WorktreeError, is_clean, remove

    where, branch = sanitize(str(wt.path)), sanitize(wt.branch)
    if not is_clean(wt):
        out.write(f"  worktree {where} has uncommitted changes: kept (branch {branch})\n")
        return
    try:
        answer = ask(f"  worktree {where} is clean; remove it? (branch {branch} stays) [y/N] › ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        out.write(f"  worktree {where} kept (branch {branch})\n")
        return
    try:
        remove(wt)
        out.write(f"  removed worktree {where}; branch {branch} stays\n")
    except WorktreeError as exc:
        out.write(f"  {sanitize(str(exc))}\n")


def run(handle: SessionHandle, *, resumed: Any = None, stdin: IO[str] | None = None,
        out: IO[str] | None = None, think_price: str = "", architect_from_config: bool = False,
        worktree: Any = None, skills: Any = None, commands: Any = None) -> int:
    """``commands``: the session's custom commands, MCP prompts and ``/init``
    (``cox.commands.turns.SessionCommands``); a command's ``!`…``` line the engine asks about is
    asked here, like a model's call. ``skills``: ``/NAME`` of a skill sends its instructions."""
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    view = Transcript(out)
    children = ChildLines()
    lines = Lines(stdin)
    held: deque[tuple[Any, str]] = deque()  # events taken off the queue while a question waited
    closed: dict[str, str] = {}  # question id -> reason, of closes that may still wait in ``held``
    announced: set[str] = set()  # closes already said where their prompt waited

    def pump() -> None:
        """Move the events that are already there to ``held``, noting closed questions."""
        while True:
            try:
                item = handle.events.get_nowait()
            except queue.Empty:
                return
            held.append(item)
            if item[0].type == "question_closed":
                closed[item[0].question_id] = item[0].reason

    def ask(prompt: str, question_id: str | None = None) -> str:
        """A line for ``prompt``. With ``question_id`` the wait ends with :class:`QuestionGone`
        once that question closes, and with ``EOFError`` if the session stops."""
        out.write(prompt)
        out.flush()
        while True:
            line = lines.get(0.05 if question_id is not None else None)
            if line is not None:
                return line
            if question_id is not None:
                pump()
                if question_id in closed:
                    raise QuestionGone(question_id)
                if not handle.alive():
                    raise EOFError

    def next_event(timeout: float) -> tuple[Any, str]:
        if held:
            return held.popleft()
        return handle.events.get(timeout=timeout)

    interrupted = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.set()
        handle.interrupt()

    if commands is not None and commands.run is not None:
        def ask_bang(call: Any, reason: str) -> bool:
            out.write(f"\n  a command wants to run: {sanitize(str(call.input.get('command', '')))}\n"
                      f"  risk {call.risk.value} · {sanitize(reason)}\n")
            return ask("  run it? [y/N] › ").strip().lower() in ("y", "yes")

        commands.run.ask = ask_bang
    if commands is not None and commands.prompts is not None:  # /help lists the MCP servers' prompts once listed
        threading.Thread(target=commands.load_prompts, name="plain-prompts", daemon=True).start()
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
                event, _ = next_event(0.05)
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
                try:
                    expanded = commands.expand(line) if commands is not None else None
                except Exception as exc:  # noqa: BLE001 - CommandError, or a server that failed: said, nothing sent
                    out.write(f"  {sanitize(str(exc))}\n")
                    continue
                if expanded is not None:
                    if expanded[1]:  # the command's model, as /model NAME would switch
                        handle.submit(m.SetModel(model=expanded[1]))
                    handle.submit(m.UserTurn(text=expanded.text, allow=expanded.allow))
                    in_turn = True
                    continue
                handled = _command(line.strip(), handle, out, ask, think_price, children, skills, commands)
                if handled is False:
                    if worktree is not None:
                        _leave_worktree(worktree, ask, out)
                    return 0
                if handled is None or isinstance(handled, str):
                    from cox.agents.skills import named_grants

                    allow = named_grants(line, skills) if isinstance(handled, str) else None
                    handle.submit(m.UserTurn(text=line if handled is None else handled, allow=allow))
                    in_turn = True
                continue
            if event.type == "session_started":
                children.event(event, out)
                continue
            if event.type == "user_message" and not event.steered:
                in_turn = True
                continue  # the person just typed it
            if event.type == "question_closed":
                closed.pop(event.question_id, None)
                if event.question_id in announced:
                    announced.discard(event.question_id)
                    continue  # said where its prompt waited
            view.event(event)
            children.event(event, out)
            if event.type == "approval_required":
                try:
                    handle.submit(_answer(event.call, event.reason, ask, out))
                except EOFError:
                    handle.interrupt()
            elif event.type == "question":
                pump()
                if event.question_id in closed:
                    continue  # closed before its turn to be asked: its close line follows
                try:
                    handle.submit(_question(event, ask, out))
                except QuestionGone:
                    dropped = lines.discard()
                    announced.add(event.question_id)
                    out.write(f"\n  {closed_text(event.source, closed[event.question_id])}"
                              + ("; what was typed for it is dropped" if dropped else "") + "\n")
                except EOFError:
                    handle.submit(m.Answer(question_id=event.question_id, declined=True))
            elif event.type == "turn_done":
                in_turn = False
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
