"""Provider figures against a model API on 127.0.0.1 that streams byte-exact SSE.

    .venv/bin/python bench/provider.py [--startup]

``--startup`` stops after the start-up lines (the floor, the floor agent, cox's ratio to it, and
the same ratio in CPU time, which a machine shared with other work does not blur as it does the
wall clock, and, when valgrind is installed, in instructions executed, which load does not move
at all: one run each, the same count within a fraction of a percent).

Prints the floor first: ``python -c pass`` and a ~60-line stdlib agent (one keep-alive
connection, SSE parsed, one bash call) against the same server, and cox's launch → first request
as a ratio to that agent's (goal ≤ 2×). Then, for Anthropic Messages, OpenAI Responses and Chat Completions: launch → first request
(median of 10; goal ≤ 150 ms); against 20,000 streamed text deltas, deltas per second reaching
the stream-json output (goal ≥ 20,000/s) and the time from the server's first body byte to the
first text_delta line on stdout (goal ≤ 5 ms median); and, for a scripted 10-request session,
the bytes and cache-breakpoint positions of the 2nd and 10th request; and how long a run takes to
give up on a 429 with ``retry-after: 3600`` and on a ping-only stream. Figures only.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.provider.loopback import Loopback, Reply, sse  # noqa: E402

RUNS = 10
FLOOR_GOAL = 2.0  # cox's launch → first request, at most this many times the floor agent's

# The floor: what an agent written with the standard library alone costs from launch to its first
# request (and per tool round trip) against the same server: one keep-alive connection, SSE parsed
# line by line, the bash tool run with subprocess. cox's start-up is printed as a ratio to it.
FLOOR_AGENT = r"""
import http.client, json, os, subprocess, sys, urllib.parse

url = urllib.parse.urlsplit(os.environ["ANTHROPIC_BASE_URL"])
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
headers = {"content-type": "application/json", "x-api-key": os.environ["ANTHROPIC_API_KEY"],
           "anthropic-version": "2023-06-01", "accept": "text/event-stream"}
