"""The URL opener: a short-lived child actor per URL an MCP server asks the person to open.

Opening a browser can block (``webbrowser`` starts a program and may wait for it), so it never
runs on the session's thread; and no thread runs outside the supervisor tree (DESIGN §3), so it is
not a bare thread either but an actor the session spawns linked (``SessionActor._spawn``): its
exit, however it happens, is reported to the session. It opens the URL once, tells the session
``UrlNotOpened`` when it could not, and stops. A daemon thread, like the
bare thread it replaces: a browser that never returns must not keep cox from exiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pykka

from cox.actors.session.messages import UrlNotOpened
from cox.supervisors import CoxActor

Opener = Callable[[str], str | None]
"""Opens a URL; None when done, else why not (``questions.open_in_browser``)."""


class UrlOpener(CoxActor):
    use_daemon_thread = True

    def __init__(self, opener: Opener, url: str, source: str, reply_to: pykka.ActorRef[Any]) -> None:
        super().__init__()
        self.opener = opener
        self.url = url
        self.source = source
        self.reply_to = reply_to

    def on_start(self) -> None:
        try:
            why = self.opener(self.url)
        except Exception as exc:  # noqa: BLE001 - a broken opener is a notice, not a crash
            why = str(exc) or type(exc).__name__
        if why:
            try:
                self.reply_to.tell(UrlNotOpened(self.source, self.url, why))
            except pykka.ActorDeadError:
                pass  # the session is gone: nobody is left to tell
        self.stop()
