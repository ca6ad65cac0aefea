"""How the TUI copes with a fast stream: 20,000 text deltas at full speed through a real session
(scripted model, real actors) into the real urwid loop drawing on a pseudo-terminal (100x30),
compared with the same stream drained headless (no UI).

Prints frames drawn, frames per second, CPU seconds used by the UI thread, the time from the last
delta reaching the surface's queue to the screen showing it, and the stream's wall time with and
without the TUI: until the session's last event reaches the surface (the stream) and until the
screen shows the turn done. Goals (issue 7): ≤ 50 ms to screen, ≤ 60 fps, ≤ 20% slower than
headless. Headless and TUI runs alternate and each figure is the median of ``--runs`` runs, so
a burst of load elsewhere on the machine moves both alike. ``--code`` streams a reply made of
fenced Python blocks instead of prose (syntax colouring on the UI thread).

The terminal that reads what the UI writes is a separate process (``cat``), as a real terminal
is: a reader thread inside the measured process would take the GIL from the stream it measures.

    .venv/bin/python bench/tui.py [--deltas N] [--runs N] [--code]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
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


def script(deltas: int, code: bool) -> list[dict[str, Any]]:
    if not code:  # prose: a line break every 15 words, like a model's paragraphs and lists
        return [{"text": "word " if i % 15 != 14 else "word\n"} for i in range(deltas - 1)]
    # fenced Python: 40-line blocks between short paragraphs, a few tokens a line
    pieces = ["Here is more:\n", "```python\n"]
    for n in range(40):
        pieces += [f"def f{n}(x):", " return", f' "s{n}"', " # note\n"]
    pieces.append("```\n")
    return [{"text": pieces[i % len(pieces)]} for i in range(deltas - 1)]


def open_session(tmp: Path, deltas: int, code: bool = False) -> tuple[App, Any]:
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    steps = script(deltas, code)
    steps.append({"text": END})
    provider = ScriptedProvider({"model": "bench", "replies": [{"events": steps, "stop": "end_turn"}]})
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="bench")
    app = App(tmp / "home")
    engine = Engine.compile([], [], [], home=Path.home(), roots=[ws])
    return app, app.open_session(settings, provider, builtin_tools(), engine)


def stamp_puts(handle: Any, marks: dict[str, float]) -> None:
    """Note when the last delta and the turn's end reach the surface's queue (the session's sink
    puts them there)."""
    q = handle.events
    put = q.put

    def timed(item: Any, *a: Any, **kw: Any) -> None:
        put(item, *a, **kw)
        event = item[0]
        if event.type == "text_delta" and event.text == END:
            marks["last"] = time.monotonic()
        elif event.type == "turn_done":
            marks["turn_done"] = time.monotonic()

    q.put = timed


def headless(deltas: int, code: bool = False) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        app, handle = open_session(Path(tmp), deltas, code)
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


def tui(deltas: int, code: bool = False) -> dict[str, float]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    # the terminal: another process reading and discarding what the UI writes
    terminal = subprocess.Popen(["cat"], stdin=master, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(master)
    screen = urwid.display.raw.Screen(input=os.fdopen(os.dup(slave), "rb", buffering=0),
                                      output=os.fdopen(os.dup(slave), "w"), bracketed_paste_mode=False)
    marks: dict[str, float] = {}
    frames = [0]
    with tempfile.TemporaryDirectory() as tmp:
        app, handle = open_session(Path(tmp), deltas, code)
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
            app.close()
            os.close(slave)
            terminal.kill()
            terminal.wait()
    marks["frames"] = frames[0]
    marks["wakes"] = ui.frames
    return marks


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deltas", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=7, help="runs of each, alternating; medians are reported")
    ap.add_argument("--code", action="store_true", help="stream fenced Python blocks instead of prose")
    args = ap.parse_args()
    bases: list[float] = []
    runs: list[dict[str, float]] = []
    for _ in range(args.runs):
        bases.append(headless(args.deltas, args.code))
        runs.append(tui(args.deltas, args.code))

    def med(key: Any) -> float:
        return statistics.median(key(r) for r in runs)

    base = statistics.median(bases)
    stream = med(lambda r: r["turn_done"] - r["start"])
    wall = med(lambda r: r["done"] - r["start"])
    print(f"deltas:                 {args.deltas}{' (fenced Python)' if args.code else ''}  "
          f"(median of {args.runs} runs each)")
    print(f"headless stream:        {base:.3f} s")
    print(f"TUI stream:             {stream:.3f} s  ({(stream / base - 1) * 100:+.0f}% vs headless; "
          "until the turn's end reaches the surface)")
    print(f"TUI screen:             {wall:.3f} s  ({(wall / base - 1) * 100:+.0f}% vs headless; "
          "until the screen shows the turn done)")
    print(f"frames drawn:           {med(lambda r: r['frames']):.0f}  "
          f"({med(lambda r: r['frames'] / (r['done'] - r['start'])):.1f} per second)")
    print(f"wakes applied:          {med(lambda r: r['wakes']):.0f}")
    print(f"UI thread CPU:          {med(lambda r: r['cpu']):.3f} s")
    print(f"last delta → screen:    {med(lambda r: r['shown'] - r['last']) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