tools = [{"name": "bash", "description": "Run a shell command.", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
messages = [{"role": "user", "content": sys.argv[1]}]


def events(resp):
    data = []
    for raw in resp:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []


while True:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 8192, "stream": True, "tools": tools, "messages": messages}
    conn.request("POST", url.path.rstrip("/") + "/v1/messages", json.dumps(body), headers)
    resp = conn.getresponse()
    blocks, stop = {}, None
    for ev in events(resp):
        kind = ev["type"]
        if kind == "content_block_start":
            blocks[ev["index"]] = {**ev["content_block"], "partial": ""}
        elif kind == "content_block_delta":
            delta, block = ev["delta"], blocks[ev["index"]]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
                print(delta["text"], end="", flush=True)
            elif delta["type"] == "input_json_delta":
                block["partial"] += delta["partial_json"]
        elif kind == "message_delta":
            stop = ev["delta"].get("stop_reason")
    resp.read()  # the rest of the body, so the connection is reused
    content = []
    for block in blocks.values():
        partial = block.pop("partial")
        if block["type"] == "tool_use":
            block["input"] = json.loads(partial or "{}")
        content.append(block)
    messages.append({"role": "assistant", "content": content})
    if stop != "tool_use":
        break
    results = []
    for block in content:
        if block["type"] == "tool_use":
            run = subprocess.run(["bash", "-c", block["input"]["command"]], capture_output=True, text=True)
            results.append({"type": "tool_result", "tool_use_id": block["id"],
                            "content": run.stdout + run.stderr, "is_error": run.returncode != 0})
    messages.append({"role": "user", "content": results})
print()
"""
# The CPU time (all threads) a process has used when its first request leaves: cox's at the
# moment ``post_sse_stdlib`` is called, the floor agent's just before its ``conn.request``.
# Each prints it and exits there, so no server is needed.
CPU_MARK = "CPU_TO_FIRST_REQUEST"
COX_CPU_PROBE = r"""
import importlib.machinery, os, runpy, sys, time

def first_request(*args, **kwargs):
    print(f"CPU_TO_FIRST_REQUEST {time.process_time() * 1000:.3f}", file=sys.stderr, flush=True)
    os._exit(0)

class Patch:  # patches the transport when cox imports it, so nothing loads earlier than it would
    def find_spec(self, name, path, target=None):
        if name != "cox.actors.provider.stdlib_http":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module
        def exec_module(module):
            load(module)
            module.post_sse_stdlib = first_request
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Patch())
sys.argv = ["cox", *sys.argv[1:]]
runpy.run_module("cox.surfaces.cli", run_name="__main__", alter_sys=True)
"""
FLOOR_CPU_PROBE = FLOOR_AGENT.replace(
    "    conn.request(", "    print(f'CPU_TO_FIRST_REQUEST {__import__(\"time\").process_time() * 1000:.3f}', "
    "file=sys.stderr, flush=True); os._exit(0)\n    conn.request(", 1)
DELTAS = 20_000
STREAM_RUNS = 7  # the first-delta latency is a few ms: a median of 7 keeps one slow run out


def anthropic_text(pieces: list[str]) -> list[bytes]:
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": p}}) for p in pieces]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": len(pieces)}}),
               ("message_stop", {"type": "message_stop"})]
    return sse(events)


def responses_text(pieces: list[str]) -> list[bytes]:
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-5", "output": []}
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                                        "item": {"type": "message", "id": "msg_1", "role": "assistant",
                                                 "status": "in_progress", "content": []}}),
        ("response.content_part.added", {"type": "response.content_part.added", "sequence_number": 2,
                                         "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                         "part": {"type": "output_text", "text": "", "annotations": []}}),
    ]
    events += [("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 3 + i,
                                               "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                               "delta": p, "logprobs": []}) for i, p in enumerate(pieces)]
    text = "".join(pieces)
    done = {**resp, "status": "completed", "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                                                       "status": "completed", "content": [
                                                           {"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 10, "output_tokens": len(pieces), "total_tokens": 10 + len(pieces),
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    events.append(("response.completed", {"type": "response.completed", "sequence_number": 3 + len(pieces),
                                          "response": done}))
    return sse(events)


def chat_text(pieces: list[str]) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "local",
                               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage is not None:
            out = {**out, "choices": [], "usage": usage}
        return out

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": p})) for p in pieces]
    events += [(None, chunk({}, "stop")),
               (None, chunk({}, usage={"prompt_tokens": 10, "completion_tokens": len(pieces), "total_tokens": 10})),
               (None, "[DONE]")]
    return sse(events)


PROVIDERS = {
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", anthropic_text, {}),
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_KEY", responses_text, {"COX_CORE_PROVIDER": "openai"}),
    "openai-chat": ("OPENAI_BASE_URL", "OPENAI_API_KEY", chat_text, {"COX_CORE_PROVIDER": "openai-chat",
                                                                      "COX_CORE_MODEL": "local-model"}),
}


def env_for(kind: str, api: Loopback, home: Path) -> dict[str, str]:
    base_var, key_var, _, extra = PROVIDERS[kind]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    base = api.url if kind == "anthropic" else api.url + "/v1"
    env.update({"COX_HOME": str(home), base_var: base, key_var: "test-key", **extra})
    return env


def first_request(kind: str, ws: Path, home: Path) -> float:
    _, _, make, _ = PROVIDERS[kind]
    times = []
    with Loopback() as api:
        for _ in range(RUNS):
            api.add(Reply(make(["hi"])))
            t0 = time.time()
            subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "x"], cwd=ws,
                           env=env_for(kind, api, home), capture_output=True, check=False, timeout=60)
            times.append((api.requests[-1]["at"] - t0) * 1000)
    return statistics.median(times)


def cpu_to_first_request(code: str, args: list[str], ws: Path, home: Path) -> float:
    """Median CPU ms (all threads) of ``python -c code args`` when its first request leaves."""
    times = []
    with Loopback() as api:  # never asked: both probes exit before they connect
        for _ in range(RUNS):
            out = subprocess.run([sys.executable, "-c", code, *args], cwd=ws, env=env_for("anthropic", api, home),
                                 capture_output=True, text=True, check=False, timeout=60)
            mark = next((line for line in out.stderr.splitlines() if line.startswith(CPU_MARK)), None)
            if mark is None:
                raise SystemExit(f"no first request: {out.stderr[-2000:]}")
            times.append(float(mark.split()[1]))
    return statistics.median(times)


def instructions_to_first_request(code: str, args: list[str], ws: Path, home: Path) -> float | None:
    """Millions of instructions ``python -c code args`` executes until its first request leaves
    (valgrind's callgrind counts every thread's); None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with Loopback() as api, tempfile.TemporaryDirectory() as out:
        run = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}/cg", sys.executable, "-c",
                              code, *args], cwd=ws, env=env_for("anthropic", api, home), capture_output=True,
                             text=True, check=False, timeout=600)
    counted = [line for line in run.stderr.splitlines() if "Collected :" in line]
    if CPU_MARK not in run.stderr or not counted:
        raise SystemExit(f"valgrind counted no first request: {run.stderr[-2000:]}")
    return int(counted[-1].split(":")[-1]) / 1e6


