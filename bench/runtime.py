"""Runtime figures, each beside the physical floor measured in the same run.

    .venv/bin/python bench/runtime.py [--quick] [--open-close]

Prints: text deltas/s from the scripted provider to stream-json with the rollout on; Interrupt
→ turn_done{interrupted} latency with 8 running ``sleep 60`` calls and with a stalled stream;
``cox run -p`` start-up to the first provider request; memory and time for 200 idle sessions
and 50 parallel scripted sessions; 1,000 parallel active sessions (wall, peak RSS, all finished);
the per-session cost (wall and CPU) of opening and closing 200 and of 4,000 idle sessions, whose
ratio must stay within 1.5x; a supervised child's crash → restarted and answering; SIGINT and
SIGTERM at a random moment of a ``cox run`` (start-up included) → the process's exit, and the
result line → exit gap.
Figures only: nothing here passes or fails. ``--open-close`` prints only the open/close figures.

The open/close figures take the lower of two interleaved runs per size (200, 4,000, 200, 4,000:
the machine's other load inflates one run, rarely both) and print beside them the same figures
for bare supervised actors (no session: a thread, a mailbox, a supervisor entry), the floor the
runtime itself sets, and how much of each is the garbage collector's.
"""

from __future__ import annotations

import io
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pykka

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cox.actors.provider.scripted import ScriptedProvider  # noqa: E402
from cox.actors.session.actor import SessionSettings  # noqa: E402
from cox.actors.tools.registry import builtin_tools  # noqa: E402
from cox.policy.permission import Engine  # noqa: E402
from cox.protocol import messages as m  # noqa: E402
from cox.protocol.types import ApprovalPolicy, new_ulid  # noqa: E402
from cox.surfaces import headless  # noqa: E402
from cox.surfaces.runtime import App  # noqa: E402

QUICK = "--quick" in sys.argv


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Echo(pykka.ThreadingActor):
    def on_receive(self, message):
        return message


def floor_pykka() -> tuple[float, float]:
    ref = Echo.start()
    n = 20000 if not QUICK else 5000
    t = time.perf_counter()
    for _ in range(n):
        ref.ask(1, timeout=5)
    ask_us = (time.perf_counter() - t) / n * 1e6
    done = threading.Event()

    class Sink(pykka.ThreadingActor):
        count = 0

        def on_receive(self, message):
            Sink.count += 1
            if Sink.count == n:
                done.set()

    sink = Sink.start()
    t = time.perf_counter()
    for _ in range(n):
        sink.tell(1)
    done.wait(30)
    tell_rate = n / (time.perf_counter() - t)
    ref.stop()
    sink.stop()
    return ask_us, tell_rate


def floor_queue() -> float:
    q: queue.Queue[int] = queue.Queue()
    n = 200000 if not QUICK else 50000

    def consume():
        for _ in range(n):
            q.get()

    th = threading.Thread(target=consume)
    t = time.perf_counter()
    th.start()
    for i in range(n):
        q.put(i)
    th.join()
    return n / (time.perf_counter() - t)


def floor_python() -> float:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def _settings(ws: Path, home: Path, **kw) -> SessionSettings:
    return SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=home,
                           approval_policy=ApprovalPolicy.NEVER, **kw)


def bench_deltas(app: App, ws: Path, home: Path, engine: Engine) -> float:
    n = 100000 if not QUICK else 20000
    provider = ScriptedProvider({"replies": [{"events": [{"text": "ab", "repeat": n}]}]})
    handle = app.open_session(_settings(ws, home), provider, builtin_tools(), engine)
    out = open(os.devnull, "w")
    t = time.perf_counter()
    headless.run(handle, "go", fmt="stream-json", out=out, err=io.StringIO(), install_signals=False)
    elapsed = time.perf_counter() - t
    handle.shutdown()
    return n / elapsed


