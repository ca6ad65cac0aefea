"""A human-readable rendering of the event stream, for ``cox demo`` and the plain surface.

Everything a model or tool wrote passes ``policy.sanitize`` before it reaches the terminal.
"""

from __future__ import annotations

from typing import IO, Any

from cox.policy.sanitize import sanitize


class Transcript:
    def __init__(self, out: IO[str], *, show_output_lines: int = 6) -> None:
        self.out = out
        self.show = show_output_lines
        self.in_text = False
        self.calls: dict[str, Any] = {}
        self.asking: dict[str, str] = {}  # open question id -> who asks (for its close line)
        self.cwd = ""

    def _end_text(self) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False

    def event(self, event: Any) -> None:
        t = event.type
        w = self.out.write
        if t == "session_started":
            self.cwd = event.cwd.rstrip("/") + "/"
        elif t == "user_message":
            self._end_text()
            w(f"\n{'you (queued)' if event.steered else 'you'} › {sanitize(event.text)}\n")
        elif t == "text_delta":
            if not self.in_text:
                w("cox › ")
                self.in_text = True
            w(sanitize(event.text))
        elif t == "tool_call_requested":
            self._end_text()
            self.calls[event.call.id] = event.call
            subject = event.call.subject or str(event.call.input)
            if self.cwd and subject.startswith(self.cwd):
                subject = subject[len(self.cwd):]  # paths inside the workspace, as the user wrote them
            w(f"  ● {sanitize(event.call.name)}  {sanitize(_short(subject))}\n")
        elif t == "approval_required":
            self._end_text()
            w(f"  ? {sanitize(event.call.name)} needs approval: {sanitize(event.reason)}\n")
        elif t == "tool_call_done":
            call = self.calls.get(event.call_id)
            name = sanitize(call.name) if call else "tool"
            r = event.result
            status = r.status.value
            mark = {"ok": "✓", "denied": "⊘", "aborted": "■"}.get(status, "✗")
            first = sanitize(r.visible.strip().splitlines()[0] if r.visible.strip() else "")
            timing = f" · {event.duration_ms / 1000:.1f} s" if event.duration_ms else ""
            w(f"  {mark} {name}{timing}  {_short(first, 100)}\n")
        elif t == "question":
            self.asking[event.question_id] = event.source or "cox"
        elif t == "question_closed":
            from .questions import closed_text

            self._end_text()
            w(f"  [question] {closed_text(self.asking.pop(event.question_id, None), event.reason)}\n")
        elif t == "notice":
            self._end_text()
            w(f"  [{event.level}] {sanitize(event.message)}\n")
        elif t == "error":
            self._end_text()
            w(f"  [error] {sanitize(event.message)}\n")
        elif t == "turn_done":
            self._end_text()
            self.asking.clear()
            w(f"  — turn {event.turn}: {event.stop.value}" + (f" ({sanitize(event.reason)})" if event.reason else "")
              + "\n")
        self.out.flush()


def _short(text: str, limit: int = 80) -> str:
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
