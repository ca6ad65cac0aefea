"""The shell sandbox: how a command line is wrapped so it can only write where the session may.

Pure: this module builds the argv; running it (and probing whether bubblewrap works on this
machine) happens in the tools. On Linux the wrapper is bubblewrap:

- the whole file system read-only (``--ro-bind / /``), a fresh ``/dev`` and ``/proc``;
- ``workspace-write``: the workspace roots, extra writable roots and ``/tmp`` bound writable;
  ``read-only``: nothing writable but a private ``/tmp``;
- ``--unshare-net`` unless the network is allowed, ``--unshare-pid`` so the sandbox's processes
  die together, ``--die-with-parent``. No ``--new-session``: the caller already starts bwrap in
  a session of its own with no terminal (``start_new_session``), and keeping the sandbox in
  bwrap's process group is what lets one ``killpg`` end all of it — with ``--new-session`` the
  inner process leads a group of its own and can outlive an interrupt;
- ``danger-full-access``: no wrapper at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cox.protocol.types import SandboxMode


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    mode: SandboxMode
    writable_roots: tuple[Path, ...] = ()
    network: bool = False


def bwrap_argv(policy: SandboxPolicy, argv: Sequence[str], *, cwd: Path, bwrap: str = "bwrap") -> list[str]:
    """``argv`` wrapped in bubblewrap under ``policy`` (``argv`` itself for danger-full-access)."""
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return list(argv)
    out = [bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/",
           "--dev", "/dev", "--proc", "/proc"]
    if policy.mode is SandboxMode.WORKSPACE_WRITE:
        out += ["--bind", "/tmp", "/tmp"]
        seen: set[str] = set()
        for root in policy.writable_roots:
            path = str(root)
            if path not in seen and path != "/":
                seen.add(path)
                out += ["--bind", path, path]
    else:
        out += ["--tmpfs", "/tmp"]
    if not policy.network:
        out.append("--unshare-net")
    out += ["--chdir", str(cwd), "--", *argv]
    return out
