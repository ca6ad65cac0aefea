"""When a file's pushed diagnostics count as complete (pure: no threads, no I/O; times are given).

A server that only pushes (``textDocument/publishDiagnostics``) never says "done": it may push an
early, partial report and a fuller one later, and one that reports progress (``$/progress``
``begin`` … ``end``) may still be analysing. So a report counts as settled once a push for the
file arrived after cox synced the text it asks about, ``quiet_s`` passed with no newer push for
it, and no progress work is open. (A server that advertises ``diagnosticProvider`` is asked
instead, and none of this applies.)
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from cox.slim import dataclass

__all__ = ["FileReport", "Settle"]


@dataclass
class FileReport:
    """The last diagnostics a server pushed for one file, and when."""

    diagnostics: list[Any] = field(default_factory=list)
    at: float = 0.0
    version: int | None = None


@dataclass
class Settle:
    """The push state of one server: reports by URI and the progress tokens still open."""

    reports: dict[str, FileReport] = field(default_factory=dict)
    open_work: set[str] = field(default_factory=set)
    last_progress: float = 0.0

    def pushed(self, uri: str, diagnostics: list[Any], version: int | None, now: float) -> None:
        self.reports[uri] = FileReport(list(diagnostics), now, version)

    def progress(self, token: Any, kind: str, now: float) -> None:
        key = str(token)
        if kind == "begin":
            self.open_work.add(key)
        elif kind == "end":
            self.open_work.discard(key)
        self.last_progress = now

    def settled(self, uri: str, synced_at: float, version: int, now: float, quiet_s: float) -> bool:
        """Whether the report for ``uri`` answers the text synced at ``synced_at`` (as ``version``)."""
        report = self.reports.get(uri)
        if report is None or self.open_work:
            return False
        if report.version is not None and report.version < version:
            return False  # a report for an older text
        if report.version is None and report.at < synced_at:
            return False
        return now - max(report.at, self.last_progress) >= quiet_s

    def wait_left(self, uri: str, now: float, quiet_s: float) -> float:
        """How long to wait before asking :meth:`settled` again (a bound, never zero)."""
        report = self.reports.get(uri)
        if report is None or self.open_work:
            return 0.05
        return max(0.005, quiet_s - (now - max(report.at, self.last_progress)))
