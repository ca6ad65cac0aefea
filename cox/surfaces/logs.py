"""Logging: JSON lines to ``$COX_HOME/logs/cox.log`` (rotating), never to the terminal unless
``--verbose`` — a coding agent's UI and a script's stdout are not log sinks.

cox's own modules log through structlog (``cox.log.get_logger``), rendered as JSON; records
from libraries (pykka, the SDKs) use stdlib logging and are wrapped into the same JSON shape by
the file handler's formatter. structlog is configured here but imported only when the first
cox log line is written, so start-up does not pay for it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from cox import log as cox_log


class JsonLines(logging.Formatter):
    """structlog's records are JSON already; anything else is wrapped into the same shape."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if message.startswith("{") and message.endswith("}"):
            return message
        import datetime  # here: most runs never log a library's record

        data = {
            "timestamp": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": message,
        }
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False)


class Readable(logging.Formatter):
    """``--verbose`` lines on stderr: ``cox: <where>: <what>``; a structlog record's JSON becomes
    ``event key=value …``; secret shapes are redacted (the stream itself drops escapes)."""

    def format(self, record: logging.LogRecord) -> str:
        from cox.policy.redact import scrub

        message = record.getMessage()
        if message.startswith("{") and message.endswith("}"):
            try:
                data = json.loads(message)
            except ValueError:
                data = None
            if isinstance(data, dict):
                rest = {k: v for k, v in data.items() if k not in ("event", "timestamp", "level", "logger")}
                message = " ".join([str(data.get("event", "")), *(f"{k}={v}" for k, v in rest.items())])
        where = record.name.removeprefix("cox.")
        text = f"cox: {where}: {message}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return scrub(text)[0]


class RotatingFile(logging.FileHandler):
    """``logging.handlers.RotatingFileHandler``'s rotation (``cox.log`` → ``cox.log.1`` … ``.N``
    once the file would pass ``max_bytes``) on a plain ``FileHandler``: ``logging.handlers``
    imports pickle, socket and queue, and every ``cox run`` sets this up before its first request."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self.max_bytes = max_bytes
        self.backups = backups

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._full(record):
                self._rotate()
        except Exception:
            self.handleError(record)
            return
        super().emit(record)

    def _full(self, record: logging.LogRecord) -> bool:
        if not os.path.isfile(self.baseFilename):  # not there yet, or not a file (a pipe, /dev/null)
            return False
        if self.stream is None:
            self.stream = self._open()
        self.stream.seek(0, os.SEEK_END)
        return bool(self.stream.tell() + len(self.format(record)) + 1 >= self.max_bytes)

    def _rotate(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None  # FileHandler reopens it on the next emit
        for i in range(self.backups - 1, 0, -1):
            older = f"{self.baseFilename}.{i}"
            if os.path.exists(older):
                os.replace(older, f"{self.baseFilename}.{i + 1}")
        os.replace(self.baseFilename, f"{self.baseFilename}.1")


def _no_actor_lifecycle(record: logging.LogRecord) -> bool:
    """pykka's per-actor start/stop lines (several per tool call) stay in the log file only."""
    return not (record.name.startswith("pykka") and record.levelno < logging.INFO)


def _configure_structlog() -> None:
    import structlog

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


def setup(log_dir: Path, *, verbose: bool = False, level: str = "info") -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_cox", False):
            root.removeHandler(h)
            h.close()
    log_dir.mkdir(parents=True, exist_ok=True)
    file_handler = RotatingFile(log_dir / "cox.log", max_bytes=5 * 1024 * 1024, backups=3)
    file_handler._cox = True  # type: ignore[attr-defined]
    file_handler.setFormatter(JsonLines())
    root.addHandler(file_handler)
    if verbose:
        err = logging.StreamHandler(sys.stderr)
        err._cox = True  # type: ignore[attr-defined]
        err.setFormatter(Readable())
        err.addFilter(_no_actor_lifecycle)
        root.addHandler(err)
    root.setLevel(logging.DEBUG if verbose else getattr(logging, level.upper(), logging.INFO))
    cox_log.on_first_use(_configure_structlog)
