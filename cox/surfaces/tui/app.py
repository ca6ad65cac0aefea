"""The full-screen surface: a streaming transcript, a composer, approval overlays and a status
line, on urwid. Like every surface it only sends Submissions and renders Events.

Threads: the session's events arrive on ``handle.events`` from actor threads. A reader thread
drains that queue into a pending list and wakes the urwid loop with ``call_from_thread`` at most
~30 times a second; the loop applies every pending event in one go and redraws once. A fast
stream therefore costs one frame per wake, never one per delta.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sqlite3
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import urwid

from cox.commands.files import BUILTIN
from cox.policy.sanitize import sanitize
from cox.protocol import messages as m
from cox.protocol.types import Decision, PermissionMode, RewindWhat

from . import gutter, markdown
from .agents import approval_label
from .agents import line as agent_line
from .model import Block, Model, relative, tool_line, tool_tail
from .question import Questions

FRAME_S = 1 / 30
MODE_CYCLE = ["default", "acceptEdits", "plan"]
"""Shift+Tab, as Claude Code cycles (its ``getNextPermissionMode``): dontAsk is not in its cycle."""
MODES = ("architect", "editor", "default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")

COMMANDS = BUILTIN
REWIND_WHAT = ("code", "conversation", "both")
ESC_ESC_S = 0.8  # two Esc presses this close together on an empty composer open /rewind
CTRL_C_S = 2.0  # a second Ctrl+C this soon after the first, on an empty composer, quits
WALK_LIMIT = 5000  # files listed for @path completion outside a git repository

HELP = ("keys: Enter send · Ctrl+J newline · Up/Down history · Tab complete /commands and @paths · "
        "Esc interrupt · Esc Esc rewind · Ctrl+C clear the composer (twice on an empty one: quit) · Shift+Tab mode · Ctrl+O expand all tool output and thinking · "
        "Ctrl+T fold/unfold one thinking block (the newest, or the one Alt+Up/Alt+Down picked) · "
        "PgUp/PgDn scroll · Ctrl+D quit\n"
        "commands: /mode architect|editor|default|acceptEdits|plan|dontAsk|bypassPermissions · /compact [focus] · "
        "/rewind [N [code|conversation|both]] · /model [NAME] · /cost · /agents · /init (write AGENTS.md) · /clear · "
        "/help · /quit")

# (name, foreground, background, mono)
PALETTE: list[tuple[str, str, str, str]] = [
    ("user", "light cyan,bold", "default", "bold"),
    ("queued", "dark cyan", "default", ""),
    ("assistant", "default", "default", ""),
    ("thinking", "dark gray", "default", ""),
    ("thinking_head", "dark gray,bold", "default", "bold"),
    ("thinking_sel", "black", "light gray", "standout"),
    ("md_h", "yellow,bold", "default", "bold,underline"),
    ("md_bold", "default,bold", "default", "bold"),
    ("md_code", "light green", "default", ""),
    ("md_fence", "dark gray", "default", ""),
    ("tool_running", "yellow", "default", ""),
    ("tool_waiting", "light magenta", "default", "bold"),
    ("tool_ok", "light green", "default", ""),
    ("tool_error", "light red", "default", "bold"),
    ("tool_denied", "light magenta", "default", ""),
    ("tool_aborted", "brown", "default", ""),
    ("tool_name", "default,bold", "default", "bold"),
    ("dim", "dark gray", "default", ""),
    ("diff_add", "light green", "default", ""),
    ("diff_del", "light red", "default", ""),
    ("notice", "light blue", "default", ""),
    ("warning", "yellow", "default", "bold"),
    ("error", "light red,bold", "default", "bold"),
    ("turn", "brown", "default", ""),
    ("status", "black", "light gray", "standout"),
    ("status_plan", "white,bold", "dark magenta", "bold,underline"),
    ("status_busy", "black,bold", "light gray", "standout"),
    ("hint", "dark gray", "default", ""),
    ("prompt", "light cyan,bold", "default", "bold"),
    ("modal", "default", "default", ""),
    ("modal_title", "yellow,bold", "default", "bold"),
    ("modal_key", "light cyan,bold", "default", "bold"),
    ("modal_label", "dark gray", "default", ""),
]


# COX_THEME=light (or status["theme"] = "light"): the entries that differ on a light background
LIGHT: dict[str, tuple[str, str]] = {
    "user": ("dark blue,bold", "default"),
    "queued": ("dark cyan", "default"),
    "thinking": ("dark gray", "default"),
    "thinking_head": ("dark gray,bold", "default"),
    "md_h": ("brown,bold", "default"),
    "md_code": ("dark green", "default"),
    "tool_running": ("brown", "default"),
    "tool_waiting": ("dark magenta", "default"),
    "tool_ok": ("dark green", "default"),
    "tool_error": ("dark red", "default"),
    "tool_denied": ("dark magenta", "default"),
    "diff_add": ("dark green", "default"),
    "diff_del": ("dark red", "default"),
    "notice": ("dark blue", "default"),
    "warning": ("brown,bold", "default"),
    "error": ("dark red,bold", "default"),
    "status": ("white", "dark blue"),
    "status_busy": ("white,bold", "dark blue"),
    "prompt": ("dark blue,bold", "default"),
    "modal_title": ("brown,bold", "default"),
    "modal_key": ("dark blue,bold", "default"),
}


# Syntax colours of fenced code (markdown.SYNTAX maps Pygments tokens to these names):
# name -> (dark: 16-colour, 256/truecolor), (light: 16-colour, 256/truecolor). urwid draws the
# 16-colour name on a 16-colour terminal and the #rrggbb one, exact or nearest, on richer ones.
SYNTAX_COLOURS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "syn_text": (("default", "default"), ("default", "default")),
    "syn_keyword": (("light magenta", "#c678dd"), ("dark magenta", "#a626a4")),
    "syn_string": (("light green", "#98c379"), ("dark green", "#50a14f")),
    "syn_number": (("yellow", "#d19a66"), ("brown", "#986801")),
    "syn_comment": (("dark gray", "#7f848e"), ("dark gray", "#a0a1a7")),
    "syn_function": (("light blue", "#61afef"), ("dark blue", "#4078f2")),
    "syn_type": (("yellow", "#e5c07b"), ("brown", "#c18401")),
    "syn_builtin": (("light cyan", "#56b6c2"), ("dark cyan", "#0184bc")),
}


Entry = tuple[str, str, str, str] | tuple[str, str, str, str, str, str]


def palette(theme: str = "dark", no_color: bool = False) -> list[Entry]:
    """The urwid palette: dark (the default), light, or monochrome under NO_COLOR."""
    out: list[Entry] = []
    if no_color:
        out += [(name, "default", "default", mono) for name, _, _, mono in PALETTE]
        out += [(name, "default", "default", "") for name in SYNTAX_COLOURS]
        return out
    light = theme == "light"
    if light:
        out += [(name, *LIGHT.get(name, (fg, bg)), mono) for name, fg, bg, mono in PALETTE]
    else:
        out += PALETTE
    out += [(name, colours[light][0], "default", "", colours[light][1], "default")
            for name, colours in SYNTAX_COLOURS.items()]
    return out


EXPANDED_LINES = 40
THINKING_TAIL = 3  # lines of a thinking block shown while it streams, folded


def render_thinking(b: Block, expanded: bool = False, selected: bool = False) -> list[tuple[str, str]]:
    """A thinking block as a dimmed panel. Folded: its header, with the first line once it is
    done, or its last lines while it streams; unfolded (Ctrl+T on it, or Ctrl+O for all): whole."""
    lines = b.text.strip().splitlines()
    whole = expanded or b.unfolded
    count = f" · {len(lines)} line{'s' if len(lines) != 1 else ''}" if len(lines) > 1 else ""
    head = f"{'▾' if whole else '▸'} ✻ thinking{count}"
    if not whole and not b.live:
        first = lines[0].strip() if lines else ""
        head += f" · {first[:70]}{'…' if len(first) > 70 or len(lines) > 1 else ''}" if first else ""
        return [("thinking_sel" if selected else "thinking_head", head)]
    shown = lines if whole else lines[-THINKING_TAIL:]
    out: list[tuple[str, str]] = [("thinking_sel" if selected else "thinking_head", head)]
    if len(shown) < len(lines):
        out.append(("thinking", f"\n  ┆ … {len(lines) - len(shown)} earlier"))
    for line in shown:
        out.append(("thinking", "\n  ┆ " + line))
    return out


def render_block(b: Block, expanded: bool = False, selected: bool = False) -> list[tuple[str, str]] | str:
    """The markup for one block (its text is already sanitized by the model). ``expanded``
    (Ctrl+O) shows thinking whole and each finished tool's visible output, diffs coloured;
    ``selected`` marks the thinking block Alt+Up/Alt+Down picked."""
    if b.kind == "user":
        label = "you (queued) › " if b.queued else "› "
        return [("queued" if b.queued else "prompt", label), ("user", b.text.replace("\n", "\n" + " " * len(label)))]
    if b.kind == "assistant":
        return markdown.render(b.text.strip("\n")) or ""
    if b.kind == "thinking":
        return render_thinking(b, expanded, selected)
    if b.kind == "tool":
        mark = tool_line(b).split(" ", 1)[0]
        out: list[tuple[str, str]] = [(f"tool_{b.state}", mark + " "), ("tool_name", b.name),
                                      ("assistant", f"  {b.subject[:70]}  ")]
        out.append((f"tool_{b.state}", tool_tail(b)))
        if b.state == "running" and b.last_line:
            out.append(("dim", "\n    ⎿ " + b.last_line))
        elif expanded and b.output.strip():
            lines = b.output.rstrip("\n").splitlines()
            for line in lines[:EXPANDED_LINES]:
                attr = "diff_add" if line.startswith("+") else "diff_del" if line.startswith("-") else "dim"
                out.append((attr, "\n    │ " + line))
            if len(lines) > EXPANDED_LINES:
                out.append(("dim", f"\n    │ … {len(lines) - EXPANDED_LINES} more lines"))
        return out
    if b.kind == "notice":
        attr = "warning" if b.level in ("warn", "warning") else "notice"
        return [(attr, "ℹ " + b.text)]
    if b.kind == "error":
        return [("error", "✗ " + b.text)]
    if b.kind == "turn":
        return [("turn", "— " + b.text)]
    return b.text


CHUNK_LINES = 30
CHUNK_CHARS = 4000


class View:
    """The widgets of one block in the transcript's list. A streaming reply is split into frozen
    chunks of ``CHUNK_LINES`` lines plus a live tail, each its own list entry: a frame lays out
    only the tail (urwid re-wraps a whole Text when it changes) and the list box renders only
    the entries on screen, so a long reply costs the same per frame as a short one."""

    def __init__(self, *, pad: bool) -> None:
        self.pad = pad
        self.version = -1
        self.live = urwid.Text("", layout=gutter.LAYOUT)
        self.frozen = 0
        self.fence: markdown.State = None  # the code fence the frozen chunks end in

    def attach(self, block: Block, walker: urwid.SimpleFocusListWalker[Any]) -> None:
        if self.pad:
            walker.append(urwid.Divider())
        walker.append(self.live)
        self.update(block, walker)

    def update(self, block: Block, walker: urwid.SimpleFocusListWalker[Any], expanded: bool = False,
               selected: bool = False) -> None:
        self.version = block.version
        if block.kind != "assistant":
            self.live.set_text(render_block(block, expanded, selected))
            return
        text = block.text.lstrip("\n")
        while True:
            cut = _after_lines(text, self.frozen, CHUNK_LINES)
            if cut < 0 and len(text) - self.frozen > CHUNK_CHARS:
                # one huge line: freeze at a space (a rare reflow beats re-wrapping it every frame)
                cut = text.rfind(" ", self.frozen + 1, self.frozen + CHUNK_CHARS) + 1 or self.frozen + CHUNK_CHARS
            if cut <= 0 or cut >= len(text):
                break
            end = cut - 1 if text[cut - 1] in "\n " else cut
            walker.insert(walker.index(self.live), Chunk(text[self.frozen:end], self.fence))
            self.fence = markdown.scan(text[self.frozen:end], self.fence)
            self.frozen = cut
        self.live.set_text(markdown.render(text[self.frozen:].rstrip("\n"), self.fence) or "")


class Chunk(urwid.Text):
    """A frozen part of a long reply, rendered to markup the first time it is drawn: during a
    fast stream most chunks scroll past under a tall live tail without ever being on screen."""

    def __init__(self, source: str, fence: markdown.State) -> None:
        super().__init__("", layout=gutter.LAYOUT)
        self._source: tuple[str, markdown.State] | None = (source, fence)

    def get_text(self) -> tuple[str | bytes, list[tuple[Any, int]]]:
        if self._source is not None:
            source, fence = self._source
            self._source = None
            self.set_text(markdown.render(source, fence) or "")
        return super().get_text()


def _after_lines(text: str, start: int, n: int) -> int:
    """The index just past the ``n``-th newline from ``start``; -1 when there are fewer."""
    pos = start
    for _ in range(n):
        pos = text.find("\n", pos)
        if pos < 0:
            return -1
        pos += 1
    return pos


class Composer(urwid.Edit):
    """Multi-line input: Enter sends, Ctrl+J (or Alt+Enter) adds a newline, Up/Down walk the
    history when the cursor is on the first/last line."""

    def __init__(self, ui: TUI) -> None:
        super().__init__("", multiline=True)
        self.ui = ui
        self.pasting = False

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if key in ("begin paste", "end paste"):  # bracketed paste: a pasted newline is not Enter
            self.pasting = key == "begin paste"
            return None
        if key == "enter" and self.pasting:
            self.insert_text("\n")
            return None
        if key == "enter":
            self.ui.send()
            return None
        if key == "tab":
            self.ui.complete()
            return None
        if self.ui.completions:
            self.ui.completions = ""
            self.ui.hint.set_text(("hint", self.ui.hint_text()))
        if key in ("ctrl j", "meta enter", "shift enter"):
            self.insert_text("\n")
            return None
        before = self.edit_text[: self.edit_pos]
        if key == "up" and "\n" not in before:
            self.ui.history_step(-1)
            return None
        if key == "down" and "\n" not in self.edit_text[self.edit_pos:]:
            self.ui.history_step(1)
            return None
        return super().keypress(size, key)  # type: ignore[arg-type]


class Root(urwid.WidgetPlaceholder[Any]):
    """Routes keys: an open modal takes them all; then the global keys; then the composer."""

    def __init__(self, ui: TUI, body: urwid.Widget) -> None:
        super().__init__(body)
        self.ui = ui

    def selectable(self) -> bool:
        return True  # urwid only sends keys to a selectable top widget; a modal of Texts is not

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if self.ui.modal_open():
            return self.ui.modal_key(size, key)
        if self.ui.global_key(size, key):
            return None
        return super().keypress(size, key)


class TUI:
    def __init__(self, handle: Any, *, think_price: str = "", status: dict[str, Any] | None = None) -> None:
        self.handle = handle
        self.think_price = think_price
        self.model = Model()
        st = status or {}
        self.model.status.model = str(st.get("model", ""))
        self.model.status.mode = str(st.get("mode", "default"))
        self.model.status.cwd = str(st.get("cwd", ""))
        self.model.status.context_window = int(st.get("context_window", 0) or 0)
        self.model.status.tier = str(st.get("tier", "") or "")
        self.skills = st.get("skills")  # cox.agents.skills.Skills: /NAME loads a skill into the turn
        self.theme = str(st.get("theme") or os.environ.get("COX_THEME") or "dark")
        self.rollout = str(st.get("rollout") or "")  # a resumed session's rollout: replayed on start
        self.db_path = str(st.get("db") or "")  # cox.db (default: $COX_HOME's); /rewind lists its checkpoints
        self.mcp_state = st.get("mcp_state")  # () -> MCP server rows; polled, servers start in the background
        self.worktree = st.get("worktree")  # the cox.worktrees.Worktree the session runs in: /quit offers to remove it
        self.commands = st.get("commands")  # cox.commands.turns.SessionCommands: custom commands, MCP prompts, /init
        if self.commands is not None and self.commands.run is not None:
            self.commands.run.ask = self.ask_bang  # a command's !`…` line the engine asks about: the person says
        self.completions = ""  # what Tab found, shown in the hint line until the next key
        self._files: list[str] | None = None
        self.picker: dict[str, Any] | None = None  # the /rewind picker: stage, turns, sel, turn
        self.agents_view: dict[str, Any] | None = None  # /agents: sel (the list's row), open (an agent id or "")
        self._last_esc = 0.0
        self._last_ctrl_c = -CTRL_C_S  # the first Ctrl+C on an empty composer only asks
        self.exit_code = 0
        self.history: list[str] = []
        self.hist_pos = 0
        self.follow = True
        self.expanded = False  # Ctrl+O: thinking whole, tool output under each row
        self.selected: Block | None = None  # the thinking block Alt+Up/Alt+Down picked (Ctrl+T folds it)
        self._git_lock = threading.Lock()
        self._git_state = "idle"  # idle | running | again (asked again while running)
        self.frames = 0  # wakes applied (one redraw each); read by the bench
        self.last_applied = 0.0
        self.approvals: deque[Any] = deque()
        self.editing: urwid.Edit | None = None
        self.questions = Questions(handle.submit)  # question modals: MCP elicitation, cox's own yes/no
        self.modal_error = ""
        self._pending: list[tuple[Any, Any]] = []
        self._scheduled = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        self._views: list[View] = []

        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.listbox = urwid.ListBox(self.walker)
        self.composer = Composer(self)
        self.status_text = urwid.Text("", wrap="clip")
        self.hint = urwid.Text(("hint", ""), wrap="clip")
        self.footer = urwid.Pile([
            urwid.AttrMap(urwid.Divider("─"), "hint"),
            urwid.Columns([(2, urwid.Text(("prompt", "› "))), self.composer], focus_column=1),
            self.hint,
            urwid.AttrMap(self.status_text, "status"),
        ], focus_item=1)
        self.frame: urwid.Frame[Any, Any, Any] = urwid.Frame(self.listbox, footer=self.footer, focus_part="footer")
        self.root = Root(self, self.frame)
        self.loop: urwid.MainLoop | None = None

    # ------------------------------------------------------------ running

    def run(self, *, architect_from_config: bool = False, screen: Any = None, print_transcript: bool = True) -> int:
        """Run until /quit, Ctrl+D or the session stops. ``screen`` is for the bench (a pty)."""
        screen = screen or urwid.display.raw.Screen(bracketed_paste_mode=True)
        no_color = bool(os.environ.get("NO_COLOR"))
        if no_color:
            screen.set_terminal_properties(colors=1)
        self.loop = urwid.MainLoop(self.root, palette(self.theme, no_color), screen=screen, handle_mouse=False,
                                   input_filter=self._input_filter)
        if architect_from_config:
            self.ask_confirm(f"architect mode runs main turns on {self.think_price or 'the think tier'}; go on?",
                             None, lambda: self._editor_instead())
        self.refresh()
        self.loop.set_alarm_in(0, lambda *_: self._started())
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self._on_sigint) if main else None
        try:
            self.loop.run()
        finally:
            self._stop.set()
            if self._reader is not None:
                self._reader.join(timeout=2)
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            if print_transcript:
                sys.stdout.write(self.model.plain() + self.resume_hint())
                sys.stdout.flush()
        return self.exit_code

    def resume_hint(self) -> str:
        """The line printed last on exit: this session's id and the command that continues it
        (nothing when no turn ran: there is nothing to continue)."""
        if self.model.status.turn <= 0:
            return ""
        from cox.surfaces.invocation import cox_command

        sid = sanitize(str(self.handle.session_id))
        return f"session {sid} · resume with: {cox_command()} --resume {sid}\n"

    def _editor_instead(self) -> None:
        self.handle.submit(m.SetMode(preset="editor"))
        self.model.add("notice", "staying in editor mode")

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.loop is not None:
            try:
                self.loop.call_from_thread(self.ctrl_c)
            except RuntimeError:
                pass

    def ctrl_c(self) -> None:
        """Ctrl+C, as in Claude Code: interrupts a running turn; else clears a composer with text
        in it; on an empty composer quits only when pressed twice within ``CTRL_C_S`` (the first
        says so in the hint line)."""
        if self.model.status.turn_running:
            self.handle.interrupt()
            return
        if self.composer.edit_text:
            self.composer.set_edit_text("")
            self._last_ctrl_c = 0.0
        elif time.monotonic() - self._last_ctrl_c < CTRL_C_S:
            raise urwid.ExitMainLoop
        else:
            self._last_ctrl_c = time.monotonic()
            if self.loop is not None:  # the hint goes back once the window has passed
                self.loop.set_alarm_in(CTRL_C_S, lambda *_: self.refresh())
        self.refresh()

    def _input_filter(self, keys: list[Any], raw: list[int]) -> list[Any]:
        """urwid names both CR and LF "enter"; the raw codes tell Ctrl+J (LF) apart."""
        codes = [c for c in raw if c in (10, 13)]
        out: list[Any] = []
        for k in keys:
            if k == "enter" and codes:
                out.append("ctrl j" if codes.pop(0) == 10 else "enter")
            else:
                out.append(k)
        return out

    # ------------------------------------------------------------ events in

    def _started(self) -> None:
        """Once the screen is up: keep CR and LF apart (so Ctrl+J is a newline, not Enter; urwid
        restores the terminal's settings on exit), then start reading events."""
        try:
            import termios

            assert self.loop is not None
            fd = self.loop.screen._input_fileno()  # type: ignore[attr-defined]
            if fd is not None and os.isatty(fd):
                mode = termios.tcgetattr(fd)
                mode[0] &= ~termios.ICRNL
                termios.tcsetattr(fd, termios.TCSANOW, mode)
        except (ImportError, AttributeError, OSError):
            pass
        self._start_reader()
        self.refresh_git()
        if callable(self.mcp_state):
            threading.Thread(target=self._watch_mcp, name="tui-mcp", daemon=True).start()
        if self.commands is not None and self.commands.prompts is not None:  # /help and Tab list MCP prompts
            threading.Thread(target=self.commands.load_prompts, name="tui-prompts", daemon=True).start()

    def _start_reader(self) -> None:
        self._reader = threading.Thread(target=self._read, name="tui-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Drain the session's queue; wake the loop once per burst, at most ~30 times a second.

        The reader blocks for the first event of a burst, then sleeps until the next frame is
        due and takes everything queued by then in one go: it runs once per frame, not once per
        delta, so a fast stream's session thread is not slowed by a consumer fighting it for the
        GIL. The end of a turn is drawn at once rather than at the next frame."""
        last_wake = 0.0
        events = self.handle.events
        while not self._stop.is_set():
            try:
                item = events.get(timeout=0.1)
            except queue.Empty:
                if not self.handle.alive():
                    self._post(("dead", ""))
                    return
                continue
            batch = [item, *_drain(events)]
            wait = last_wake + FRAME_S - time.monotonic()
            if wait > 0 and not _ends_turn(batch):
                self._stop.wait(wait)
                batch += _drain(events)
            if not self._post(*batch):
                continue  # a wake is outstanding: the loop takes these with it
            last_wake = time.monotonic()
            try:
                assert self.loop is not None
                self.loop.call_from_thread(self.apply_pending)
            except RuntimeError:
                return

    def refresh_git(self) -> None:
        """Probe the cwd's git state on a thread of its own (at start, after each turn and
        rewind; never per frame); the result reaches the status line like an event. A request
        while a probe runs makes it run once more afterwards."""
        with self._git_lock:
            if self._git_state != "idle":
                self._git_state = "again"
                return
            self._git_state = "running"
        threading.Thread(target=self._probe_git, name="tui-git", daemon=True).start()

    def _probe_git(self) -> None:
        from .worktree import probe

        cwd = self.model.status.cwd or os.getcwd()
        while True:
            state = probe(cwd)
            with self._git_lock:
                again = self._git_state == "again" and not self._stop.is_set()
                self._git_state = "running" if again else "idle"
            if not again:
                break
        if self._post(("git", state)) and self.loop is not None:
            try:
                self.loop.call_from_thread(self.apply_pending)
            except RuntimeError:
                pass

    def _watch_mcp(self) -> None:
        """Keep the status line's MCP rows current: servers with a cached tool listing start in
        the background, after session_started listed them as starting (and any may restart).
        Every 0.5 s while one is starting or restarting, else every 2 s; a change is posted."""
        assert callable(self.mcp_state)
        while not self._stop.wait(0.5 if _mcp_busy(self.model.status.mcp) else 2.0):
            try:
                rows = list(self.mcp_state())
            except Exception:  # noqa: BLE001 - the manager is gone (the session closed)
                return
            if rows != self.model.status.mcp and self._post(("mcp", rows)) and self.loop is not None:
                try:
                    self.loop.call_from_thread(self.apply_pending)
                except RuntimeError:
                    return

    def _post(self, *items: tuple[Any, Any]) -> bool:
        """Queue items for the UI; True when the loop needs waking (no wake outstanding)."""
        with self._lock:
            self._pending.extend(items)
            need = not self._scheduled
            self._scheduled = True
        return need

    def apply_pending(self) -> None:
        """On the loop thread: apply every pending event, then one redraw follows. A run of
        deltas extends its block once (``Model.deltas``), not once per delta."""
        with self._lock:
            batch, self._pending = self._pending, []
            self._scheduled = False
        run: list[str] = []
        run_type = ""
        for event, extra in batch:
            if isinstance(event, str):  # the reader's and the git probe's own items
                if run:
                    self.model.deltas(run_type, run)
                    run = []
                if event == "git":
                    self.model.status.git = extra
                elif event == "mcp":
                    self.model.status.mcp = extra
                elif event == "command":
                    self._command_ready(extra)
                elif event == "confirm":
                    self.ask_confirm(*extra)
                elif event == "dead":
                    self.model.add("error", "the session stopped")
                    self.exit_code = 1
                    self.refresh()
                    raise urwid.ExitMainLoop
                continue
            t = event.type
            if t in ("text_delta", "thinking_delta"):
                if run and t != run_type:
                    self.model.deltas(run_type, run)
                    run = []
                run_type = t
                run.append(event.text)
                continue
            if run:
                self.model.deltas(run_type, run)
                run = []
            self.on_event(event)
        if run:
            self.model.deltas(run_type, run)
        self.frames += 1
        self.last_applied = time.monotonic()
        self.refresh()

    def on_event(self, event: Any) -> None:
        cuts = self.model.cuts
        self.model.apply(event)
        t = event.type
        if self.model.cuts != cuts:
            self.rebuild_views()  # a rewind took turns back: their widgets go too
        if t in ("turn_done", "rewound"):
            self.refresh_git()  # the turn (or the rewind) may have changed files
        if t == "question":
            self.questions.ask_event(event)
            self.show_modal()
        elif t == "question_closed":
            if self.questions.close(event.question_id) is not None:
                self.show_modal()
        elif t == "approval_required":
            self.approvals.append(event)
            self.show_modal()
        elif t == "agent_event" and self.agents_view is not None and not self.questions and not self.approvals:
            self.show_modal()  # /agents is open: its list or transcript shows the news
        elif t == "tool_call_done":
            if any(a.call.id == event.call_id for a in self.approvals):
                self.approvals = deque(a for a in self.approvals if a.call.id != event.call_id)
                self.show_modal()
        elif t == "turn_done" and (self.approvals or self.questions):
            self.approvals.clear()
            self.questions.drop_session_questions()  # the session cancelled them with the turn
            self.show_modal()

    # ------------------------------------------------------------ drawing

    def rebuild_views(self) -> None:
        """Forget every block's widgets; the next refresh draws the model's blocks afresh."""
        self._views.clear()
        self.walker.clear()
        if self.selected is not None and self.selected not in self.model.blocks:
            self.selected = None

    def refresh(self) -> None:
        for i, block in enumerate(self.model.blocks):
            if i < len(self._views):
                view = self._views[i]
                if view.version != block.version:
                    view.update(block, self.walker, self.expanded, block is self.selected)
                continue
            view = View(pad=bool(i) and block.kind in ("user", "assistant", "turn"))
            self._views.append(view)
            view.attach(block, self.walker)
            if self.expanded:
                view.update(block, self.walker, True)
        if self.follow and self.walker:
            self.listbox.set_focus(len(self.walker) - 1, coming_from="above")
            self.listbox.set_focus_valign("bottom")
        self.status_text.set_text(self.status_markup())
        self.hint.set_text(("hint", self.hint_text()))

    def status_markup(self) -> list[Any]:
        st = self.model.status
        out: list[Any] = [("status", f" {st.model or 'cox'} · ")]
        if st.tier == "think":  # the architect preset: main turns on the think tier
            out.append(("status", "mode architect · "))
        if st.mode == "plan":
            out.append(("status_plan", " PLAN MODE · read-only "))
        else:
            out.append(("status", f"mode {st.mode}"))
        ctx = _k(st.context_tokens)
        if st.context_window:
            ctx += f" ({st.context_tokens * 100 // st.context_window}%)"
        out.append(("status", f" · ctx {ctx} · ${st.cost_usd:.4f}"))
        mcp = st.mcp_summary()
        if mcp:
            out.append(("status", f" · {mcp}"))
        if st.running:
            out.append(("status_busy", " · ● " + _names(st.running, "tool")))
        if st.subagents:
            out.append(("status_busy", " · ⑂ " + st.agents_summary()))
        if st.turn_running:
            out.append(("status_busy", f" · turn {st.turn} working…"))
        if st.git is not None:
            out.append(("status", " · " + st.git.segment()))
        if st.cwd and (st.git is None or not st.git.worktree):
            out.append(("status", f" · {os.path.basename(st.cwd.rstrip('/')) or st.cwd}"))
        return out

    def hint_text(self) -> str:
        if self.completions:
            return self.completions
        if time.monotonic() - self._last_ctrl_c < CTRL_C_S and not self.composer.edit_text:
            return "press Ctrl+C again to quit (Ctrl+D quits too)"
        if self.model.status.turn_running:
            return "Esc interrupt · typing now queues a message for the running turn"
        return "Enter send · Ctrl+J newline · Shift+Tab mode · /help · Ctrl+D quit"

    def _body_size(self) -> tuple[int, int]:
        assert self.loop is not None
        cols, rows = self.loop.screen.get_cols_rows()
        return cols, max(1, rows - self.footer.rows((cols,), True))

    # ------------------------------------------------------------ keys

    def global_key(self, size: tuple[int, ...], key: str) -> bool:
        if key in ("esc", "meta esc"):
            if self.model.status.turn_running:
                self.handle.interrupt()
            elif not self.composer.edit_text:
                now = time.monotonic()
                if key == "meta esc" or now - self._last_esc < ESC_ESC_S:
                    self._last_esc = 0.0
                    self.open_rewind()
                else:
                    self._last_esc = now
            return True
        if key == "shift tab":
            current = self.model.status.mode
            nxt = MODE_CYCLE[(MODE_CYCLE.index(current) + 1) % len(MODE_CYCLE)] if current in MODE_CYCLE else "default"
            self.set_mode(nxt)
            return True
        if key == "ctrl o":
            self.expanded = not self.expanded
            for block in self.model.blocks:
                if block.kind in ("tool", "thinking"):
                    block.touch()
            self.refresh()
            return True
        if key == "ctrl t":
            self.toggle_thinking()
            return True
        if key in ("meta up", "meta down"):
            self.select_thinking(-1 if key == "meta up" else 1)
            return True
        if key == "ctrl d" and not self.composer.edit_text:
            raise urwid.ExitMainLoop
        if key == "ctrl c":
            self.ctrl_c()
            return True
        if key in ("page up", "page down", "home", "end") and self.loop is not None:
            body = self._body_size()
            if key == "end":
                self.follow = True
                self.refresh()
                return True
            self.listbox.keypress(body, key)
            self.follow = key == "page down" and "bottom" in self.listbox.ends_visible(body)
            return True
        return False

    def toggle_thinking(self) -> None:
        """Ctrl+T: fold or unfold one thinking block: the one Alt+Up/Alt+Down picked, else the newest."""
        target = self.selected or next((b for b in reversed(self.model.blocks) if b.kind == "thinking"), None)
        if target is None:
            return
        target.unfolded = not target.unfolded
        target.touch()
        self.refresh()
        self._show(target)

    def select_thinking(self, step: int) -> None:
        """Alt+Up / Alt+Down: pick an older / newer thinking block (marked, scrolled into view);
        past the newest, the pick is dropped and the transcript follows the end again."""
        blocks = [b for b in self.model.blocks if b.kind == "thinking"]
        old = self.selected
        if not blocks:
            return
        if old is None or old not in blocks:
            pos = len(blocks) - 1 if step < 0 else None
        else:
            pos = blocks.index(old) + step
            pos = None if pos >= len(blocks) else max(0, pos)
        self.selected = None if pos is None else blocks[pos]
        for b in (old, self.selected):
            if b is not None:
                b.touch()
        if self.selected is None:
            self.follow = True
        self.refresh()
        if self.selected is not None:
            self._show(self.selected)

    def _show(self, block: Block) -> None:
        """Scroll the transcript so ``block`` is on screen (and stop following the end)."""
        try:
            view = self._views[self.model.blocks.index(block)]
            pos = self.walker.index(view.live)
        except ValueError:
            return
        if pos == len(self.walker) - 1 and self.follow:
            return
        self.follow = False
        self.listbox.set_focus(pos)
        self.listbox.set_focus_valign("middle")

    def set_mode(self, mode: str) -> None:
        self.handle.submit(m.SetMode(mode=PermissionMode(mode)))
        self.model.status.mode = mode
        self.refresh()

    def history_step(self, step: int) -> None:
        if not self.history:
            return
        self.hist_pos = max(0, min(len(self.history), self.hist_pos + step))
        text = self.history[self.hist_pos] if self.hist_pos < len(self.history) else ""
        self.composer.set_edit_text(text)
        self.composer.set_edit_pos(len(text))

    def send(self) -> None:
        text = self.composer.edit_text
        if not text.strip():
            return
        self.history.append(text)
        self.hist_pos = len(self.history)
        self.composer.set_edit_text("")
        self.completions = ""
        self.follow = True
        stripped = text.strip()
        if stripped.startswith("/") and "\n" not in stripped:
            self.command(stripped)
        else:
            queued = self.model.status.turn_running
            self.model.typed(text, queued=queued)
            self.handle.submit(m.UserTurn(text=text))
            self.model.status.turn_running = True
        self.refresh()

    def command(self, line: str) -> None:
        word, _, rest = line[1:].partition(" ")
        rest = rest.strip()
        if word in ("quit", "exit"):
            if self.worktree is not None and self._offer_worktree_removal():
                return
            raise urwid.ExitMainLoop
        if word == "help":
            from .escape import escape_note

            note = escape_note()
            custom = self.commands.help_lines() if self.commands is not None else []
            listed = ("\ncustom commands: " + " · ".join(custom)) if custom else ""
            self.model.add("notice", HELP + listed + (f"\n{note}" if note else ""))
        elif word == "mode":
            if rest == "architect":
                self.ask_confirm(f"architect mode runs main turns on {self.think_price or 'the think tier'}; go on?",
                                 lambda: self.handle.submit(m.SetMode(preset="architect")), None)
            elif rest == "editor":
                self.handle.submit(m.SetMode(preset="editor"))
            elif rest in MODES:
                self.set_mode(rest)
            else:
                self.model.add("notice", "modes: " + ", ".join(MODES))
        elif word == "rewind":
            parts = rest.split()
            force = "--force" in parts
            parts = [x for x in parts if x != "--force"]
            if not parts:
                self.open_rewind()
            elif not parts[0].isdigit():
                self.model.add("notice", "/rewind [N [code|conversation|both] [--force]]")
            else:
                what: RewindWhat = "both"
                if len(parts) > 1 and parts[1] in ("code", "conversation", "both"):
                    what = parts[1]  # type: ignore[assignment]
                self.handle.submit(m.Rewind(to_turn=int(parts[0]), what=what, force=force))
        elif word == "compact":
            self.handle.submit(m.Compact(focus=rest or None))
        elif word == "model":
            st = self.model.status
            if not rest:
                self.model.add("notice", f"model {st.model or 'unknown'} · tier {st.tier or 'main'} · mode {st.mode}"
                                         " · /model NAME switches main turns to NAME")
            else:
                try:
                    self.handle.submit(m.SetModel(model=rest))  # the session's notice says what it did
                except ValueError as exc:
                    self.model.add("error", f"{exc}; /model NAME takes one model name")
        elif word == "cost":
            st = self.model.status
            cache = (f" · cache read {_k(st.cache_read_tokens)}, written {_k(st.cache_write_tokens)}"
                     if st.cache_read_tokens or st.cache_write_tokens else "")
            self.model.add("notice", f"session cost ${st.cost_usd:.4f} · tokens in {_k(st.input_tokens)}, "
                                     f"out {_k(st.output_tokens)}{cache}")
        elif word == "agents":
            self.open_agents(rest)
        elif word == "clear":
            self.model.clear()
            self.rebuild_views()
        elif self.commands is not None and (word == "init" or self.commands.get(word) is not None
                                            or word.startswith("mcp__")):
            self.custom_command(line)
        else:
            from cox.agents.skills import named_grants, user_named

            turn, why = user_named(line, self.skills)
            if turn is None:
                self.model.add("notice", sanitize(why) if why else f"unknown command /{word}; /help lists them")
                return
            self.model.typed(sanitize(turn), queued=self.model.status.turn_running)  # what the model gets
            self.handle.submit(m.UserTurn(text=turn, allow=named_grants(line, self.skills)))
            self.model.status.turn_running = True

    def custom_command(self, line: str) -> None:
        """``/init``, a custom command or an MCP prompt: expanded on a thread of its own (its
        ``!`…``` lines run commands, its prompt asks a server), then sent as the user turn."""
        commands = self.commands
        assert commands is not None

        def work() -> None:
            from cox.commands.expand import CommandError

            try:
                item: tuple[str, Any] = ("text", commands.expand(line) or (line, None, None))
            except CommandError as exc:
                item = ("error", str(exc))
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the thread silently
                item = ("error", f"/{line[1:].split(' ')[0]} failed: {exc}")
            if self._post(("command", item)) and self.loop is not None:
                try:
                    self.loop.call_from_thread(self.apply_pending)
                except RuntimeError:
                    pass

        threading.Thread(target=work, name="tui-command", daemon=True).start()

    def ask_bang(self, call: Any, reason: str) -> bool:
        """A command's ``!`…``` line the engine asks about, put to the person in the question
        modal (from the command's thread, which waits for the answer)."""
        answer: list[bool] = []
        done = threading.Event()

        def yes() -> None:
            answer.append(True)
            done.set()

        def no() -> None:
            answer.append(False)
            done.set()

        prompt = f"a command wants to run `{sanitize(str(call.input.get('command', '')))}` ({sanitize(reason)}); run it?"
        if self._post(("confirm", (prompt, yes, no))) and self.loop is not None:
            try:
                self.loop.call_from_thread(self.apply_pending)
            except RuntimeError:
                return False
        while not done.wait(0.2):
            if self._stop.is_set():
                return False
        return bool(answer and answer[0])

    def _command_ready(self, item: tuple[str, Any]) -> None:
        kind, got = item
        if kind == "error":
            self.model.add("error", got)
            return
        text, model, allow = got
        if model:  # the command's front matter names a model: switched as /model NAME does
            self.handle.submit(m.SetModel(model=model))
        self.model.typed(text, queued=self.model.status.turn_running)
        self.handle.submit(m.UserTurn(text=text, allow=allow))
        self.model.status.turn_running = True

    # ------------------------------------------------------------ completion

    def complete(self) -> None:
        """Tab: complete a /command (or /mode's argument) or an ``@path`` of the workspace at the
        cursor. One match is inserted whole; several extend to their common prefix and are listed
        in the hint line."""
        text, pos = self.composer.edit_text, self.composer.edit_pos
        before = text[:pos]
        found = re.fullmatch(r"/(\S*)", before) or re.fullmatch(r"/mode\s+(\S*)", before)
        if found:
            slash = before.startswith("/") and " " not in before
            custom = tuple(self.commands.names()) if self.commands is not None and slash else ()
            options = (*COMMANDS, *custom) if slash else MODES
            cands = [c for c in options if c.startswith(found.group(1))]
            shown = [("/" if slash else "") + c for c in cands]
        else:
            found = re.search(r"(?:^|\s)@(\S*)$", before)
            if not found:
                return
            prefix = found.group(1)
            files = self.workspace_files()
            cands = [f for f in files if f.startswith(prefix)]
            if not cands and prefix:  # no path starts so: match the name anywhere in the path
                cands = [f for f in files if prefix.lower() in f.lower()]
                if len(cands) > 1:
                    self._set_completions(cands)
                    return
            shown = cands
        typed = found.group(1)
        if not cands:
            self._set_completions([], note="no match")
            return
        if len(cands) == 1:
            insert, self.completions = cands[0] + " ", ""
        else:
            insert = os.path.commonprefix(cands)
            self._set_completions(shown)
        if len(insert) >= len(typed) and insert != typed:
            start = pos - len(typed)
            self.composer.set_edit_text(text[:start] + insert + text[pos:])
            self.composer.set_edit_pos(start + len(insert))
        self.hint.set_text(("hint", self.hint_text()))

    def _set_completions(self, cands: list[str], note: str = "") -> None:
        shown = cands[:12]
        more = f" … +{len(cands) - len(shown)}" if len(cands) > len(shown) else ""
        self.completions = note or ("  ".join(shown) + more)
        self.hint.set_text(("hint", self.hint_text()))

    def workspace_files(self) -> list[str]:
        """The workspace's files, relative and sorted (listed once): ``git ls-files`` (tracked and
        untracked, .gitignore respected) in a repository, else a walk of at most ``WALK_LIMIT``
        entries that skips hidden folders."""
        if self._files is not None:
            return self._files
        cwd = self.model.status.cwd or os.getcwd()
        files: list[str] = []
        from cox.gitsafe import run_git  # nothing the repository's git config names may run

        p = run_git(cwd, "ls-files", "--cached", "--others", "--exclude-standard", "-z", timeout=5, filters=False)
        if p is not None and p.returncode == 0:
            files = [f for f in p.stdout.decode("utf-8", "replace").split("\0") if f]
            self._files = sorted(set(files))
            return self._files
        seen = 0
        for root, dirs, names in os.walk(cwd):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            seen += len(dirs)
            for name in sorted(names):
                seen += 1
                files.append(os.path.relpath(os.path.join(root, name), cwd))
                if seen >= WALK_LIMIT:
                    break
            if seen >= WALK_LIMIT:
                break
        self._files = sorted(files)
        return self._files

    # ------------------------------------------------------------ /rewind picker

    def rewind_turns(self) -> list[dict[str, Any]]:
        """The checkpoints timeline of this session, newest first: ``{turn, files, title}``."""
        from cox.actors.store import checkpoints, db
        from cox.actors.store.layout import Layout, cox_home

        path = Path(self.db_path) if self.db_path else Layout(cox_home()).db
        # read-only, no DDL: the store actor is cox.db's one writer; nothing checkpointed yet is []
        return db.read(path, lambda conn: checkpoints.timeline(conn, str(self.handle.session_id)), [])

    def open_rewind(self) -> None:
        if self.model.status.turn_running:
            self.model.add("notice", "a turn is running; Esc interrupts it, then Esc Esc rewinds")
            self.refresh()
            return
        try:
            turns = self.rewind_turns()
        except (sqlite3.Error, OSError) as exc:
            self.model.add("error", f"cannot read the checkpoints: {exc}")
            self.refresh()
            return
        if not turns:
            self.model.add("notice", "nothing to rewind yet: no turn has a checkpoint")
            self.refresh()
            return
        self.picker = {"stage": "turn", "turns": turns, "sel": 0, "turn": 0}
        self.show_modal()

    def _picker_key(self, key: str) -> None:
        p = self.picker
        assert p is not None
        count = len(p["turns"]) if p["stage"] == "turn" else len(REWIND_WHAT)
        if key == "esc":
            self.picker = None
        elif key in ("up", "k"):
            p["sel"] = (p["sel"] - 1) % count
        elif key in ("down", "j", "tab"):
            p["sel"] = (p["sel"] + 1) % count
        elif p["stage"] == "what" and key in ("c", "v", "b"):
            self._rewind(p["turn"], REWIND_WHAT["cvb".index(key)])
        elif key == "enter":
            if p["stage"] == "turn":
                p.update(stage="what", turn=p["turns"][p["sel"]]["turn"], sel=2)
            else:
                self._rewind(p["turn"], REWIND_WHAT[p["sel"]])
        self.show_modal()
        self.refresh()

    def _rewind(self, turn: int, what: str) -> None:
        self.picker = None
        self.handle.submit(m.Rewind(to_turn=turn, what=what))  # type: ignore[arg-type]
        self.model.add("notice", f"rewinding to turn {turn} ({what})…")

    def _picker_body(self) -> tuple[urwid.Widget, str]:
        p = self.picker
        assert p is not None
        rows: list[urwid.Widget] = []
        if p["stage"] == "turn":
            for i, t in enumerate(p["turns"]):
                n = t["files"]
                label = f'T{t["turn"]} · {n} file{"s" if n != 1 else ""} · "{sanitize(t["title"])}"'
                rows.append(urwid.Text(("modal_key" if i == p["sel"] else "assistant",
                                        ("▸ " if i == p["sel"] else "  ") + label), wrap="ellipsis"))
            rows += [urwid.Divider(), urwid.Text(("modal_label", "Up/Down choose · Enter pick · Esc close"))]
            return urwid.Pile(rows), " rewind to the start of which turn? "
        names = {"code": "[c] code — put the files back", "conversation": "[v] conversation — forget the later turns",
                 "both": "[b] both"}
        for i, what in enumerate(REWIND_WHAT):
            rows.append(urwid.Text(("modal_key" if i == p["sel"] else "assistant",
                                    ("▸ " if i == p["sel"] else "  ") + names[what])))
        rows += [urwid.Divider(), urwid.Text(("modal_label", "Up/Down choose · Enter restore · Esc close"))]
        return urwid.Pile(rows), f" rewind to T{p['turn']}: restore what? "

    # ------------------------------------------------------------ modals

    def modal_open(self) -> bool:
        return bool(self.approvals) or bool(self.questions) or self.picker is not None or self.agents_view is not None

    # ------------------------------------------------------------ /agents

    def open_agents(self, which: str = "") -> None:
        """/agents: the list of subagents (running first); /agents ID opens one's transcript."""
        agents = self.model.agents
        if not agents.by_id:
            self.model.add("notice", "no subagents run yet")
            return
        opened = ""
        if which:
            found = agents.find(which)
            if found is None:
                self.model.add("notice", f"there is no agent {sanitize(which)}; /agents lists them")
                return
            opened = found.id
        self.agents_view = {"sel": 0, "open": opened}
        self.show_modal()

    def _agents_key(self, size: tuple[int, ...], key: str) -> None:
        view = self.agents_view
        assert view is not None
        rows = self.model.agents.rows()
        if view["open"]:
            if key in ("esc", "left", "backspace", "q"):
                view["open"] = ""  # back to the list
            else:
                self.root.original_widget.keypress(size, key)  # the transcript's list box scrolls
                return
        elif key in ("esc", "q"):
            self.agents_view = None
        elif key in ("up", "k") and rows:
            view["sel"] = (view["sel"] - 1) % len(rows)
        elif key in ("down", "j", "tab") and rows:
            view["sel"] = (view["sel"] + 1) % len(rows)
        elif key in ("enter", "right") and rows:
            view["open"] = rows[min(view["sel"], len(rows) - 1)].id
        self.show_modal()
        self.refresh()

    def _agents_body(self) -> tuple[urwid.Widget, str]:
        view = self.agents_view
        assert view is not None
        agents = self.model.agents
        if view["open"]:
            agent = agents.by_id.get(view["open"])
            transcript = self.model.transcripts.get(view["open"])
            blocks = transcript.blocks if transcript is not None else []
            texts = [urwid.Text(render_block(b, self.expanded)) for b in blocks]
            if not texts:
                texts = [urwid.Text(("dim", "(nothing yet)"))]
            lines = sum(t.rows((70,)) for t in texts)
            height = max(3, min(lines, self._rows() - 8))
            box = urwid.ListBox(urwid.SimpleFocusListWalker(texts))
            box.set_focus(len(texts) - 1)  # the newest at the bottom, as the transcript follows
            box.set_focus_valign("bottom")
            pile = urwid.Pile([urwid.BoxAdapter(box, height), urwid.Divider(),
                               urwid.Text(("modal_label", "Up/Down/PgUp/PgDn scroll · Esc back to the list"))])
            pile.focus_position = 0
            title = f" agent {agent.id} · {agent.type} · {agent.state} " if agent is not None else " agent "
            return pile, title
        rows: list[urwid.Widget] = []
        listed = agents.rows()
        sel = min(view["sel"], len(listed) - 1)
        for i, agent in enumerate(listed):
            attr = "modal_key" if i == sel else ("status_busy" if agent.state == "running" else "assistant")
            rows.append(urwid.Text((attr, ("▸ " if i == sel else "  ") + agent_line(agent)), wrap="ellipsis"))
        running = len(agents.running())
        rows += [urwid.Divider(), urwid.Text(("modal_label", "Up/Down choose · Enter open its transcript · Esc close"))]
        return urwid.Pile(rows), f" agents: {running} running, {len(listed) - running} finished "

    def _rows(self) -> int:
        if self.loop is None:
            return 24
        return int(self.loop.screen.get_cols_rows()[1])

    def _offer_worktree_removal(self) -> bool:
        """On /quit in a worktree: a clean one is offered for removal (True: the question is open;
        either answer then leaves), a dirty one is kept and said so. The branch always stays."""
        from cox.worktrees import Worktree, WorktreeError, is_clean, remove

        wt: Worktree | None = self.worktree
        self.worktree = None  # asked once: a second /quit just leaves
        if wt is None:
            return False
        branch = sanitize(wt.branch)
        if not is_clean(wt):
            self.model.add("notice", f"worktree {sanitize(str(wt.path))} has uncommitted changes: kept "
                                     f"(branch {branch})")
            return False

        def removed() -> None:
            try:
                remove(wt)
                self.model.add("notice", f"removed worktree {sanitize(str(wt.path))}; branch {branch} stays")
            except WorktreeError as exc:
                self.model.add("notice", sanitize(str(exc)), level="warning")
            raise urwid.ExitMainLoop

        def kept() -> None:
            self.model.add("notice", f"worktree {sanitize(str(wt.path))} kept (branch {branch})")
            raise urwid.ExitMainLoop

        self.ask_confirm(f"worktree {sanitize(str(wt.path))} is clean; remove it? (branch {branch} stays)",
                         removed, kept)
        return True

    def ask_confirm(self, prompt: str, on_yes: Any, on_no: Any) -> None:
        """A yes/no question of the TUI's own (``cox asks:``) in the question modal."""
        self.questions.ask_yes_no(prompt, on_yes, on_no)
        self.show_modal()

    def show_modal(self) -> None:
        """Put the head of the question queue (question.py), the /rewind picker or the head of
        the approval queue over the screen."""
        if self.questions:
            self._overlay(*self.questions.body())
            return
        if self.approvals and self.picker is not None:
            self.picker = None  # an approval outranks the picker
        if self.picker is not None:
            self._overlay(*self._picker_body())
            return
        if self.agents_view is not None and not self.approvals:  # an approval outranks /agents (it stays open)
            self._overlay(*self._agents_body())
            return
        if not self.approvals:
            self.editing = None
            self.modal_error = ""
            self.root.original_widget = self.frame
            return
        ev = self.approvals[0]
        call = ev.call
        subject = relative(sanitize(call.subject or json.dumps(call.input, ensure_ascii=False)), self.model.status.cwd)
        if subject.count("\n") > 8:
            subject = "\n".join(subject.splitlines()[:8]) + "\n…"
        label, reason = approval_label(ev.reason)  # a subagent's call: which agent asks comes first
        rows: list[urwid.Widget] = [
            urwid.Text([("modal_label", "tool     "), ("tool_name", sanitize(call.name))]),
            urwid.Text([("modal_label", "subject  "), ("assistant", subject)]),
            urwid.Text([("modal_label", "risk     "), ("warning", call.risk.value)]),
            urwid.Text([("modal_label", "reason   "),
                        ("assistant", relative(reason, self.model.status.cwd) or "-")]),
            urwid.Divider(),
        ]
        preview = change_preview(call.input)
        if preview and self.editing is None:
            rows.insert(4, urwid.Text([("modal_label", "change\n"), *preview]))
        if self.editing is not None:
            rows.append(urwid.Text(("modal_label", "edit the input (JSON) · Enter send · Ctrl+J newline · Esc back")))
            rows.append(urwid.LineBox(self.editing))
        else:
            rows.append(urwid.Text([("modal_key", "[y]"), " allow once  ", ("modal_key", "[s]"), " allow for session  ",
                                    ("modal_key", "[n]"), " deny  ", ("modal_key", "[e]"), " edit input"]))
        if self.modal_error:
            rows.append(urwid.Text(("error", self.modal_error)))
        if len(self.approvals) > 1:
            rows.append(urwid.Text(("modal_label", f"+{len(self.approvals) - 1} more waiting")))
        if label:
            rows.insert(0, urwid.Text([("modal_label", "agent    "), ("status_busy", f" {label} ")]))
        pile = urwid.Pile(rows)
        if self.editing is not None:
            pile.focus_position = len(rows) - 1 - (1 if self.modal_error else 0) - (1 if len(self.approvals) > 1 else 0)
        self._overlay(pile, f" agent {label}: approve {sanitize(call.name)}? " if label
                      else f" approve {sanitize(call.name)}? ")

    def _overlay(self, body: urwid.Widget, title: str) -> None:
        box = urwid.AttrMap(urwid.LineBox(urwid.Padding(body, left=1, right=1), title=title), "modal")
        self.root.original_widget = urwid.Overlay(box, self.frame, "center", ("relative", 80), "middle", "pack")

    def modal_key(self, size: tuple[int, ...], key: str) -> str | None:
        if self.questions:
            self.questions.key(size, key)
            self.show_modal()
            self.refresh()
            return None
        if self.picker is not None:
            self._picker_key(key)
            return None
        if self.agents_view is not None and not self.approvals:
            self._agents_key(size, key)
            return None
        ev = self.approvals[0]
        call = ev.call
        if self.editing is not None:
            if key == "enter":
                try:
                    edited = json.loads(self.editing.edit_text)
                except json.JSONDecodeError as exc:
                    edited, self.modal_error = None, f"not JSON: {exc.msg}"
                if isinstance(edited, dict):
                    self._answer(m.Approve(call_id=call.id, decision=Decision.EDIT, edited_input=edited), "edited")
                elif edited is not None:
                    self.modal_error = "the input must be a JSON object"
                if self.approvals and self.editing is not None:
                    self.show_modal()
                return None
            if key == "esc":
                self.editing = None
                self.modal_error = ""
                self.show_modal()
                return None
            if key == "ctrl j":
                self.editing.insert_text("\n")
                return None
            handled: str | None = self.root.original_widget.keypress(size, key)
            return handled
        if key == "y":
            self._answer(m.Approve(call_id=call.id, decision=Decision.ALLOW), "allowed")
        elif key == "s":
            self._answer(m.Approve(call_id=call.id, decision=Decision.ALLOW_FOR_SESSION), "allowed for the session")
        elif key == "n":
            self._answer(m.Approve(call_id=call.id, decision=Decision.DENY), "denied")
        elif key == "e":
            self.editing = urwid.Edit("", json.dumps(call.input, ensure_ascii=False), multiline=True)
            self.show_modal()
        elif key == "esc":
            self.handle.interrupt()
        return None

    def _answer(self, approve: m.Approve, said: str) -> None:
        self.handle.submit(approve)
        block = self.model.tools.get(approve.call_id)
        if block is not None and block.state == "waiting":
            block.state = "running" if approve.decision is not Decision.DENY else "waiting"
            block.touch()
        self.approvals.popleft()
        self.editing = None
        self.modal_error = ""
        self.show_modal()
        self.refresh()


PREVIEW_LINES = 8


def change_preview(data: dict[str, Any]) -> list[tuple[str, str]]:
    """What a write, edit or patch would change, coloured like a diff, so the person approves
    the change and not only the path (first lines only; Ctrl+O shows results, not inputs)."""
    lines: list[tuple[str, str]] = []
    if isinstance(data.get("old_string"), str) and isinstance(data.get("new_string"), str):
        lines += [("diff_del", "- " + x) for x in data["old_string"].splitlines()]
        lines += [("diff_add", "+ " + x) for x in data["new_string"].splitlines()]
    elif isinstance(data.get("content"), str):
        lines += [("diff_add", "+ " + x) for x in data["content"].splitlines()]
    elif isinstance(data.get("patch") or data.get("input"), str):
        for x in str(data.get("patch") or data.get("input")).splitlines():
            attr = "diff_add" if x.startswith("+") else "diff_del" if x.startswith("-") else "dim"
            lines.append((attr, x))
    if not lines:
        return []
    more = len(lines) - PREVIEW_LINES
    shown = [(attr, sanitize(text) + "\n") for attr, text in lines[:PREVIEW_LINES]]
    if more > 0:
        shown.append(("dim", f"… {more} more lines\n"))
    attr, last = shown[-1]
    shown[-1] = (attr, last.rstrip("\n"))
    return shown


def _drain(q: Any) -> list[Any]:
    """Everything queued now, taken under one lock (a ``queue.Queue``; else one item at a time)."""
    mutex, items = getattr(q, "mutex", None), getattr(q, "queue", None)
    if mutex is not None and isinstance(items, deque):
        with mutex:
            out = list(items)
            items.clear()
            q.not_full.notify_all()
        return out
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out


def _ends_turn(batch: list[Any]) -> bool:
    last = batch[-1][0]
    return not isinstance(last, str) and last.type == "turn_done"


def _names(names: list[str], what: str) -> str:
    """``bash`` · ``2 tools: bash, grep`` · ``5 tools: bash, grep, read +2``."""
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
    return f"{len(names)} {what}s: {shown}"


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def replay_rollout(model: Model, path: str) -> None:
    """Show the earlier transcript of a resumed session from its rollout (``status["rollout"]``)."""
    from cox.actors.store.rollout import read_rollout

    try:
        read = read_rollout(Path(path))
    except OSError as exc:
        model.add("error", f"cannot replay the earlier transcript: {exc}")
        return
    model.replay(read.events)
    model.add("turn", "earlier in this session ↑")


def _mcp_busy(rows: list[dict[str, Any]]) -> bool:
    return not rows or any(not (r.get("status") == "ready" or str(r.get("status", "")).startswith("failed"))
                           for r in rows)


def run(handle: Any, *, resumed: Any = None, think_price: str = "", architect_from_config: bool = False,
        status: dict[str, Any] | None = None, notices: Sequence[str] = ()) -> int:
    """Run the TUI on this terminal until /quit, Ctrl+D or the session stops; then print the
    transcript to the normal screen. Same contract as ``plain.run``.

    ``status`` keys (all optional): ``model``, ``mode``, ``cwd``, ``context_window`` (context shown
    in %), ``tier`` (what /model shows; default "main"), ``theme`` ("light" or "dark"; else
    $COX_THEME; NO_COLOR wins), ``rollout`` (the resumed session's rollout path: its earlier
    transcript is replayed before the new turn), ``db`` (cox.db for the /rewind picker; default
    $COX_HOME's), ``mcp_state`` (a callable returning the MCP server rows, polled for the status
    line while servers start in the background), ``skills`` (``cox.agents.skills.Skills``: ``/NAME`` sends
    a skill's instructions with the turn). ``notices``: warnings to show first (settings the
    config loader ignored, each naming its file and key)."""
    ui = TUI(handle, think_price=think_price, status=status)
    for note in notices:
        ui.model.add("notice", sanitize(str(note)), level="warning")
    if resumed is not None:
        if ui.rollout:
            replay_rollout(ui.model, ui.rollout)
        ui.model.add("notice", f"resumed session {handle.session_id}: {len(resumed.history)} messages, "
                               f"{resumed.last_turn} turns")
        for note in getattr(resumed, "notices", []) or []:
            ui.model.add("notice", sanitize(str(note)), level="warning")
    else:
        ui.model.add("notice", "cox — type a message, /help for commands")
    return ui.run(architect_from_config=architect_from_config)
