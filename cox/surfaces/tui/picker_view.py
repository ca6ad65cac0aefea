"""The resume picker on the screen: a full-screen box like the TUI's modals, drawn from a
:class:`~cox.surfaces.tui.picker.Picker` after every key. It runs its own short urwid loop
before the session opens; the TUI starts afterwards on a fresh screen."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import urwid

from ..resume_pick import Choice, details, recheck
from .picker import Picker

HELP = "↑↓ or j k move · Enter resume · type (or /) to filter · Esc or q cancel"


class View(urwid.WidgetWrap[Any]):
    """Every key goes to the model; the widget is rebuilt from it."""

    def __init__(self, model: Picker) -> None:
        self.model = model
        self.now = time.time()
        super().__init__(self._build())

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        chosen = self.model.selected()
        if key == "enter" and chosen is not None:
            recheck(chosen)  # its holder may have ended while the picker was open
        self.model.key(key)
        if self.model.done:
            raise urwid.ExitMainLoop
        self._w = self._build()
        return None

    def _build(self) -> urwid.Widget:
        p = self.model
        shown = p.visible()
        rows: list[urwid.Widget] = []
        for i, c in enumerate(shown):
            mark = "▸ " if i == p.sel else "  "
            title_attr = "modal_key" if i == p.sel else "assistant"
            rows.append(urwid.Text([(title_attr, mark + c.title)], wrap="ellipsis"))
            rows.append(urwid.Text([("warning" if c.busy else "modal_label", "    " + details(c, self.now))],
                                   wrap="ellipsis"))
        if not rows:
            rows.append(urwid.Text(("modal_label", "  (nothing matches)")))
        walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker(rows)
        body = urwid.ListBox(walker)
        if shown:
            body.set_focus(2 * p.sel)
        count = f"{len(shown)} of {len(p.choices)}" if p.query else f"{len(p.choices)}"
        head: list[urwid.Widget] = []
        if p.filtering:
            head.append(urwid.Text([("modal_label", "filter › "), ("prompt", p.query + "▏")]))
        foot: list[urwid.Widget] = [urwid.Divider()]
        if p.message:
            foot.append(urwid.Text(("error", p.message)))
        foot.append(urwid.Text(("modal_label", HELP)))
        frame = urwid.Frame(body, header=urwid.Pile(head) if head else None, footer=urwid.Pile(foot))
        box = urwid.LineBox(urwid.Padding(frame, left=1, right=1),
                            title=f" resume which session? ({count}, newest first) ")
        return urwid.AttrMap(box, "modal")


def pick(choices: Sequence[Choice], *, fork: bool = False, screen: Any = None) -> str | None:
    """Show the picker until a session is chosen (its id) or it is cancelled (None)."""
    from .app import palette

    model = Picker(choices, fork=fork)
    screen = screen or urwid.display.raw.Screen()
    no_color = bool(os.environ.get("NO_COLOR"))
    if no_color:
        screen.set_terminal_properties(colors=1)
    loop = urwid.MainLoop(View(model), palette(os.environ.get("COX_THEME") or "dark", no_color), screen=screen,
                          handle_mouse=False)
    try:
        loop.run()
    except KeyboardInterrupt:  # Ctrl+C as a signal (the terminal's own): cancelled, like Esc
        return None
    return model.chosen if model.done else None
