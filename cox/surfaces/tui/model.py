"""What the TUI shows, kept apart from urwid: a list of blocks built from Events, and the
status-line facts derived from them.

Keeping this urwid-free lets it be tested directly, reused by the bench, and turned into the
plain-text transcript printed on exit. Every string a model or tool wrote passes ``sanitize``
here, once, so the widgets never see raw text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cox.policy.sanitize import sanitize

from ..questions import closed_text
from .agents import Agents, count

if TYPE_CHECKING:
    from .worktree import GitState

_MODE_NOTICE = re.compile(r"permission mode (\w+)")
_PRESET_NOTICE = re.compile(r"^mode (\w+): permission mode \w+, main turns on (\S+)")
_MODEL_NOTICE = re.compile(r"^model \S+: main turns on (\S+) from the next request$")
TIERS = {"architect": "think", "editor": "main"}


@dataclass
class Block:
    """One transcript entry. ``version`` bumps on every change so the UI re-renders only what
    changed since the last frame."""

    kind: str  # user | assistant | thinking | tool | notice | error | turn
    text: str = ""
    version: int = 0
    # user blocks
    queued: bool = False
    acked: bool = False
    # tool blocks
    call_id: str = ""
    name: str = ""
    subject: str = ""
    state: str = "running"  # running | waiting | ok | error | denied | aborted
    detail: str = ""
    last_line: str = ""
    output: str = ""  # the result's visible text (sanitized), shown when rows are expanded
    edited: bool = False  # the person edited the input at approval: subject is the edited call's
    level: str = "info"
    # thinking blocks: unfolded on their own (Ctrl+T), apart from Ctrl+O's expand-everything
    unfolded: bool = False
    live: bool = False  # the reply or thinking block deltas still extend

    def touch(self) -> None:
        self.version += 1


@dataclass
class Status:
    model: str = ""
    mode: str = "default"
    cwd: str = ""
    context_tokens: int = 0
    context_window: int = 0  # when known (the lead passes it in ``status``), context is shown in %
    cost_usd: float = 0.0
    turn: int = 0
    turn_running: bool = False
    running_tools: int = 0
    tier: str = ""  # the model tier (main, think, cheap) when the lead passes it in ``status``
    input_tokens: int = 0  # the session's totals, from usage events (what /cost shows)
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    mcp: list[dict[str, Any]] = field(default_factory=list)  # session_started's ``mcp_servers``
    running: list[str] = field(default_factory=list)  # names of the tools running now, in call order
    # the cwd's git state (``worktree.probe``), refreshed off the UI thread at start and after each turn
    git: GitState | None = None
    subagents: list[str] = field(default_factory=list)  # the ids of the subagents running now

    def agents_summary(self) -> str:
        """``2 agents`` while subagents run; "" otherwise."""
        return count(len(self.subagents)) if self.subagents else ""

    def mcp_summary(self) -> str:
        """``mcp 2✓ 1✗ 1…``: servers ready, failed, still starting or restarting; "" without any."""
        if not self.mcp:
            return ""
        states = [str(s.get("status", "")) for s in self.mcp]
        ok = sum(1 for x in states if x == "ready")
        bad = sum(1 for x in states if x.startswith("failed"))
        other = len(states) - ok - bad
        parts = [f"{ok}✓"] + ([f"{bad}✗"] if bad else []) + ([f"{other}…"] if other else [])
        return "mcp " + " ".join(parts)


@dataclass
class Model:
    """The transcript and status, updated by :meth:`apply` one Event at a time."""

    blocks: list[Block] = field(default_factory=list)
    status: Status = field(default_factory=Status)
    tools: dict[str, Block] = field(default_factory=dict)
    asking: dict[str, str] = field(default_factory=dict)  # open question id -> who asks (for its close)
    starts: dict[int, int] = field(default_factory=dict)  # turn -> index of its first block (what a rewind cuts)
    _open: Block | None = None  # the assistant/thinking block a delta extends
    cuts: int = 0  # bumped when blocks are dropped from the middle on: the views are rebuilt
    # A resumed session's totals before this run (cost, tokens in, out, cache read, written): the
    # session's own totals restart at zero on a resume, so the status adds these to its totals.
    # ``_earlier`` holds the totals shown when a run started until that run's first usage event
    # shows whether the session restarted its count (then they become ``_base``) or carried it on.
    _earlier: tuple[float, int, int, int, int] | None = None
    _base: tuple[float, int, int, int, int] = (0.0, 0, 0, 0, 0)
    agents: Agents = field(default_factory=Agents)  # the subagents (/agents), from the relayed events
    transcripts: dict[str, Model] = field(default_factory=dict)  # agent id -> its transcript

    # ------------------------------------------------------------ local actions

    def add(self, kind: str, text: str, **kw: Any) -> Block:
        self._close()
        block = Block(kind=kind, text=text, **kw)
        self.blocks.append(block)
        return block

    def typed(self, text: str, *, queued: bool) -> Block:
        """What the person sent, shown at once (queued while a turn runs) and matched later
        against the session's ``user_message``."""
        return self.add("user", text, queued=queued)

    # ------------------------------------------------------------ events

    def apply(self, event: Any) -> None:
        t = event.type
        st = self.status
        if t == "session_started":
            self._new_run()
            st.model = st.model or event.model
            st.mode = event.permission_mode.value
            st.cwd = st.cwd or event.cwd
            st.mcp = list(event.mcp_servers)
        elif t == "turn_started":
            st.turn = event.turn
            st.turn_running = True
            start = len(self.blocks)
            while start and self.blocks[start - 1].kind == "user" and not self.blocks[start - 1].acked \
                    and not self.blocks[start - 1].queued:
                start -= 1  # the message the person just sent (shown before the session echoes it) opens the turn
            self.starts[event.turn] = start
        elif t == "user_message":
            self._user_message(event)
        elif t in ("text_delta", "thinking_delta"):
            self.deltas(t, [event.text])
        elif t == "tool_call_requested":
            call = event.call
            self.tools[call.id] = self.add("tool", "", call_id=call.id, name=sanitize(call.name),
                                           subject=self._subject(call))
            self.agents.called(call)
            self._running()
        elif t == "tool_call_edited":
            edited = self.tools.get(event.call.id)
            if edited is not None:  # the row shows what runs, not what the model first asked for
                edited.subject = self._subject(event.call)
                edited.edited = True
                edited.touch()
        elif t == "approval_required":
            waiting = self.tools.get(event.call.id)
            if waiting is not None:
                waiting.state = "waiting"
                waiting.touch()
            self._running()
        elif t == "tool_call_output":
            out = self.tools.get(event.call_id)
            if out is not None:
                lines = [x for x in sanitize(event.chunk).splitlines() if x.strip()]
                if lines:
                    out.last_line = _one_line(lines[-1], 90)
                    out.touch()
        elif t == "tool_call_done":
            self._tool_done(event)
            self.agents.result(event)
            self.status.subagents = self.agents.running()
            self._running()
        elif t == "agent_event":
            self._agent_event(event)
        elif t == "notice":
            msg = sanitize(event.message)
            found = _MODE_NOTICE.search(msg)
            if found:
                st.mode = found.group(1)
            preset = _PRESET_NOTICE.search(msg)
            if preset:
                st.tier = TIERS.get(preset.group(1), st.tier)
                st.model = preset.group(2)
            switched = _MODEL_NOTICE.search(msg)
            if switched:  # /model NAME took effect: the status line names it
                st.model = switched.group(1)
            if not preset:  # a mode change (Shift+Tab, /mode) shows in the status line, not the transcript
                self.add("notice", msg, level=event.level)
        elif t == "error":
            self.add("error", sanitize(event.message))
        elif t == "usage":
            u = event.usage
            st.context_tokens = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.output_tokens
            if event.session_total is not None:
                tot = event.session_total
                if self._earlier is not None:  # the first usage since a resume's replay
                    restarted = (tot.input_tokens, tot.output_tokens) == (u.input_tokens, u.output_tokens)
                    self._base, self._earlier = (self._earlier if restarted else (0.0, 0, 0, 0, 0)), None
                cost, tin, tout, cread, cwrite = self._base
                st.cost_usd = cost + tot.cost_usd
                st.input_tokens, st.output_tokens = tin + tot.input_tokens, tout + tot.output_tokens
                st.cache_read_tokens = cread + tot.cache_read_tokens
                st.cache_write_tokens = cwrite + tot.cache_write_tokens
            else:
                st.cost_usd += u.cost_usd
                st.input_tokens += u.input_tokens
                st.output_tokens += u.output_tokens
                st.cache_read_tokens += u.cache_read_tokens
                st.cache_write_tokens += u.cache_write_tokens
        elif t == "compacted":
            self.add("notice", f"compacted: {event.before_tokens} → {event.after_tokens} tokens")
        elif t == "rewound":
            if event.what in ("conversation", "both") and event.to_turn in self.starts:
                self._cut(self.starts[event.to_turn])  # the turns taken back leave the screen and the transcript
            self.add("notice", f"rewound to turn {event.to_turn} ({event.what})")
        elif t == "checkpoint":
            pass
        elif t == "question":
            lines = [x for x in sanitize(event.prompt).splitlines() if x.strip()]  # the modal shows it whole
            step = next((x for x in lines if re.match(r"\(\d+/\d+\) |send |open  ", x)), lines[0] if lines else "")
            asks = f"{sanitize(event.source or 'cox')} asks: "
            text = asks + _one_line(step, 90)
            last = self.blocks[-1] if self.blocks else None
            if last is not None and last.kind == "notice" and last.text.startswith(asks):
                last.text = text  # one line per request, showing its latest step
                last.touch()
            else:
                self.add("notice", text)
            self.asking[event.question_id] = event.source or "cox"
        elif t == "question_closed":
            self.add("notice", closed_text(self.asking.pop(event.question_id, None), event.reason),
                     level="info")
        elif t == "turn_done":
            st.turn_running = False
            self.asking.clear()
            for block in self.tools.values():
                if block.state in ("running", "waiting"):
                    block.state, block.detail = "aborted", "interrupted"
                    block.touch()
            self._running()
            stop = event.stop.value
            if stop != "end_turn":
                self.add("turn", f"turn {event.turn}: {stop}" + (f" ({sanitize(event.reason)})" if event.reason else ""))
            else:
                self._close()

    def _agent_event(self, event: Any) -> None:
        """A subagent's relayed event: its row in /agents and its own transcript."""
        got = self.agents.relayed(event)
        if got is not None:
            agent, child = got
            view = self.transcripts.get(agent.id)
            if view is None:
                view = self.transcripts[agent.id] = Model()
                view.status.cwd = self.status.cwd
            if child.type == "assistant_message":  # a child's deltas are not relayed: its message is the text
                text = "".join(str(b.get("text", "")) for b in child.content
                               if isinstance(b, dict) and b.get("type") == "text")
                if text.strip():
                    view.add("assistant", sanitize(text))
            else:
                view.apply(child)
        self.status.subagents = self.agents.running()

    def _new_run(self) -> None:
        """A session (re)started: the totals shown so far are kept until its first usage event
        says whether its own totals include them."""
        st = self.status
        if st.cost_usd or st.input_tokens or st.output_tokens:
            self._earlier = (st.cost_usd, st.input_tokens, st.output_tokens, st.cache_read_tokens,
                             st.cache_write_tokens)

    def _subject(self, call: Any) -> str:
        subject = relative(call.subject or json.dumps(call.input, ensure_ascii=False), self.status.cwd)
        return sanitize(_one_line(subject))

    def deltas(self, kind: str, texts: list[str]) -> None:
        """Extend the open reply (``text_delta``) or thinking (``thinking_delta``) block with a run
        of deltas at once: the UI applies a frame's worth of deltas with one join, not one string
        copy of the whole reply per delta. Each piece is sanitized on its own, as it arrived."""
        kind = "assistant" if kind == "text_delta" else "thinking"
        if self._open is None or self._open.kind != kind:
            self._close()
            self._open = Block(kind=kind, live=True)
            self.blocks.append(self._open)
        self._open.text += "".join(map(sanitize, texts))
        self._open.touch()

    def replay(self, events: list[dict[str, Any]]) -> int:
        """Show a resumed session's earlier transcript from its rollout's event dicts: user
        messages, assistant text (from ``assistant_message``; the deltas it repeats are skipped),
        tool rows, notices of compactions and rewinds, and the usage totals. Turns a rewind of the
        conversation took back are not shown again (the rewind's notice is). Returns the number of
        events shown; undecodable lines are skipped. The status ends idle."""
        from cox.protocol.messages import ProtocolError, decode_event

        shown = 0
        for raw in events:
            kind = raw.get("type")
            if kind == "session_started":
                self._new_run()  # an earlier resume: its totals started again from zero
                continue
            if kind == "assistant_message":
                text = "".join(str(b.get("text", "")) for b in raw.get("content", [])
                               if isinstance(b, dict) and b.get("type") == "text")
                if text.strip():
                    self.add("assistant", sanitize(text))
                    shown += 1
                continue
            if kind == "user_message":
                self.add("user", sanitize(str(raw.get("text", ""))), acked=True)
                shown += 1
                continue
            if kind not in ("tool_call_requested", "tool_call_edited", "tool_call_done", "usage", "compacted", "rewound", "turn_done",
                            "error", "turn_started", "agent_event"):
                continue
            try:
                event = decode_event(raw)
            except (ProtocolError, ValueError):
                continue
            self.apply(event)
            shown += 1
        self._close()
        self.status.turn_running = False
        for block in self.tools.values():
            if block.state in ("running", "waiting"):
                block.state, block.detail = "aborted", "interrupted"
                block.touch()
        for agent in self.agents.by_id.values():
            if agent.state == "running":  # its session ended with the run that started it
                agent.state = "interrupted"
        self.status.subagents = self.agents.running()
        self._running()
        return shown

    def _cut(self, index: int) -> None:
        """Drop the blocks from ``index`` on (the turns a rewind of the conversation took back,
        live or in a replayed transcript)."""
        gone = {id(b) for b in self.blocks[index:]}
        del self.blocks[index:]
        self.tools = {k: b for k, b in self.tools.items() if id(b) not in gone}
        self.starts = {t: i for t, i in self.starts.items() if i < index}
        self._open = None
        self.cuts += 1

    def _close(self) -> None:
        """No delta extends the open block any more (it is drawn as finished)."""
        if self._open is not None:
            self._open.live = False
            self._open.touch()
            self._open = None

    def clear(self) -> None:
        """/clear: forget the visible transcript (the session's history is untouched)."""
        self.blocks.clear()
        self.starts.clear()
        self._open = None
        self.tools = {k: b for k, b in self.tools.items() if b.state in ("running", "waiting")}
        self.blocks.extend(self.tools.values())

    def _user_message(self, event: Any) -> None:
        text = sanitize(event.text)
        for block in self.blocks:
            if block.kind == "user" and not block.acked and block.text == text:
                block.acked = True
                block.queued = False
                block.touch()
                return
        self.add("user", text, acked=True)

    def _tool_done(self, event: Any) -> None:
        block = self.tools.get(event.call_id)
        if block is None:
            block = self.add("tool", "", call_id=event.call_id, name="tool")
            self.tools[event.call_id] = block
        r = event.result
        status = r.status.value
        block.output = sanitize(r.visible)
        parts: list[str] = []
        if status == "ok":
            block.state = "ok"
            if event.duration_ms is not None:
                parts.append(f"{event.duration_ms / 1000:.1f} s")
            n = len(r.visible.splitlines())
            parts.append(f"{n} line{'s' if n != 1 else ''}")
        elif status == "denied":
            block.state = "denied"
            first = _first_line(r.visible)
            parts.append("denied" + (f": {first}" if first else ""))
        elif status == "aborted":
            block.state = "aborted"
            parts.append("interrupted")
        else:
            block.state = "error"
            parts.append(f"exit {r.exit_code}" if r.exit_code is not None else (_first_line(r.visible) or "error"))
        if r.archive_id and r.total_bytes is not None:  # every result has an id; a row names it when cut
            parts.append(f"expand #{r.archive_id}")
        block.detail = " · ".join(parts)
        block.touch()

    def _running(self) -> None:
        """The status's running tools: their count and names (in the order they were called)."""
        names = [b.name for b in self.tools.values() if b.state == "running"]
        self.status.running = names
        self.status.running_tools = len(names)

    # ------------------------------------------------------------ plain text

    def plain(self) -> str:
        """The transcript as text, printed to the normal screen on exit so it stays in scrollback."""
        out: list[str] = []
        for b in self.blocks:
            out.append(render_plain(b))
        return "\n".join(x for x in out if x) + "\n"


