"""The TUI's question modal: one question at a time over the screen, titled ``<source> asks:``.

Two kinds of question use it:

- a session's ``Question`` event (an MCP server's elicitation, asked one field, review step or
  URL at a time; see ``cox/actors/mcp/questions.py``): the answer goes back as
  ``Answer{question_id}``, Esc sends ``Answer{declined: true}``, which cancels the whole request;
  a ``QuestionClosed`` (the server withdrew it, the turn was interrupted or ended) takes the
  modal away, and the transcript gets a one-line notice of why;
- the TUI's own yes/no questions (the think tier's price consent for architect mode), titled
  ``cox asks:``, whose answer runs a callback and never leaves the TUI.

Keys: Up/Down move, Enter picks (or sends the typed text, or the ticked choices), a number picks
(ticks, for a multi-choice), the first letter of a choice picks it when no other choice shares
that letter, Space ticks a multi-choice, Esc cancels. Enter on an empty text field is an empty
answer: the dialogue keeps the last answer, takes the default or skips an optional field.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urwid

from cox.protocol import messages as m

from ..questions import Shape, shape

__all__ = ["QuestionModal", "Questions"]


@dataclass(eq=False)
class QuestionModal:
    """One question: its shape, what answering does, and the modal's local state."""

    q: Shape
    on_answer: Callable[[Any], None]
    on_cancel: Callable[[], None]
    question_id: str | None = None  # a session's Question; None for the TUI's own
    sel: int = 0
    ticked: set[int] = field(default_factory=set)
    edit: urwid.Edit | None = None

    def __post_init__(self) -> None:
        if self.q.kind == "text":
            self.edit = urwid.Edit("")

    # ------------------------------------------------------------ drawing

    def body(self) -> tuple[urwid.Widget, str]:
        q = self.q
        rows: list[urwid.Widget] = []
        for line in q.prompt.splitlines() or [""]:
            attr = "warning" if line.startswith(("⚠", "✗")) else "modal_title" if line.startswith("open  ") else "assistant"
            rows.append(urwid.Text((attr, line)))
        rows.append(urwid.Divider())
        if q.kind in ("choice", "multi"):
            for i, (_, label) in enumerate(q.options):
                mark = ("[x] " if i in self.ticked else "[ ] ") if q.kind == "multi" else ""
                here = i == self.sel
                rows.append(urwid.Text(("modal_key" if here else "assistant",
                                        f"{'▸ ' if here else '  '}{i + 1} {mark}{label}")))
            rows.append(urwid.Divider())
        pile_focus = None
        if self.edit is not None:
            pile_focus = len(rows)
            rows.append(urwid.LineBox(self.edit))
        rows.append(urwid.Text(("modal_label", self.hint())))
        pile = urwid.Pile(rows)
        if pile_focus is not None:
            pile.focus_position = pile_focus
        return pile, f" {q.label} "

    def hint(self) -> str:
        q = self.q
        esc = "Esc cancels the whole request" if self.question_id else "Esc no"
        if q.kind == "text":
            empty = "keeps the last answer" if q.keep else "is an empty answer"
            return f"Enter send (empty {empty}) · {esc}"
        if q.kind == "multi":
            empty = " (none ticked keeps the last answer)" if q.keep else ""
            return f"Up/Down move · Space or a number ticks · Enter send{empty} · {esc}"
        return f"Up/Down move · Enter or a number picks · {esc}"

    # ------------------------------------------------------------ keys

    def key(self, size: tuple[int, ...], key: str) -> bool:
        """Handle one key; True once the question is answered or cancelled."""
        q = self.q
        if key == "esc":
            self.on_cancel()
            return True
        if self.edit is not None:
            if key == "enter":
                self.on_answer(self.edit.edit_text)
                return True
            self.edit.keypress((max(10, (size[0] if size else 80) - 8),), key)
            return False
        count = len(q.options)
        if not count:
            return False
        if key in ("up", "k"):
            self.sel = (self.sel - 1) % count
        elif key in ("down", "j", "tab"):
            self.sel = (self.sel + 1) % count
        elif key.isdigit() and 1 <= int(key) <= count:
            index = int(key) - 1
            if q.kind == "multi":
                self.sel = index
                self.ticked ^= {index}
            else:
                self.on_answer(q.options[index][0])
                return True
        elif key == " " and q.kind == "multi":
            self.ticked ^= {self.sel}
        elif key == "enter":
            if q.kind == "multi":
                self.on_answer([value for i, (value, _) in enumerate(q.options) if i in self.ticked])
            else:
                self.on_answer(q.options[self.sel][0])
            return True
        elif len(key) == 1 and key.isalpha() and q.kind == "choice":
            hits = [i for i, (_, label) in enumerate(q.options) if label[:1].lower() == key.lower()]
            if len(hits) == 1:
                self.on_answer(q.options[hits[0]][0])
                return True
        return False


class Questions:
    """The open questions, oldest first; the head is on screen."""

    def __init__(self, submit: Callable[[Any], Any]) -> None:
        self.submit = submit
        self.queue: deque[QuestionModal] = deque()

    def __bool__(self) -> bool:
        return bool(self.queue)

    def __len__(self) -> int:
        return len(self.queue)

    @property
    def head(self) -> QuestionModal | None:
        return self.queue[0] if self.queue else None

    def ask_event(self, event: Any) -> QuestionModal:
        """A session's Question: answering submits ``Answer``, Esc cancels the request."""
        qid = str(event.question_id)
        modal = QuestionModal(
            shape(event),
            on_answer=lambda value: self.submit(m.Answer(question_id=qid, answer=value)),
            on_cancel=lambda: self.submit(m.Answer(question_id=qid, declined=True)),
            question_id=qid)
        self.queue.append(modal)
        return modal

    def ask_yes_no(self, prompt: str, on_yes: Callable[[], Any] | None, on_no: Callable[[], Any] | None,
                   source: str = "cox") -> QuestionModal:
        """The TUI's own yes/no question (``cox asks:``); Esc counts as no."""

        def answered(value: Any) -> None:
            action = on_yes if value == "yes" else on_no
            if action is not None:
                action()

        def cancelled() -> None:
            if on_no is not None:
                on_no()

        modal = QuestionModal(Shape(source=source, prompt=prompt, kind="choice", options=[("yes", "yes"), ("no", "no")]),
                              on_answer=answered, on_cancel=cancelled)
        self.queue.append(modal)
        return modal

    def body(self) -> tuple[urwid.Widget, str]:
        head = self.queue[0]
        widget, title = head.body()
        if len(self.queue) > 1:
            widget = urwid.Pile([widget, urwid.Text(("modal_label", f"+{len(self.queue) - 1} more waiting"))])
        return widget, title

    def key(self, size: tuple[int, ...], key: str) -> None:
        head = self.queue[0]
        if head.key(size, key):  # answered (its callback may already have asked the next question)
            self.queue = deque(q for q in self.queue if q is not head)

    def close(self, question_id: str) -> QuestionModal | None:
        """The session closed this question without an answer (``QuestionClosed``): its modal
        goes, wherever it is in the queue. Returns it (None when it was not here)."""
        gone = next((q for q in self.queue if q.question_id == question_id), None)
        if gone is not None:
            self.queue = deque(q for q in self.queue if q is not gone)
        return gone

    def drop_session_questions(self) -> None:
        """The turn ended: the session cancelled its open questions, so their modals go."""
        self.queue = deque(q for q in self.queue if q.question_id is None)
