"""``get_logger``: a structlog logger that is only imported when something is first logged.

structlog (with the asyncio it pulls in) costs ~20 ms to import; logging is rare (failures,
warnings), so paying for it at start-up would slow every ``cox run -p`` for nothing. The proxy
forwards to ``structlog.get_logger(name)`` on first use; ``cox.surfaces.logs.setup`` configures
where it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_configure: list[Callable[[], None]] = []


def on_first_use(configure: Callable[[], None]) -> None:
    """Run ``configure`` right after structlog is first imported (or now, if it already was)."""
    import sys

    if "structlog" in sys.modules and _configured:
        configure()
    else:
        _configure[:] = [configure]


_configured = False


class LazyLogger:
    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            global _configured
            import structlog

            if not _configured:
                _configured = True
                for configure in _configure:
                    configure()
            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, method)


def get_logger(name: str) -> LazyLogger:
    return LazyLogger(name)