MARKS = {"running": "●", "waiting": "?", "ok": "✓", "error": "✗", "denied": "⊘", "aborted": "■"}


def tool_line(b: Block) -> str:
    mark = MARKS.get(b.state, "●")
    return f"{mark} {b.name}  {_one_line(b.subject, 70)}  {tool_tail(b)}"


def tool_tail(b: Block) -> str:
    """What follows a tool row's subject: its state or result, ``edited`` first when the person
    changed the input at approval."""
    tail = b.detail or ("waiting for approval" if b.state == "waiting" else "running…")
    return f"edited · {tail}" if b.edited else tail


def render_plain(b: Block) -> str:
    if b.kind == "user":
        return f"{'you (queued)' if b.queued else 'you'} › {b.text}"
    if b.kind == "assistant":
        return f"cox › {b.text.strip()}"
    if b.kind == "thinking":
        return f"  (thinking) {_one_line(b.text, 200)}"
    if b.kind == "tool":
        return "  " + tool_line(b)
    if b.kind == "notice":
        return f"  [{b.level}] {b.text}"
    if b.kind == "error":
        return f"  [error] {b.text}"
    if b.kind == "turn":
        return f"  — {b.text}"
    return b.text


def relative(subject: str, cwd: str) -> str:
    """Paths under the workspace shown relative to it: the row stays short and readable."""
    if cwd:
        subject = subject.replace(cwd.rstrip("/") + "/", "")
    return subject


def _first_line(text: str) -> str:
    text = sanitize(text).strip()
    return _one_line(text.splitlines()[0], 80) if text else ""


def _one_line(text: str, limit: int = 80) -> str:
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
