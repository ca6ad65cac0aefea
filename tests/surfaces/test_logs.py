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


def test_the_log_rotates_at_its_size_keeping_three_old_files(tmp_path: Path):
    handler = logs.RotatingFile(tmp_path / "cox.log", max_bytes=1000, backups=3)
    handler.setFormatter(logs.JsonLines())
    logger = logging.getLogger("cox.test.rotation")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(200):
            logger.warning("line %d %s", i, "x" * 40)
    finally:
        logger.removeHandler(handler)
        handler.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["cox.log", "cox.log.1", "cox.log.2", "cox.log.3"]
    assert all((tmp_path / name).stat().st_size < 1000 for name in files)
    last = [json.loads(x)["event"] for x in (tmp_path / "cox.log").read_text().splitlines()][-1]
    assert last.startswith("line 199 ")
    older = [json.loads(x)["event"] for x in (tmp_path / "cox.log.1").read_text().splitlines()]
    assert int(older[-1].split()[1]) + 1 == int(
        [json.loads(x)["event"] for x in (tmp_path / "cox.log").read_text().splitlines()][0].split()[1])
