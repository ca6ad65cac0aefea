"""How the TUI copes with a fast stream: 20,000 text deltas at full speed through a real session
(scripted model, real actors) into the real urwid loop drawing on a pseudo-terminal (100x30),
compared with the same stream drained headless (no UI).

Prints frames drawn, frames per second, CPU seconds used by the UI thread, the time from the last
delta reaching the surface's queue to the screen showing it, and the stream's wall time with and
without the TUI. Goals (issue 7): ≤ 50 ms to screen, ≤ 60 fps, ≤ 20% slower than headless.

    .venv/bin/python bench/tui.py [--deltas N]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import struct
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import urwid  # noqa: E402

from cox.actors.provider.scripted import ScriptedProvider  # noqa: E402
from cox.actors.session.actor import SessionSettings  # noqa: E402
from cox.actors.tools.registry import builtin_tools  # noqa: E402
from cox.policy.permission import Engine  # noqa: E402
from cox.protocol import messages as m  # noqa: E402
from cox.protocol.types import new_ulid  # noqa: E402
from cox.surfaces.runtime import App  # noqa: E402
from cox.surfaces.tui.app import TUI  # noqa: E402

END = "<<END>>"


def open_session(tmp: Path, deltas: int) -> tuple[App, Any]:
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    # prose: a line break every 15 words, like a model's paragraphs and lists
    steps: list[dict[str, Any]] = [{"text": "word " if i % 15 != 14 else "word\n"} for i in range(deltas - 1)]
    steps.append({"text": END})
    provider = ScriptedProvider({"model": "bench", "replies": [{"events": steps, "stop": "end_turn"}]})
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="bench")
    app = App(tmp / "home")
    engine = Engine.compile([], [], [], home=Path.home(), roots=[ws])
    return app, app.open_session(settings, provider, builtin_tools(), engine)


def stamp_puts(handle: Any, marks: dict[str, float]) -> None:
    """Note when the last delta reaches the surface's queue (the session's sink puts it there)."""
    q = handle.events
    put = q.put

    def timed(item: Any, *a: Any, **kw: Any) -> None:
        put(item, *a, **kw)
        event = item[0]
        if event.type == "text_delta" and event.text == END:
            marks["last"] = time.monotonic()

    q.put = timed


def headless(deltas: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        app, handle = open_session(Path(tmp), deltas)
        try:
            while handle.events.get(timeout=10)[0].type != "session_started":
                pass
            start = time.monotonic()
            handle.submit(m.UserTurn(text="go"))
            while handle.events.get(timeout=60)[0].type != "turn_done":
                pass
            return time.monotonic() - start
        finally:
            app.close()


def tui(deltas: int) -> dict[str, float]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    stop = threading.Event()

    def terminal() -> None:  # read and discard what the UI writes, as a terminal would
        while not stop.is_set():
            try:
                if not os.read(master, 65536):
                    return
            except OSError:
                return

    threading.Thread(target=terminal, daemon=True).start()
    screen = urwid.display.raw.Screen(input=os.fdopen(os.dup(slave), "rb", buffering=0),
                                      output=os.fdopen(os.dup(slave), "w"), bracketed_paste_mode=False)
    marks: dict[str, float] = {}
    frames = [0]
    with tempfile.TemporaryDirectory() as tmp:
        app, handle = open_session(Path(tmp), deltas)
        stamp_puts(handle, marks)
        ui = TUI(handle, status={"model": "bench", "mode": "default", "cwd": tmp})
        started = ui._started

        def hooked() -> None:
            assert ui.loop is not None
            loop = ui.loop
            draw = loop.draw_screen

            def counted() -> None:
                draw()
                frames[0] += 1
                blocks = ui.model.blocks
                if "start" in marks and "shown" not in marks and any(b.text.endswith(END) for b in blocks[-3:]):
                    marks["shown"] = time.monotonic()
                if "shown" in marks and not ui.model.status.turn_running and "done" not in marks:
                    marks["done"] = time.monotonic()
                    loop.set_alarm_in(0.05, lambda *_: _exit())

            loop.draw_screen = counted  # type: ignore[method-assign]
            started()
            marks["cpu0"] = time.thread_time()
            marks["start"] = time.monotonic()
            ui.model.typed("go", queued=False)
            ui.model.status.turn_running = True
            handle.submit(m.UserTurn(text="go"))

        def _exit() -> None:
            raise urwid.ExitMainLoop

        ui._started = hooked  # type: ignore[method-assign]
        try:
            ui.run(screen=screen, print_transcript=False)
            marks["cpu"] = time.thread_time() - marks["cpu0"]
        finally:
            stop.set()
            app.close()
    marks["frames"] = frames[0]
    marks["wakes"] = ui.frames
    return marks


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deltas", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3, help="runs of each; the median run is reported")
    args = ap.parse_args()
    bases = sorted(headless(args.deltas) for _ in range(args.runs))
    base = bases[len(bases) // 2]
    runs = sorted((tui(args.deltas) for _ in range(args.runs)), key=lambda r: r["done"] - r["start"])
    r = runs[len(runs) // 2]
    wall = r["done"] - r["start"]
    print(f"deltas:                 {args.deltas}  (median of {args.runs} runs)")
    print(f"headless stream:        {base:.3f} s")
    print(f"TUI stream:             {wall:.3f} s  ({(wall / base - 1) * 100:+.0f}% vs headless; until the screen shows the turn done)")
    print(f"frames drawn:           {int(r['frames'])}  ({r['frames'] / wall:.1f} per second)")
    print(f"wakes applied:          {int(r['wakes'])}")
    print(f"UI thread CPU:          {r['cpu']:.3f} s")
    print(f"last delta → screen:    {(r['shown'] - r['last']) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
