"""Background commands: a bash call that asked to run in the background hands its process to
the session, which ends every such process group when the session stops — no orphans. In the
sandbox, ending bwrap's group ends its pid namespace and all in it; an unconfined job's detached
children (``setsid``, double fork) are found by the tag in their environment."""

from __future__ import annotations

import itertools
import subprocess
import threading
from pathlib import Path

from cox.slim import dataclass


@dataclass
class Job:
    id: str
    command: str
    proc: subprocess.Popen[bytes]
    log: Path
    tag: str | None = None
    """``COX_CALL_TAG`` of an unconfined job (None in the sandbox, where the namespace ends all)."""
    planted: tuple[str, ...] = ()
    """Files the job must not leave behind (``SandboxPolicy.must_not_appear``), removed at stop."""


class Jobs:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)

    def add(self, command: str, proc: subprocess.Popen[bytes], log: Path, *, tag: str | None = None,
            planted: tuple[str, ...] = ()) -> Job:
        with self._lock:
            job = Job(f"job{next(self._ids)}", command, proc, log, tag, planted)
            self._jobs[job.id] = job
            return job

    def running(self) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if j.proc.poll() is None]

    def stop_all(self) -> int:
        """End every job's process group and wait for it. Returns how many were running."""
        from cox.policy.sandbox import remove_planted

        from .bash import kill_group, kill_tagged
        from .reaper import REAPER

        with self._lock:
            jobs = list(self._jobs.values())
            self._jobs.clear()
        running = 0
        for job in jobs:
            if job.proc.poll() is None:
                running += 1
            kill_group(job.proc.pid)  # also what the job left in its group after it exited
            try:
                job.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                job.proc.kill()
                job.proc.wait()
            if job.tag is not None:
                kill_tagged(job.tag)
                REAPER.unwatch(job.proc.pid)
            remove_planted(job.planted)
        return running
