"""A workspace, a home and a cox home for `cox run` with real command hooks (shell scripts).

Hooks are configured the way a person would: cox's ``[hooks]`` in ``$COX_HOME/config.toml``,
Claude Code's ``$CLAUDE_CONFIG_DIR/settings.json``, or a project's files. Scripts live in
``tmp/hooks`` (named by absolute path, so the sandbox shows them); what a hook observes it writes
under ``ws/out`` (the workspace is the one place the sandbox lets it write).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def toml_hooks(hooks: dict[str, list[dict[str, Any]]], extra: str = "") -> str:
    """Claude Code's hooks object as cox's ``[hooks]`` TOML (arrays of tables)."""
    out = ["[hooks]", extra] if extra else []
    for event, groups in hooks.items():
        for group in groups:
            out.append(f"[[hooks.{event}]]")
            if "matcher" in group:
                out.append(f"matcher = {json.dumps(group['matcher'])}")
            for hook in group["hooks"]:
                out.append(f"[[hooks.{event}.hooks]]")
                out += [f"{k} = {json.dumps(v)}" for k, v in hook.items()]
    return "\n".join(out) + "\n"


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def result(self) -> dict[str, Any]:
        return self.events[-1]

    def warnings(self) -> list[str]:
        return [e["message"] for e in self.of("notice") if e["level"] == "warning"]

    def request_text(self, n: int = -1) -> str:
        """Everything request ``n`` sent as messages, as one string."""
        return json.dumps(self.requests[n]["messages"]) if self.requests else ""


class Rig:
    def __init__(self, tmp_path: Path, cox_home: Path) -> None:
        self.tmp = tmp_path
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        (self.ws / "a.txt").write_text("alpha\n")
        self.out = self.ws / "out"
        self.out.mkdir()
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.cox_home = cox_home
        cox_home.mkdir(exist_ok=True)
        self.claude_dir = tmp_path / "claude-home"  # CLAUDE_CONFIG_DIR (tests/conftest.py)
        self.bin = tmp_path / "hooks"
        self.bin.mkdir()
        self.dump = tmp_path / "dump.json"

    def script(self, name: str, body: str) -> str:
        """An executable bash script; its absolute path (a hook's ``command``)."""
        path = self.bin / name
        path.write_text("#!/bin/bash\n" + body + "\n")
        path.chmod(0o755)
        return str(path)

    def hooks(self, hooks: dict[str, list[dict[str, Any]]], extra: str = "") -> None:
        (self.cox_home / "config.toml").write_text(toml_hooks(hooks, extra))

    def claude_settings(self, settings: dict[str, Any]) -> None:
        self.claude_dir.mkdir(exist_ok=True)
        (self.claude_dir / "settings.json").write_text(json.dumps(settings, indent=2))

    def env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.home), "COX_HOME": str(self.cox_home),
                "CLAUDE_CONFIG_DIR": str(self.claude_dir), "COX_SCRIPTED_DUMP": str(self.dump),
                "PYTHONPATH": str(REPO)}

    def cox(self, *args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=self.ws, env=self.env(),
                              input=input, capture_output=True, text=True, timeout=timeout)

    def run(self, replies: list[dict[str, Any]], prompt: str = "go", *args: str, stdin: str | None = None,
            mode: str = "bypassPermissions") -> Run:
        """`cox run` on the scripted model; by default nothing asks, so only a hook stops a call."""
        script = self.tmp / "script.json"
        script.write_text(json.dumps({"model": "scripted", "replies": replies}))
        self.dump.unlink(missing_ok=True)
        how = ["--input-format", "stream-json"] if stdin is not None else ["-p", prompt]
        proc = self.cox("run", "--script", str(script), *how, "--approve", "never", "--output-format",
                        "stream-json", "--permission-mode", mode, *args, input=stdin)
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        assert events and events[-1]["type"] == "result", proc.stderr
        requests = json.loads(self.dump.read_text()) if self.dump.exists() else []
        return Run(proc, events, requests)

    def seen(self, name: str) -> list[dict[str, Any]]:
        """The JSON inputs a logging hook appended to ``out/name.jsonl``, in order."""
        path = self.out / f"{name}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def logger(self, name: str, then: str = "exit 0") -> str:
        """A hook that appends its stdin (one JSON line) to ``out/name.jsonl``, then runs ``then``."""
        return self.script(f"log-{name}.sh", f"jq -c . >> {self.out}/{name}.jsonl\n{then}")


def bash(command: str, call_id: str = "b1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "bash", "input": {"command": command}}]}


def read(path: str, call_id: str = "r1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "read", "input": {"path": path}}]}


def one(command: str, matcher: str | None = None, **extra: Any) -> list[dict[str, Any]]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        group["matcher"] = matcher
    return [group]


class Live:
    """A `cox run --input-format stream-json` being talked to: send submissions, read events."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.events: list[dict[str, Any]] = []

    def send(self, submission: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(submission) + "\n")
        self.proc.stdin.flush()

    def until(self, kind: str, timeout: float = 60) -> dict[str, Any]:
        """Read events until one of ``kind`` (bounded only so that a hang fails)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            assert line, f"cox ended before a {kind} event"
            event: dict[str, Any] = json.loads(line)
            self.events.append(event)
            if event["type"] == kind:
                return event
        raise AssertionError(f"no {kind} event within {timeout} s")

    def finish(self, code: int = 0) -> str:
        out, err = self.proc.communicate(timeout=60)
        self.events += [json.loads(line) for line in out.splitlines() if line.strip()]
        assert self.proc.returncode == code, err
        return err


def start(rig: Rig, replies: list[dict[str, Any]], *args: str) -> Live:
    script = rig.tmp / "script.json"
    script.write_text(json.dumps({"model": "scripted", "replies": replies}))
    return Live(subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script),
                                  "--input-format", "stream-json", "--output-format", "stream-json", *args],
                                 cwd=rig.ws, env=rig.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True))
