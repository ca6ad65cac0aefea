"""The state of the resume picker (``cox -r``), apart from urwid, so it is unit-tested without a
terminal (as :mod:`cox.surfaces.tui.model` is for the TUI): which sessions are shown, the filter,
the selection, and what a key does. :mod:`cox.surfaces.tui.picker_view` only draws it.

Keys: Up/Down or ``k``/``j`` move (Home/End, PgUp/PgDn too), Enter resumes the selected
session, Esc, Ctrl+C or ``q`` cancel. Typing filters by title: any printable key but ``j``,
``k`` and ``q`` starts the filter, and ``/`` starts it explicitly (to filter by a word that
begins with one of those); while a filter is typed every printable key goes into it, Backspace
edits it (past its start the filter closes), Ctrl+U clears it. Enter on a session another live
cox holds shows the refusal ``--resume ID`` would get and keeps the picker open.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..resume_pick import Choice

MOVES = {"up": -1, "k": -1, "down": 1, "j": 1, "page up": -10, "page down": 10}
CANCEL = frozenset({"esc", "ctrl c", "q"})


class Picker:
    def __init__(self, choices: Sequence[Choice], *, fork: bool = False) -> None:
        self.choices = list(choices)
        self.fork = fork
        """``--fork-session``: a busy session is continued as a copy, never refused."""
        self.query = ""
        self.filtering = False
        self.sel = 0
        self.message = ""
        """The sentence under the list (a refusal, nothing matches); cleared by the next key."""
        self.done = False
        self.chosen: str | None = None
        """The session id to resume once ``done``; None: cancelled."""

    def visible(self) -> list[Choice]:
        """The sessions whose title holds every word of the filter (case-insensitive)."""
        words = self.query.lower().split()
        return [c for c in self.choices if all(w in c.title.lower() for w in words)]

    def selected(self) -> Choice | None:
        shown = self.visible()
        return shown[self.sel] if shown else None

    def key(self, key: str) -> None:
        """Apply one urwid key name (``"up"``, ``"enter"``, ``"a"`` …)."""
        self.message = ""
        if key in CANCEL and not (key == "q" and self.filtering):
            self.done, self.chosen = True, None
        elif key == "enter":
            self._enter()
        elif key in MOVES and not (self.filtering and len(key) == 1):
            self._move(MOVES[key])
        elif key == "home":
            self.sel = 0
        elif key == "end":
            self.sel = max(0, len(self.visible()) - 1)
        elif key == "backspace" and self.filtering:
            if self.query:
                self._set_query(self.query[:-1])
            else:
                self.filtering = False
        elif key == "ctrl u" and self.filtering:
            self._set_query("")
        elif key == "/" and not self.filtering:
            self.filtering = True
        elif len(key) == 1 and key.isprintable():
            self.filtering = True
            self._set_query(self.query + key)

    def _move(self, step: int) -> None:
        count = len(self.visible())
        if count:
            self.sel = min(max(self.sel + step, 0), count - 1)

    def _set_query(self, query: str) -> None:
        current = self.selected()
        self.query = query
        shown = self.visible()
        # the selected session stays selected while it still matches; else the newest that does
        self.sel = next((i for i, c in enumerate(shown) if current is not None and c.id == current.id), 0)
        if not shown:
            self.message = f"no session's title matches {query!r}"

    def _enter(self) -> None:
        c = self.selected()
        if c is None:
            self.message = "no session matches the filter: Backspace edits it, Ctrl+U clears it"
            return
        if c.busy and not self.fork:
            self.message = c.busy
            return
        self.done, self.chosen = True, c.id