def _interrupt_once(app: App, ws: Path, home: Path, engine: Engine, replies: list, wait_for: str, count: int) -> float:
    provider = ScriptedProvider({"replies": replies})
    handle = app.open_session(_settings(ws, home), provider, builtin_tools(), engine)
    handle.submit(m.UserTurn(text="go"))
    seen = 0
    while True:
        event, _ = handle.events.get(timeout=30)
        if event.type == wait_for:
            seen += 1
            if seen >= count:
                break
    time.sleep(0.05 if wait_for == "tool_call_requested" else 0.0)  # let the sleeps start
    t = time.perf_counter()
    handle.interrupt()
    while True:
        event, _ = handle.events.get(timeout=30)
        if event.type == "turn_done":
            elapsed = (time.perf_counter() - t) * 1000
            assert event.stop.value == "interrupted"
            break
    handle.shutdown()
    return elapsed


def bench_interrupt(app: App, ws: Path, home: Path, engine: Engine) -> tuple[list[float], list[float]]:
    runs = 50 if not QUICK else 10
    sleeps = [{"tool_calls": [{"name": "bash", "input": {"command": "sleep 60"}} for _ in range(8)]}]
    tools = [_interrupt_once(app, ws, home, engine, sleeps, "tool_call_requested", 8) for _ in range(runs)]
    stalled = [{"events": [{"text": "partial"}, {"stall": True}]}]
    streams = [_interrupt_once(app, ws, home, engine, stalled, "text_delta", 1) for _ in range(runs)]
    return tools, streams


def floor_bash_login() -> float:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run(["bash", "-lc", "true"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def bench_startup(ws: Path, home: Path) -> tuple[float, float]:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "cox")], check=False,
                   stdout=subprocess.DEVNULL)
    script = ws / "one.json"
    script.write_text(json.dumps({"replies": [{"text": "hi"}]}))
    firsts, totals = [], []
    for _ in range(5 if not QUICK else 2):
        dump = ws / "dump.json"
        dump.unlink(missing_ok=True)
        env = {**os.environ, "COX_HOME": str(home), "COX_SCRIPTED_DUMP": str(dump)}
        # A user's install has compiled bytecode; this workplace sets PYTHONDONTWRITEBYTECODE,
        # which would make every run compile cox from source. Measure the user's case.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "x"],
                       cwd=ws, env=env, check=True, capture_output=True)
        totals.append((time.time() - t0) * 1000)
        firsts.append((json.loads(dump.read_text())[0]["t"] - t0) * 1000)
    return statistics.median(firsts), statistics.median(totals)


def _signal_floor(signum: int) -> float:
    """A bare ``python`` sleeping in its default handlers: signal → exit."""
    times = []
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", "import sys, time; print(flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.readline()
        t = time.perf_counter()
        proc.send_signal(signum)
        proc.wait(60)
        times.append((time.perf_counter() - t) * 1000)
        proc.stdout.close()
    return statistics.median(times)


def bench_signals(ws: Path, home: Path) -> dict[str, list[float]]:
    """A ``cox run`` streaming a slow answer (about 3 s), signalled at a random moment in its first
    1.5 s — start-up, the request, the stream — and timed until the process has exited; every
    run must still end with a result line and exit 4."""
    import random
    import signal

    script = ws / "slow.json"
    script.write_text(json.dumps({"replies": [{"text": "word " * 150, "chunk": 5, "delta_delay_ms": 20}]}))
    env = {**os.environ, "COX_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    rng = random.Random(12)
    out: dict[str, list[float]] = {"SIGINT": [], "SIGTERM": []}
    runs = 6 if QUICK else 25
    for name in out:
        signum = getattr(signal, name)
        for _ in range(runs):
            proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script),
                                     "-p", "x", "--output-format", "stream-json"], cwd=ws, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            at = rng.uniform(0.0, 1.5)
            time.sleep(at)
            t = time.perf_counter()
            proc.send_signal(signum)
            stdout, _ = proc.communicate(timeout=60)
            out[name].append((time.perf_counter() - t) * 1000)
            last = json.loads(stdout.splitlines()[-1]) if stdout.strip() else {}
            if last.get("type") != "result" or proc.returncode not in (0, 4):
                print(f"  {name} {at * 1000:.0f} ms after the spawn: exit {proc.returncode}, no result line "
                      f"({'before cox installed its handlers: the interpreter was still starting' if not stdout else str(last)[:100]})")
    return out


