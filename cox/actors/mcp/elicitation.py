"""The elicitation broker: an MCP server's questions to the person, on the session's thread.

A server elicits during one of the session's calls, from its connection's loop thread
(:meth:`ask_from_thread`, handed to MCP tools as their ``ask``). The broker turns the request
into a dialogue (``questions.py``: a form asked one field at a time, or a URL to open), emits
each question, feeds the person's answers back, and settles the server's waiting future with
what goes to that server and nowhere else — the answer is never emitted, added to the history
or logged. A question closes on every surface (``QuestionClosed``) when the server withdraws it,
the call or the turn ends, or the session closes; its server then gets ``cancel``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pykka

from cox.protocol import messages as m
from cox.protocol.types import QuestionCloseReason
from cox.slim import dataclass

if TYPE_CHECKING:  # concurrent.futures loads with the first elicitation, not with every session
    import concurrent.futures

    Reply = concurrent.futures.Future[dict[str, Any]]


@dataclass(slots=True)
class OpenDialogue:
    """An elicitation being asked: its dialogue, the server's waiting reply (resolved once) and
    the open question's id ("" between questions)."""

    did: int
    dialogue: Any
    reply: Reply
    question_id: str = ""


def resolve(reply: Reply, outcome: dict[str, Any]) -> None:
    import concurrent.futures

    try:
        reply.set_result(outcome)
    except concurrent.futures.InvalidStateError:
        pass  # the server's request was withdrawn (cancelled) meanwhile


class ElicitationBroker:
    def __init__(self, emit: Callable[[Any], None], me: Callable[[], pykka.ActorRef[Any]],
                 open_url: Callable[[str, str], None]) -> None:
        self.emit = emit
        self.me = me  # the session actor: messages from other threads come back through it
        self.open_url = open_url  # (url, asking server): opens it off this thread, says so if it could not
        self.dialogues: dict[int, OpenDialogue] = {}
        self.open_questions: dict[str, int] = {}
        self.seq = 0
        # Questions closed without the surface's answer: an Answer to one of them that was
        # already on its way is ignored quietly. The latest few are enough.
        self.closed: collections.deque[str] = collections.deque(maxlen=64)

    def ask_from_thread(self, request: dict[str, Any]) -> Reply:
        """Called by an MCP connection's loop thread: the future settles with the ``ElicitResult``
        fields; cancelling it (the server withdrew the request, the call ended) withdraws it."""
        import concurrent.futures

        from cox.actors.session.messages import Elicit

        reply: Reply = concurrent.futures.Future()
        try:
            self.me().tell(Elicit(request, reply))
        except pykka.ActorDeadError:
            resolve(reply, {"action": "cancel"})
        return reply

    def elicit(self, request: dict[str, Any], reply: Reply, accepting: bool) -> None:
        """A request reached the session's thread; ``accepting``: a turn runs and the session is
        not closing (otherwise the server hears ``cancel`` at once)."""
        from cox.actors.session.messages import QuestionGone

        from .questions import dialogue_for

        if reply.done():
            return
        if not accepting:
            resolve(reply, {"action": "cancel"})
            return
        self.seq += 1
        state = OpenDialogue(self.seq, dialogue_for(request), reply)
        self.dialogues[state.did] = state
        me, did = self.me(), state.did

        def gone(future: Reply) -> None:
            if future.cancelled():
                try:
                    me.tell(QuestionGone(did))
                except pykka.ActorDeadError:
                    pass

        reply.add_done_callback(gone)
        self._step(state, state.dialogue.start())

    def answer(self, sub: m.Answer) -> None:
        """The person's answer to an open question: the dialogue asks the next question or
        settles the server's request."""
        did = self.open_questions.pop(sub.question_id, None)
        state = self.dialogues.get(did) if did is not None else None
        if state is None and sub.question_id in self.closed:
            return  # closed while the answer was on its way: nothing to do
        if state is None or state.question_id != sub.question_id:
            self.emit(m.Notice(level="warning", message=f"no open question with id {sub.question_id}"))
            return
        state.question_id = ""
        self._step(state, state.dialogue.answer(sub.answer, cancelled=bool(sub.declined)))

    def gone(self, did: int) -> None:
        """The server's request was cancelled (withdrawn, or its call or connection ended)."""
        state = self.dialogues.pop(did, None)
        if state is not None:
            self._close(state, "withdrawn")

    def cancel_all(self, reason: QuestionCloseReason) -> None:
        """Cancel every open question (an interrupt, the turn's end, shutdown): each closes on
        the surfaces, then its waiting server request gets ``cancel``."""
        states, self.dialogues = list(self.dialogues.values()), {}
        for state in states:
            self._close(state, reason)
        self.open_questions.clear()
        for state in states:
            resolve(state.reply, {"action": "cancel"})

    def url_not_opened(self, source: str, url: str, why: str) -> None:
        self.emit(m.Notice(level="warning", message=f"could not open the browser for {source} ({why}); "
                                                    f"open it yourself: {url}"))

    def _step(self, state: OpenDialogue, step: Any) -> None:
        from cox.protocol.types import new_ulid

        from .questions import Done

        if isinstance(step, Done):
            self.dialogues.pop(state.did, None)
            if step.note:
                self.emit(m.Notice(level="warning", message=step.note))
            if step.open_url:
                self.open_url(step.open_url, state.dialogue.source)
            resolve(state.reply, step.reply())
            return
        state.question_id = "q" + new_ulid()
        self.open_questions[state.question_id] = state.did
        self.emit(m.Question(question_id=state.question_id, prompt=step.prompt, schema=step.schema, url=step.url,
                             source=state.dialogue.source))

    def _close(self, state: OpenDialogue, reason: QuestionCloseReason) -> None:
        if not state.question_id:
            return
        self.open_questions.pop(state.question_id, None)
        self.closed.append(state.question_id)
        self.emit(m.QuestionClosed(question_id=state.question_id, reason=reason))
        state.question_id = ""
