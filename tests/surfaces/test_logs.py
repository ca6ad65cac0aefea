"""Logs are JSON lines in $COX_HOME/logs/cox.log, from cox (structlog) and from libraries alike,
and never on the terminal unless --verbose."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from cox.log import get_logger
from cox.surfaces import logs


def test_structlog_and_stdlib_records_are_json_lines(tmp_path: Path):
    logs.setup(tmp_path)
    try:
        get_logger("cox.test").warning("something odd", detail=42)
        logging.getLogger("pykka").error("plain library message")
        for h in logging.getLogger().handlers:
            h.flush()
        lines = [json.loads(x) for x in (tmp_path / "cox.log").read_text().splitlines()]
    finally:
        for h in list(logging.getLogger().handlers):
            if getattr(h, "_cox", False):
                logging.getLogger().removeHandler(h)
                h.close()
    assert {"event": "something odd", "detail": 42, "logger": "cox.test", "level": "warning"}.items() <= lines[0].items()
    assert lines[1]["event"] == "plain library message" and lines[1]["logger"] == "pykka"


def test_nothing_reaches_the_terminal_without_verbose(tmp_path: Path, cox_home: Path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [{"events": [{"crash": "adapter bug"}]}]}))
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "x"],
                       cwd=tmp_path, env={**os.environ}, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and "pykka" not in p.stderr
    # text output: stdout is the answer alone (none here); the error is a status line on stderr
    assert p.stdout == "" and "cox: error: model request failed" in p.stderr and "adapter bug" in p.stderr