def bench_result_gap(ws: Path, home: Path) -> list[float]:
    """From the result line on stdout to the process's exit, in a run that ends by itself."""
    script = ws / "one.json"
    script.write_text(json.dumps({"replies": [{"text": "hi"}]}))
    env = {**os.environ, "COX_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    gaps = []
    for _ in range(5 if QUICK else 15):
        proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script),
                                 "-p", "x", "--output-format", "stream-json"], cwd=ws, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        seen = None
        for raw in proc.stdout:
            if b'"type":"result"' in raw.replace(b" ", b""):
                seen = time.perf_counter()
        proc.wait(60)
        if seen is not None:
            gaps.append((time.perf_counter() - seen) * 1000)
        proc.stdout.close()
    return gaps


def bench_many(app: App, ws: Path, home: Path, engine: Engine) -> tuple[float, float, float]:
    base = rss_mb()
    handles = []
    t = time.perf_counter()
    for _ in range(200):
        provider = ScriptedProvider({"replies": [{"text": "idle"}]})
        handles.append(app.open_session(_settings(ws, home), provider, builtin_tools(), engine))
    for h in handles:  # wait until each is up (session_started seen)
        h.events.get(timeout=30)
    open_s = time.perf_counter() - t
    per_idle = (rss_mb() - base) / 200
    for h in handles:
        h.shutdown()
    # 50 sessions in parallel, each with a read and a bash call
    replies = [{"tool_calls": [{"name": "read", "input": {"path": "a.txt"}},
                               {"name": "bash", "input": {"command": "echo hi"}}]}, {"text": "done"}]
    results: list[int] = []
    t = time.perf_counter()

    def one():
        provider = ScriptedProvider({"replies": replies})
        h = app.open_session(_settings(ws, home), provider, builtin_tools(), engine)
        results.append(headless.run(h, "go", fmt="json", out=io.StringIO(), err=io.StringIO(),
                                    install_signals=False, idle_timeout=0.05))
        h.shutdown()

    threads = [threading.Thread(target=one) for _ in range(50)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    par_s = time.perf_counter() - t
    assert results.count(0) == 50, results
    return per_idle, open_s, par_s


class PeakRss:
    """Samples VmRSS on a thread while a figure is measured: the peak of that stretch alone
    (``ru_maxrss`` would report whatever earlier figure peaked higher)."""

    def __init__(self, every_s: float = 0.02) -> None:
        self.base = rss_mb()
        self.peak = self.base
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, rss_mb())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def bench_parallel_active(app: App, ws: Path, home: Path, engine: Engine, n: int) -> tuple[float, float, float, int]:
    """``n`` sessions at once, one thread each: open, one prompt, one short scripted reply, wait
    for its turn_done, close. Returns (wall s, peak RSS MB, RSS growth MB, how many finished)."""
    finished: list[str] = []
    failed: list[str] = []
    go = threading.Event()

    def one(i: int) -> None:
        go.wait()
        try:
            provider = ScriptedProvider({"replies": [{"text": f"reply {i}"}]})
            h = app.open_session(_settings(ws, home), provider, builtin_tools(), engine)
            h.submit(m.UserTurn(text="go"))
            while True:
                event, _ = h.events.get(timeout=120)
                if event.type == "turn_done":
                    (finished if event.stop.value == "end_turn" else failed).append(h.session_id)
                    break
            h.shutdown()
        except Exception as exc:  # a figure, not a test: count it and say what it was
            failed.append(repr(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    with PeakRss() as rss:
        t = time.perf_counter()
        go.set()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t
    if failed:
        print(f"  {len(failed)} of {n} parallel sessions did not finish; first: {failed[0]}")
    return wall, rss.peak, rss.peak - rss.base, len(finished)


def bench_open_close(app: App, ws: Path, home: Path, engine: Engine, n: int) -> dict[str, float]:
    """Open ``n`` idle sessions one after another (each up: session_started seen), then close
    them one after another. Per session, in ms: wall and CPU (this process's, all threads: what
    the machine's other load does not inflate) for opening and for closing, and the time spent
    in the garbage collector (whose full passes walk a heap that grows with the sessions held)."""
    import gc

    gc.collect()  # each size starts from a clean heap, not the garbage of the figure before
    in_gc = [0.0, 0.0]  # started at, total

    def gc_clock(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            in_gc[0] = time.perf_counter()
        else:
            in_gc[1] += time.perf_counter() - in_gc[0]

    gc.callbacks.append(gc_clock)
    handles = []
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        provider = ScriptedProvider({"replies": [{"text": "idle"}]})
        handles.append(app.open_session(_settings(ws, home), provider, builtin_tools(), engine))
    for h in handles:
        while h.events.get(timeout=120)[0].type != "session_started":
            pass
    out = {"open": (time.perf_counter() - t) / n * 1000, "open_cpu": (time.process_time() - c) / n * 1000}
    t, c = time.perf_counter(), time.process_time()
    for h in handles:
        h.shutdown()
    out["close"] = (time.perf_counter() - t) / n * 1000
    out["close_cpu"] = (time.process_time() - c) / n * 1000
    gc.callbacks.remove(gc_clock)
    out["gc"] = in_gc[1] / n * 1000
    return out


def bench_open_close_floor(app: App, n: int) -> dict[str, float]:
    """``bench_open_close`` for bare supervised actors: what one more thread, mailbox and
    supervisor entry costs under ``n`` siblings, without a session's objects."""
    import gc

    from cox.supervisors import ChildSpec, CoxActor, Restart

    class Idle(CoxActor):
        def on_receive(self, message: object) -> None:
            return None

    gc.collect()
    t, c = time.perf_counter(), time.process_time()
    refs = [app.sessions.start_child(ChildSpec(f"floor-{i}", Idle.start, restart=Restart.TEMPORARY,
                                               shutdown_timeout=10.0)) for i in range(n)]
    for ref in refs:
        ref.ask("up?", timeout=120)
    out = {"open": (time.perf_counter() - t) / n * 1000, "open_cpu": (time.process_time() - c) / n * 1000}
    t, c = time.perf_counter(), time.process_time()
    for ref in refs:
        ref.stop(block=True, timeout=10)
    out["close"] = (time.perf_counter() - t) / n * 1000
    out["close_cpu"] = (time.process_time() - c) / n * 1000
    return out


def _lower(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: min(run[key] for run in runs) for key in runs[0]}


def open_close_figures(app: App, ws: Path, home: Path, engine: Engine) -> None:
    sizes = (200, 1000) if QUICK else (200, 4000)
    runs: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    floors: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    for _ in range(2):
        for size in sizes:
            runs[size].append(bench_open_close(app, ws, home, engine, size))
            floors[size].append(bench_open_close_floor(app, size))
    costs = {size: _lower(r) for size, r in runs.items()}
    floor = {size: _lower(r) for size, r in floors.items()}
    for size, cost in costs.items():
        print(f"open/close of {size:,} idle sessions, per session: open {cost['open']:.2f} ms "
              f"(CPU {cost['open_cpu']:.2f}) · close {cost['close']:.2f} ms (CPU {cost['close_cpu']:.2f}) · "
              f"in the garbage collector {cost['gc']:.2f} ms · floor (a bare supervised actor): "
              f"CPU {floor[size]['open_cpu']:.2f} + {floor[size]['close_cpu']:.2f} ms")
    small, big = (costs[size] for size in sizes)
    wall = (big["open"] + big["close"]) / (small["open"] + small["close"])
    cpu = (big["open_cpu"] + big["close_cpu"]) / (small["open_cpu"] + small["close_cpu"])
    no_gc = (big["open_cpu"] + big["close_cpu"] - big["gc"]) / (small["open_cpu"] + small["close_cpu"] - small["gc"])
    fs, fb = (floor[size] for size in sizes)
    floor_cpu = (fb["open_cpu"] + fb["close_cpu"]) / (fs["open_cpu"] + fs["close_cpu"])
    print(f"  per-session cost at {sizes[1]:,} / at {sizes[0]:,}: {wall:.2f}x wall, {cpu:.2f}x CPU "
          f"(goal ≤ 1.5x: {'linear' if cpu <= 1.5 else 'NOT linear'}) · {no_gc:.2f}x CPU less the collector's · "
          f"floor {floor_cpu:.2f}x CPU")


def main() -> None:
    sys.setswitchinterval(0.001)
    tmp = Path(tempfile.mkdtemp(prefix="cox-bench-"))
    home = tmp / "home"
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    os.environ["COX_HOME"] = str(home)
    from cox.surfaces import logs

    logs.setup(home / "logs")
    ask_us, tell_rate = floor_pykka()
    q_rate = floor_queue()
    py_ms = floor_python()
    print(f"floors: pykka ask {ask_us:.1f} µs · pykka tell {tell_rate:,.0f} msgs/s · "
          f"queue.Queue {q_rate:,.0f} items/s · python -c pass {py_ms:.1f} ms")
    engine = Engine.compile(["Bash(sleep:*)", "Bash(echo:*)"], [], [], home=tmp, roots=[ws])
    app = App(home)
    if "--open-close" in sys.argv[1:]:
        try:
            open_close_figures(app, ws, home, engine)
        finally:
            app.close()
        return
    try:
        rate = bench_deltas(app, ws, home, engine)
        print(f"text deltas → stream-json + rollout: {rate:,.0f} deltas/s (goal ≥ 30,000; floor: tell "
              f"{tell_rate:,.0f}/s)")
        tools, streams = bench_interrupt(app, ws, home, engine)
        print(f"interrupt → turn_done, 8 running sleep 60: p50 {pct(tools, 50):.1f} ms · p99 {pct(tools, 99):.1f} ms "
              f"(goal p99 ≤ 50)")
        print(f"interrupt → turn_done, stalled stream:     p50 {pct(streams, 50):.1f} ms · "
              f"p99 {pct(streams, 99):.1f} ms (goal p99 ≤ 50)")
        per_idle, open_s, par_s = bench_many(app, ws, home, engine)
        print(f"200 idle sessions: {per_idle:.2f} MB each (goal ≤ 2), opened in {open_s * 1000:.0f} ms · "
              f"50 scripted sessions in parallel (a read and a bash call each): {par_s * 1000:.0f} ms "
              f"(floor: one `bash -lc true` takes {floor_bash_login():.0f} ms here)")
        par_n = 300 if QUICK else 1000
        wall, peak, grew, done = bench_parallel_active(app, ws, home, engine, par_n)
        print(f"{par_n:,} parallel active sessions (one short scripted reply each): {wall:.1f} s wall · "
              f"peak RSS {peak:.0f} MB (+{grew:.0f} MB) · {done:,}/{par_n:,} finished")
        open_close_figures(app, ws, home, engine)
    finally:
        app.close()
    first, total = bench_startup(ws, home)
    print(f"cox run -p start-up → first provider request: {first:.0f} ms ({first - py_ms:.0f} ms beyond "
          f"python -c pass; goal ≤ 150) · whole run {total:.0f} ms")
    signals = bench_signals(ws, home)
    for name, times in signals.items():
        floor = _signal_floor(getattr(__import__("signal"), name))
        print(f"{name} at a random moment → exit: p50 {pct(times, 50):.0f} ms · p99 {pct(times, 99):.0f} ms "
              f"over {len(times)} runs (goal p99 ≤ 250; floor: a sleeping python exits in {floor:.1f} ms)")
    gaps = bench_result_gap(ws, home)
    print(f"result line → exit: p50 {pct(gaps, 50):.0f} ms · p99 {pct(gaps, 99):.0f} ms over {len(gaps)} runs")
    try:
        sys.path.insert(0, str(ROOT / "bench"))
        import supervision

        if hasattr(supervision, "measure"):
            print(supervision.measure())
        else:
            subprocess.run([sys.executable, str(ROOT / "bench" / "supervision.py")], check=False)
    except ImportError:
        print("supervised restart: bench/supervision.py is missing")


if __name__ == "__main__":
    main()
