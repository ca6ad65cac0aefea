"""MCP client overhead and recovery, against the real stdio test server (tests/mcp/servers).

Prints, from one run:

- ``tools/call`` round trip to the test server's ``echo`` through the actor (``McpTool.call``
  with a real ``ToolEnv``: resolve the server by name, ask its actor for the connection, submit to
  its loop, render the result) — median and p99;
- the same call through a bare SDK ``ClientSession`` over ``stdio_client``, in this process —
  the difference of the medians is the actor's overhead (goal ≤ 1 ms);
- the time from SIGKILL of the server to the first successful call on the restarted one
  (median of 5);
- launch → first model request of ``cox run -p`` with the test server configured, cold (no
  cached tool listing: the server is waited for) and warm (listing cached: it starts in the
  background), against the loopback model API of ``tests/provider/loopback.py`` as
  ``bench/provider.py`` measures it, next to the same run with no MCP server (median of 5 each;
  goal: warm within a few ms of no server, ≤ 150 ms).

A benchmark prints figures; it never asserts.

    .venv/bin/python bench/mcp.py [calls]
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path and this file would shadow the
# ``mcp`` SDK package: take it off, and put the repository on instead.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

from cox.actors.mcp.config import McpServerSpec, Origin  # noqa: E402
from cox.actors.mcp.supervisor import Backoff, start_mcp  # noqa: E402
from cox.actors.mcp.trust import TrustStore  # noqa: E402
from cox.actors.tools.base import ToolEnv  # noqa: E402
from cox.protocol.types import ToolCall  # noqa: E402
from cox.supervisors import CancelScope, shutdown, start_supervisor  # noqa: E402

SERVER = ROOT / "tests" / "mcp" / "servers" / "testserver.py"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def report(label: str, samples: list[float]) -> None:
    p50, p99 = percentiles(samples)
    print(f"{label:<58} p50 {p50 * 1e3:8.3f} ms   p99 {p99 * 1e3:8.3f} ms   n={len(samples)}")


def through_actor(n: int, tmp: Path) -> tuple[list[float], list[float]]:
    """Round trips through McpTool.call, then SIGKILL → first successful call, 5 times."""
    pidfile = tmp / "pids"
    spec = McpServerSpec("b", Origin.USER, command=sys.executable, args=(str(SERVER),),
                         env={"COX_TEST_PIDFILE": str(pidfile)})
    root = start_supervisor("root")
    try:
        mcp = start_mcp(root, {"b": spec}, backoff=Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0),
                        trust=TrustStore(tmp / "trust.json"))
        mcp.wait_settled(30)
        tool = mcp.tools()["mcp__b__echo"]
        env = ToolEnv(roots=[tmp], cwd=tmp, cancel=CancelScope(), output=lambda _c: None)
        call = ToolCall(id="c", name=tool.name, input={"text": "x"})
        for _ in range(20):
            tool.call(call, env)
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            result = tool.call(call, env)
            samples.append(time.perf_counter() - started)
            assert result.ok, result.visible
        recover = []
        for _ in range(5):
            pid = int(pidfile.read_text().split()[-1])
            time.sleep(1.2)  # past reset_after_s: each kill restarts after the initial backoff
            started = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            while True:
                result = tool.call(call, env)
                if result.ok and f"pid {pid})" not in result.visible:
                    break
            recover.append(time.perf_counter() - started)
        mcp.stop()
    finally:
        shutdown(10)
    return samples, recover


async def bare_start(times: int) -> list[float]:
    """Spawn → initialize → first echo through a bare SDK session: the floor for a restart."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("echo", {"text": "x"})
            samples.append(time.perf_counter() - started)
    return samples


async def bare_session(n: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    samples = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(20):
            await session.call_tool("echo", {"text": "x"})
        for _ in range(n):
            started = time.perf_counter()
            await session.call_tool("echo", {"text": "x"})
            samples.append(time.perf_counter() - started)
    return samples


def first_request(runs: int = 5) -> dict[str, float]:
    """Launch → first model request (ms, median of ``runs``) of ``cox run -p x``: with no MCP
    server, with one never listed before (cold: a fresh $COX_HOME each run), and with its listing
    cached (warm: the same $COX_HOME again)."""
    from bench.provider import anthropic_text, env_for
    from tests.provider.loopback import Loopback, Reply

    ws = Path(tempfile.mkdtemp(prefix="cox-bench-mcp-"))
    times: dict[str, list[float]] = {"no MCP server": [], "1 MCP server, cold (no cached listing)": [],
                                     "1 MCP server, warm (listing cached)": []}
    with Loopback() as api:
        def once(home: Path) -> float:
            api.add(Reply(anthropic_text(["hi"])))
            env = {**env_for("anthropic", api, home), "HOME": str(ws)}  # no ~/.claude.json servers
            started = time.time()
            subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "x"], cwd=ws, env=env,
                           capture_output=True, check=False, timeout=60)
            return (api.requests[-1]["at"] - started) * 1000

        for i in range(runs):
            plain = ws / f"plain-{i}"
            plain.mkdir()
            times["no MCP server"].append(once(plain))
            home = ws / f"home-{i}"
            home.mkdir()
            (home / "config.toml").write_text(
                f'[mcp.servers.t]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n')
            times["1 MCP server, cold (no cached listing)"].append(once(home))
            times["1 MCP server, warm (listing cached)"].append(once(home))
    return {label: statistics.median(samples) for label, samples in times.items()}


def main() -> None:
    logging.disable(logging.WARNING)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for label, ms in first_request().items():
        print(f"{'launch -> first request, ' + label:<58} p50 {ms:8.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        actor, recover = through_actor(n, Path(tmp))
    bare = asyncio.run(bare_session(n))
    cold = asyncio.run(bare_start(5))
    report("tools/call echo, bare SDK ClientSession (stdio)", bare)
    report("tools/call echo, through the actor (McpTool.call)", actor)
    overhead = statistics.median(actor) - statistics.median(bare)
    print(f"{'actor overhead (difference of medians), goal <= 1 ms':<58} {overhead * 1e3:8.3f} ms")
    print(f"{'SIGKILL -> first successful call on restarted server':<58} "
          f"p50 {statistics.median(recover) * 1e3:8.1f} ms   max {max(recover) * 1e3:8.1f} ms   n={len(recover)}")
    print(f"{'  floor: bare SDK spawn -> initialize -> first call':<58} "
          f"p50 {statistics.median(cold) * 1e3:8.1f} ms   max {max(cold) * 1e3:8.1f} ms   n={len(cold)}")


if __name__ == "__main__":
    main()
