"""How fast the permission engine decides: it must never show in a turn's latency.

Prints (never asserts):
- decisions per second over 1,000 distinct, realistic bash lines (compound lines, pipelines,
  wrappers, assignments, opaque lines), each classified and decided as a session would: cold
  (every line parsed for the first time) and warm (the split cache holds the line);
- the p99 time of one ``decide`` on a 2 KB compound line, cold (parse included) and warm;
- what redaction and sanitising cost per streamed delta.

Goals (issue 3): >= 5,000 decisions/s and p99 <= 2 ms on the 2-core machine.
Run: ``.venv/bin/python bench/policy.py``
"""

from __future__ import annotations

import random
import statistics
import time

from cox.policy import bash as bash_mod
from cox.policy.bash import classify
from cox.policy.permission import Engine
from cox.policy.redact import scrub
from cox.policy.sanitize import sanitize
from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode, ToolCall

COMMANDS = [
    "git status", "git diff --stat", "git log --oneline -20", "git add -A", "git commit -m 'fix: {w}'",
    "git push origin {w}", "git checkout -b {w}", "npm test", "npm run build", "npm install {w}",
    "cargo test --workspace", "cargo build --release", "cargo clippy -- -D warnings", "pytest -q tests/{w}",
    "python -m pytest -x", "make -j4", "make install", "ls -la src/{w}", "cat README.md", "head -n 50 src/{w}.py",
    "tail -f log/{w}.log", "grep -rn '{w}' src", "rg --type py {w}", "find . -name '*.{w}'", "wc -l src/*.py",
    "sort | uniq -c", "sed -i 's/{w}/x/' f", "rm -rf build/{w}", "mkdir -p out/{w}", "cp a.txt {w}.txt",
    "docker build -t {w} .", "curl -s https://example.com/{w}", "jq '.{w}' data.json", "echo {w}",
    "cd {w}", "pip install -e .", "uv run pytest", "go test ./...", "go build ./cmd/{w}", "tsc --noEmit",
]
WRAPPERS = ["{c}", "{c}", "{c}", "nohup {c}", "timeout 30 {c}", "time {c}", "LC_ALL=C {c}", "FOO={w} {c}",
            "sudo {c}", "env X=1 {c}", "( {c} )", "{c} 2>&1", "{c} > /dev/null", "{c} > out/{w}.txt",
            "echo $({c})", "sh -c '{c}'", "xargs {c}"]
SEPARATORS = [" && ", " || ", "; ", " | ", " & ", "\n"]
WORDS = ["main", "feature", "utils", "api", "core", "parser", "cli", "tests", "docs", "server", "client"]


def realistic_lines(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        parts = []
        for _ in range(rnd.choice([1, 1, 1, 2, 2, 3, 4])):
            w = rnd.choice(WORDS) + str(rnd.randint(0, 999))
            c = rnd.choice(COMMANDS).format(w=w)
            parts.append(rnd.choice(WRAPPERS).format(c=c, w=w))
        line = parts[0] + "".join(rnd.choice(SEPARATORS) + p for p in parts[1:])
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out


def compound_line(size: int = 2048) -> str:
    rnd = random.Random(3)
    line = ""
    while len(line) < size:
        w = rnd.choice(WORDS)
        line += (" && " if line else "") + rnd.choice(WRAPPERS[:8]).format(c=rnd.choice(COMMANDS).format(w=w), w=w)
    return line[:size].rsplit(" && ", 1)[0]


def engine() -> Engine:
    return Engine.compile(
        ["Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(npm test:*)", "Bash(npm run build:*)",
         "Bash(cargo test:*)", "Bash(cargo build:*)", "Bash(pytest:*)", "Bash(make:*)", "Bash(go test:*)",
         "Read", "WebFetch(domain:docs.rs)"],
        ["Bash(git push:*)", "Bash(git commit:*)", "Bash(docker:*)"],
        ["Bash(rm -rf /:*)", "Bash(curl:*)", "Bash(sudo:*)", "Edit(secrets/**)", "Read(./.env)"],
        home="/home/alice", roots=["/repo"])


def bash_call(line: str) -> ToolCall:
    c = classify(line)
    return ToolCall(id="b", name="bash", input={"command": line}, risk=c.risk, subject=line,
                    segments=list(c.segments), opaque=c.opaque)


def decide_all(e: Engine, lines: list[str], grants: list[str]) -> float:
    start = time.perf_counter()
    for line in lines:
        e.decide(bash_call(line), PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE,
                 grants)
    return time.perf_counter() - start


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98]


def main() -> None:
    e = engine()
    lines = realistic_lines(1000)
    grants = ["npm install utils1", "make install", "ls -la src/api", "pip install -e ."]
    e.decide(bash_call("git status"))  # build the parser once, outside the figures
    kinds: dict[str, int] = {}
    for line in lines[:1000]:
        k = e.decide(bash_call(line), grants=grants).kind
        kinds[k] = kinds.get(k, 0) + 1
    bash_mod.clear_cache()
    cold = decide_all(e, lines, grants)
    warm = min(decide_all(e, lines, grants) for _ in range(3))
    print(f"bash lines: {len(lines)} distinct, mean {statistics.mean(map(len, lines)):.0f} chars, "
          f"decisions {kinds}")
    print(f"decisions/s, cold (classify + decide, every line parsed): {len(lines) / cold:,.0f}")
    print(f"decisions/s, warm (split cache hit):                      {len(lines) / warm:,.0f}")

    line = compound_line()
    n_cmds = len(bash_mod.split(line).commands)
    cold_t: list[float] = []
    warm_t: list[float] = []
    for _ in range(300):
        bash_mod.clear_cache()
        t0 = time.perf_counter()
        c = bash_call(line)
        e.decide(c, PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE, grants)
        cold_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        e.decide(c, PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE, grants)
        warm_t.append(time.perf_counter() - t0)
    print(f"2 KB compound line ({len(line)} chars, {n_cmds} commands): p99 one decide, cold "
          f"{p99(cold_t) * 1e3:.2f} ms (median {statistics.median(cold_t) * 1e3:.2f}), warm "
          f"{p99(warm_t) * 1e3:.3f} ms")
    print("goals: >= 5,000 decisions/s, p99 <= 2 ms")

    delta = "Here is the change to `parser.py`; it now handles the empty case and the tests pass. "
    secret = delta + "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    colored = "\x1b[32mok\x1b[0m " + delta
    for label, fn, text in (("scrub, plain delta", scrub, delta), ("scrub, delta with a secret", scrub, secret),
                            ("sanitize, plain delta", sanitize, delta), ("sanitize, ANSI delta", sanitize, colored)):
        n = 100_000
        t0 = time.perf_counter()
        for _ in range(n):
            fn(text)
        print(f"{label:28} {(time.perf_counter() - t0) / n * 1e6:.2f} us per {len(text)}-char delta")


if __name__ == "__main__":
    main()