def streaming(kind: str, ws: Path, home: Path) -> tuple[float, float]:
    _, _, make, _ = PROVIDERS[kind]
    firsts, rates = [], []
    with Loopback() as api:
        for _ in range(STREAM_RUNS):
            body = make(["ab"] * DELTAS)
            api.add(Reply([b"".join(body[: len(body) // 2]), b"".join(body[len(body) // 2 :])]))
            proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "x", "--output-format",
                                     "stream-json"], cwd=ws, env=env_for(kind, api, home), stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            assert proc.stdout is not None
            first = last = None
            count = 0
            for raw in proc.stdout:
                if b'"type":"text_delta"' in raw:
                    now = time.time()
                    first = first or now
                    last = now
                    count += 1
            proc.wait(60)
            if first is None or last is None or not api.first_byte_at:
                continue
            firsts.append((first - api.first_byte_at[-1]) * 1000)
            rates.append(count / max(last - api.first_byte_at[-1], 1e-6))
    return statistics.median(firsts), statistics.median(rates)


def bash_call_reply() -> list[bytes]:
    """One ``bash`` tool call (``echo ok``), as Anthropic streams it."""
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_0", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_0", "name": "bash", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps({"command": "echo ok"})}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)


def floor_agent(ws: Path, home: Path) -> tuple[float, float]:
    """The floor agent's launch → first request and tool result → next request (medians, ms),
    for a session of one bash call; it must end with the reply's text, as cox's runs do."""
    firsts, trips = [], []
    with Loopback() as api:
        for _ in range(RUNS):
            api.add(Reply(bash_call_reply()))
            api.add(Reply(anthropic_text(["done"])))
            t0 = time.time()
            out = subprocess.run([sys.executable, "-c", FLOOR_AGENT, "run echo ok"], cwd=ws,
                                 env=env_for("anthropic", api, home), capture_output=True, check=False, timeout=60)
            if out.returncode != 0 or "done" not in out.stdout.decode():
                raise SystemExit(f"the floor agent failed: {out.stderr.decode()[-2000:]}")
            first, second = api.requests[-2:]
            if second["json"]["messages"][-1]["content"][0]["content"] != "ok\n":
                raise SystemExit("the floor agent sent no bash result")
            firsts.append((first["at"] - t0) * 1000)
            trips.append((second["at"] - api.first_byte_at[-2]) * 1000)
    return statistics.median(firsts), statistics.median(trips)


def cache_layout(ws: Path, home: Path) -> None:
    """Ten requests of one Anthropic session (read → result → …): size and cache marks of #2 and #10."""
    def tool_reply(i: int) -> list[bytes]:
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": {
                "id": f"m{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps({"path": "a.txt"}) if i % 2 else
                json.dumps({"path": "a.txt", "offset": i})}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        return sse(events)

    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(50)))
    with Loopback() as api:
        for i in range(1, 10):
            api.add(Reply(tool_reply(i)))
        api.add(Reply(anthropic_text(["done"])))
        subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "read a.txt ten times",
                        "--permission-mode", "bypassPermissions"], cwd=ws, env=env_for("anthropic", api, home),
                       capture_output=True, check=False, timeout=120)
        for n in (2, 10):
            if len(api.requests) < n:
                print(f"request #{n}: not sent ({len(api.requests)} requests)")
                continue
            body = api.requests[n - 1]["json"]
            size = len(json.dumps(body, separators=(",", ":")).encode())
            marks = []
            for i, block in enumerate(body.get("system", [])):
                if "cache_control" in block:
                    marks.append(f"system[{i}]")
            for mi, msg in enumerate(body.get("messages", [])):
                content = msg.get("content")
                if isinstance(content, list):
                    for bi, block in enumerate(content):
                        if isinstance(block, dict) and "cache_control" in block:
                            marks.append(f"messages[{mi}].content[{bi}]")
            print(f"request #{n}: {size:,} bytes, {len(body.get('messages', []))} messages, cache marks at "
                  f"{', '.join(marks) or 'none'}")


