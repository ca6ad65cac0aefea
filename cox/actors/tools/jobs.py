"""Background commands: a bash call that asked to run in the background hands its process to
the session, which ends every such process group when the session stops — no orphans."""

from __future__ import annotations

import itertools
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Job:
    id: str
    command: str
    proc: subprocess.Popen[bytes]
    log: Path


class Jobs:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)

    def add(self, command: str, proc: subprocess.Popen[bytes], log: Path) -> Job:
        with self._lock:
            job = Job(f"job{next(self._ids)}", command, proc, log)
            self._jobs[job.id] = job
            return job

    def running(self) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if j.proc.poll() is None]

    def stop_all(self) -> int:
        """End every job's process group and wait for it. Returns how many were running."""
        from .bash import kill_group

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
        return running
