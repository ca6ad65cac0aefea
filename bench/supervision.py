"""How fast a supervised child comes back: crash → restarted child answering an ask.

Prints p50/p99 over many crashes next to a bare pykka ask round trip and actor start measured in
the same run (so a slow machine shows up in both). Goal: restart ≤ 5 ms for an in-process child.
A benchmark prints figures; it never asserts.

    .venv/bin/python bench/supervision.py [crashes]
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import pykka

from cox.supervisors import ChildSpec, CoxActor, shutdown, start_supervisor


class Echo(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        return "pong"


class Crashy(CoxActor):
    def on_receive(self, message: Any) -> Any:
        if message == "crash":
            raise RuntimeError("crash")
        return "pong"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def report(label: str, samples: list[float], unit: str = "ms") -> None:
    scale = {"ms": 1e3, "µs": 1e6}[unit]
    p50, p99 = percentiles(samples)
    print(f"{label:<52} p50 {p50 * scale:8.3f} {unit}   p99 {p99 * scale:8.3f} {unit}   n={len(samples)}")


def ask_round_trip(start: Callable[[], pykka.ActorRef[Any]], n: int) -> list[float]:
    ref = start()
    for _ in range(200):
        ref.ask("ping", timeout=1)
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        ref.ask("ping", timeout=1)
        samples.append(time.perf_counter() - t0)
    ref.stop(timeout=1)
    return samples


def start_stop(n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        ref = Echo.start()
        ref.ask("ping", timeout=1)
        samples.append(time.perf_counter() - t0)
        ref.stop(timeout=1)
    return samples


def restart_latency(crashes: int, strategy: str, siblings: int) -> list[float]:
    """Crash the child with a tell, then do what a caller does: ``handle.ask`` resolves the name,
    its first ask lands behind the crash and fails with ActorDeadError, it waits for the new
    incarnation and asks again. Timed from just before the tell to the answer."""
    children = [ChildSpec("child", Crashy.start)]
    children += [ChildSpec(f"sibling{i}", Crashy.start) for i in range(siblings)]
    sup = start_supervisor("bench", strategy, max_restarts=10**9, period_s=1.0, children=children)
    samples = []
    for i in range(crashes + 20):
        old = sup.whereis("child", timeout=1.0)
        assert old is not None
        t0 = time.perf_counter()
        old.tell("crash")
        sup.ask("child", "ping", timeout=2.0)
        if i >= 20:  # warm-up
            samples.append(time.perf_counter() - t0)
    sup.stop(timeout=5)
    return samples


def main() -> None:
    crashes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    # Each crash logs a traceback (pykka) and a warning (cox); keep the terminal readable.
    logging.disable(logging.CRITICAL)
    print(f"python {sys.version.split()[0]}, switch interval {sys.getswitchinterval() * 1e3:g} ms")
    try:
        report("bare pykka ask round trip", ask_round_trip(Echo.start, 5000), "µs")
        report("CoxActor ask round trip", ask_round_trip(Crashy.start, 5000), "µs")
        report("bare pykka actor start → first answer", start_stop(200))
        report("restart one_for_one: crash → new child answers", restart_latency(crashes, "one_for_one", 0))
        report(
            "restart one_for_all, 4 siblings: crash → answers",
            restart_latency(crashes, "one_for_all", 4),
        )
    finally:
        shutdown(timeout=5)


if __name__ == "__main__":
    main()
