"""``--verbose`` shows what happens, not only actors starting: each model request with its size
and time, each permission decision with its reason, each tool call's status and duration — on
stderr, scrubbed, with stdout still the answer alone; without the flag none of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SK = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def run(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [
        {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": f"echo {SK}"}}]},
        {"tool_calls": [{"id": "b2", "name": "bash", "input": {"command": "rm -rf build"}}]},
        {"text": "done"}]}))
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", *flags, "--script", str(script),
                           "-p", "go", "--cwd", str(ws)], env={**os.environ}, capture_output=True, text=True,
                          timeout=60)


def test_verbose_shows_requests_decisions_and_timings(tmp_path: Path, cox_home: Path) -> None:
    p = run(tmp_path, "--verbose")
    assert p.returncode == 2, p.stderr  # the rm was denied
    assert p.stdout == "done\n"
    err = p.stderr
    for n in (1, 2, 3):
        assert f"cox: trace: model request #{n} to scripted: " in err
    assert " tokens in, " in err and " ms, $0.0000" in err
    assert "cox: session.permission: permission allow for bash echo «redacted»: every command is read-only (" in err
    assert "cox: session.permission: permission deny for bash rm -rf build: it needs approval" in err
    assert "cox: trace: tool call b1 done: bash echo «redacted», ok in " in err
    assert "cox: trace: tool call b2 done: bash rm -rf build, denied (did not run)" in err
    assert "pykka" not in err and SK not in err  # actor start/stop lines stay in the log file
    log = (cox_home / "logs" / "cox.log").read_text()
    assert "permission allow" in log and SK not in log


def test_without_verbose_none_of_it(tmp_path: Path, cox_home: Path) -> None:
    p = run(tmp_path)
    assert p.returncode == 2 and p.stdout == "done\n"
    assert "trace" not in p.stderr and "permission allow" not in p.stderr and "pykka" not in p.stderr
    log = cox_home / "logs" / "cox.log"
    assert not log.exists() or "permission allow" not in log.read_text()


def test_verbose_lines_are_readable_and_scrubbed(tmp_path: Path, monkeypatch) -> None:
    import io
    import logging

    from cox.log import get_logger
    from cox.surfaces import logs

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    logs.setup(tmp_path, verbose=True)
    try:
        get_logger("cox.test").warning("something odd", detail=42, key=SK)
        logging.getLogger("pykka").debug("Starting SessionActor (urn:uuid:x)")
        logging.getLogger("pykka").warning("an actor died")
    finally:
        for h in list(logging.getLogger().handlers):
            if getattr(h, "_cox", False):
                logging.getLogger().removeHandler(h)
                h.close()
        logging.getLogger().setLevel(logging.WARNING)
    lines = err.getvalue().splitlines()
    assert lines == ["cox: test: something odd detail=42 key=«redacted»", "cox: pykka: an actor died"]
