"""Logging: structlog as JSON lines to ``$COX_HOME/logs/cox.log`` (rotating), never to the
terminal unless ``--verbose`` — a coding agent's UI and a script's stdout are not log sinks."""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path

import structlog

_configured = False


def setup(log_dir: Path, *, verbose: bool = False, level: str = "info") -> None:
    global _configured
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_cox", False):
            root.removeHandler(h)
            h.close()
    log_dir.mkdir(parents=True, exist_ok=True)
    file_handler = logging.handlers.RotatingFileHandler(
        log_dir / "cox.log", maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8", delay=True)
    file_handler._cox = True  # type: ignore[attr-defined]
    file_handler.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(file_handler)
    if verbose:
        err = logging.StreamHandler(sys.stderr)
        err._cox = True  # type: ignore[attr-defined]
        err.setFormatter(logging.Formatter("cox: %(message)s"))
        root.addHandler(err)
    root.setLevel(getattr(logging, level.upper(), logging.INFO) if not verbose else logging.DEBUG)
    if not _configured:
        structlog.configure(
            processors=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
            cache_logger_on_first_use=True,
        )
        _configured = True