def bounded_waits(ws: Path, home: Path) -> None:
    """How long `cox run` takes to give up on a 429 asking for an hour, and on a stream that only
    pings (idle timeout 1 s, request bound 3 s: the worst case is known in advance)."""
    rate_limited = Reply([b'{"error": {"type": "rate_limit_error", "message": "slow down"}}'], status=429,
                         headers={"content-type": "application/json", "retry-after": "3600"})
    pings = Reply([b'event: ping\ndata: {"type": "ping"}\n\n'] * 100_000, pause_s=0.02)
    cases = [("429 retry-after: 3600", rate_limited, {}),
             ("ping-only stream", pings, {"COX_PROVIDER_STREAM_IDLE_TIMEOUT_S": "1",
                                          "COX_PROVIDER_REQUEST_TIMEOUT_S": "3"})]
    for label, reply, extra in cases:
        with Loopback() as api:
            for _ in range(5):
                api.add(reply)
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "x"], cwd=ws,
                                 env={**env_for("anthropic", api, home), **extra}, capture_output=True, check=False,
                                 timeout=120)
            took = time.perf_counter() - t0
        print(f"{label:<22} exit {out.returncode} after {took:.2f} s, {len(api.requests)} request(s)")


def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="cox-bench-provider-"))
    home = ws / ".cox-home"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "cox")], check=False)
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        t.append((time.perf_counter() - t0) * 1000)
    print(f"floor: python -c pass {statistics.median(t):.1f} ms")
    floor_first, floor_trip = floor_agent(ws, home)
    print(f"floor agent (stdlib, {FLOOR_AGENT.count(chr(10))} lines): launch → first request {floor_first:.1f} ms · "
          f"first byte → next request after one bash call {floor_trip:.1f} ms")
    for kind in PROVIDERS:
        first = first_request(kind, ws, home)
        if kind == "anthropic":
            ratio = first / floor_first
            print(f"cox start-up: launch → first request {first:.1f} ms = {ratio:.2f}× the floor agent's "
                  f"(goal ≤ {FLOOR_GOAL:g}×)")
            floor_cpu = cpu_to_first_request(FLOOR_CPU_PROBE, ["run echo ok"], ws, home)
            cox_cpu = cpu_to_first_request(COX_CPU_PROBE, ["run", "-p", "x"], ws, home)
            print(f"cox start-up CPU: {cox_cpu:.1f} ms to the first request = {cox_cpu / floor_cpu:.2f}× the floor "
                  f"agent's {floor_cpu:.1f} ms (goal ≤ {FLOOR_GOAL:g}×)")
            floor_ir = instructions_to_first_request(FLOOR_CPU_PROBE, ["run echo ok"], ws, home)
            cox_ir = instructions_to_first_request(COX_CPU_PROBE, ["run", "-p", "x"], ws, home)
            if floor_ir is None or cox_ir is None:
                print("cox start-up instructions: valgrind is not installed, not counted")
            else:
                print(f"cox start-up instructions: {cox_ir:.0f} M to the first request = {cox_ir / floor_ir:.2f}× the "
                      f"floor agent's {floor_ir:.0f} M (valgrind; load does not move it; goal ≤ {FLOOR_GOAL:g}×)")
            if "--startup" in sys.argv[1:]:
                return
        lat, rate = streaming(kind, ws, home)
        print(f"{kind:<12} launch → first request {first:6.1f} ms (goal ≤ 150) · {DELTAS:,} deltas: "
              f"{rate:,.0f}/s to stream-json (goal ≥ 20,000) · first byte → first text_delta {lat:.1f} ms (goal ≤ 5)")
    cache_layout(ws, home)
    bounded_waits(ws, home)


if __name__ == "__main__":
    main()
