"""An SSE response that knows when the browser left.

Starlette's ``StreamingResponse`` finds a closed connection only when a write fails, and a turn
waiting on an approval or a ``sleep`` writes nothing. This response waits for the client's
``http.disconnect`` beside the frames, so closing the stream ends the turn at once: ``on_close``
runs (with whether the stream ended on its own), and the bridge interrupts the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from .frames import Frame, sse
from .security import Receive, Scope, Send

END: Frame = ("", {})
"""Put on a stream's queue: the stream is over (after the frame that ended it)."""


class EventStream:
    """ASGI response: the frames put on ``queue`` until END, as ``text/event-stream``."""

    def __init__(self, queue: asyncio.Queue[Frame], on_close: Callable[[bool], None]) -> None:
        self.queue = queue
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False

        async def pump() -> None:
            nonlocal finished
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream; charset=utf-8"),
                                    (b"cache-control", b"no-store"), (b"x-accel-buffering", b"no")]})
            while True:
                frame = await self.queue.get()
                if frame is END:
                    break
                await send({"type": "http.response.body", "body": sse(*frame), "more_body": True})
            finished = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        tasks: list[asyncio.Task[Any]] = [asyncio.ensure_future(pump()), asyncio.ensure_future(gone())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
            self.on_close(finished)
