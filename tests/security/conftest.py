"""The attacker's bench: run a real ``cox run`` with a hostile script, as root and as an
unprivileged user, with and without bubblewrap on PATH.

Every test here is an attack: a scripted model asks for something the guards must stop, and the
test checks the effect (a marker file that must not appear, a secret that must not reach the
output), not only the decision. The ``attack`` fixture is parametrised over the identities and
sandboxes this machine offers, so each attack is tried in each of them:

- ``root`` / ``user``: the suite's own user, or the unprivileged test user the set-up creates
  (``coxtest``; ``COX_TEST_USER`` names another) through ``setpriv``;
- ``bwrap`` / ``nobwrap``: PATH as it is, or PATH with every entry but ``bwrap`` (a shadow folder
  of links), which is how a machine without bubblewrap looks to cox.

A combination this machine cannot offer is skipped with the reason (not root, no test user, no
bubblewrap installed). Workspaces and homes live in a fresh folder under ``/tmp`` owned by the
identity that runs cox, so the unprivileged user can use them and the real home is never touched.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import cox

TEST_USER = os.environ.get("COX_TEST_USER", "coxtest")
IDENTITIES = ("root", "user")
SANDBOXES = ("bwrap", "nobwrap")


def _test_user() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        return None


@pytest.fixture(scope="session")
def path_without_bwrap() -> Iterator[str]:
    """A PATH that finds every program of the current PATH except ``bwrap``."""
    shadow = Path(tempfile.mkdtemp(prefix="cox-nobwrap-", dir="/tmp"))
    os.chmod(shadow, 0o755)
    out: list[str] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        d = Path(entry)
        if not (d / "bwrap").exists():
            out.append(entry)
            continue
        sub = shadow / str(len(out))
        sub.mkdir()
        os.chmod(sub, 0o755)
        for item in d.iterdir():
            if item.name != "bwrap":
                (sub / item.name).symlink_to(item)
        out.append(str(sub))
    yield os.pathsep.join(out)
    shutil.rmtree(shadow, ignore_errors=True)


@dataclass
class Outcome:
    """What one attack run left: the process result, its stream-json lines and its folders."""

    proc: subprocess.CompletedProcess[str]
    workspace: Path
    home: Path
    cox_home: Path
    lines: list[dict[str, Any]] = field(default_factory=list)

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.lines if e.get("type") == kind]

    def results(self) -> list[dict[str, Any]]:
        """The ``result`` of every tool call, in order."""
        return [e["result"] for e in self.events("tool_call_done")]

    @property
    def result(self) -> dict[str, Any]:
        assert self.lines and self.lines[-1].get("type") == "result", self.proc.stdout[-2000:] + self.proc.stderr
        return self.lines[-1]


@dataclass
class Attack:
    """Runs ``cox run`` with a scripted model in a fresh workspace as one identity, one sandbox."""

    identity: str
    sandbox: str
    base: Path
    env_path: str
    uid: int | None
    gid: int | None

    @property
    def workspace(self) -> Path:
        return self.base / "ws"

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def cox_home(self) -> Path:
        return self.base / "home" / ".cox"

    def file(self, rel: str, text: str = "", *, root: Path | None = None) -> Path:
        """Create ``rel`` (under the workspace unless ``root`` is given) owned by the runner."""
        path = (root or self.workspace) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.own(self.base)
        return path

    def own(self, path: Path) -> None:
        """Hand ``path`` (recursively) to the identity that runs cox."""
        if self.uid is None:
            return
        for dirpath, dirnames, filenames in os.walk(path):
            os.lchown(dirpath, self.uid, self.gid or self.uid)
            for name in dirnames + filenames:
                os.lchown(os.path.join(dirpath, name), self.uid, self.gid or self.uid)

    def command(self, replies: list[dict[str, Any]], *, args: tuple[str, ...] = (), config: str | None = None,
                env: dict[str, str] | None = None, prompt: str | None = "go",
                output_format: str = "stream-json") -> tuple[list[str], dict[str, str]]:
        """The argv and environment of ``run`` (for a test that starts the process itself)."""
        script = self.base / "script.json"
        script.write_text(json.dumps({"model": "scripted", "replies": replies}))
        if config is not None:
            self.cox_home.mkdir(parents=True, exist_ok=True)
            (self.cox_home / "config.toml").write_text(config)
        self.own(self.base)
        child_env = {k: v for k, v in os.environ.items() if not k.startswith(("COX_", "PYTEST_"))}
        child_env.update({"HOME": str(self.home), "COX_HOME": str(self.cox_home), "PATH": self.env_path,
                          "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),  # ~/.claude of this home
                          "PYTHONPATH": str(Path(cox.__file__).resolve().parents[1]),
                          **(env or {})})
        argv = [sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script),
                *(("-p", prompt) if prompt is not None else ()),
                "--approve", "never", "--output-format", output_format, *args]
        if self.uid is not None:
            argv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]
        return argv, child_env

    def run(self, replies: list[dict[str, Any]], *, args: tuple[str, ...] = (), config: str | None = None,
            env: dict[str, str] | None = None, prompt: str | None = "go", timeout: float = 90,
            output_format: str = "stream-json", stdin: str | None = None) -> Outcome:
        """One ``cox run --approve never --output-format stream-json`` with ``replies`` as the model.
        ``config`` is written to ``$COX_HOME/config.toml``; ``env`` adds variables. With
        ``output_format="text"`` stdout is left unparsed (``lines`` stays empty). ``stdin`` is
        fed to cox (Submissions, with ``--input-format stream-json`` in ``args``; ``prompt``
        None leaves ``-p`` out)."""
        argv, child_env = self.command(replies, args=args, config=config, env=env, prompt=prompt,
                                       output_format=output_format)
        proc = subprocess.run(argv, cwd=self.workspace, env=child_env, capture_output=True, text=True,
                              timeout=timeout, **({"input": stdin} if stdin is not None else
                                                  {"stdin": subprocess.DEVNULL}))
        lines = []
        for raw in proc.stdout.splitlines() if output_format != "text" else []:
            if raw.strip():
                lines.append(json.loads(raw))  # every stdout line must be valid JSON
        return Outcome(proc, self.workspace, self.home, self.cox_home, lines)


@pytest.fixture(params=[(i, s) for i in IDENTITIES for s in SANDBOXES], ids=lambda p: f"{p[0]}-{p[1]}")
def attack(request: pytest.FixtureRequest, path_without_bwrap: str) -> Iterator[Attack]:
    identity, sandbox = request.param
    marks = {m.name for m in request.node.iter_markers()}
    if "only_bwrap" in marks and sandbox != "bwrap":
        pytest.skip("this attack is only tried with bubblewrap (without, the command never runs)")
    if "only_nobwrap" in marks and sandbox != "nobwrap":
        pytest.skip("this attack is about a machine without bubblewrap")
    if "only_root" in marks and identity != "root":
        pytest.skip("this attack is only tried as root")
    uid = gid = None
    if identity == "root":
        if os.geteuid() != 0:
            pytest.skip("the suite is not running as root")
    else:
        if os.geteuid() == 0:
            user = _test_user()
            if user is None:
                pytest.skip(f"no test user {TEST_USER!r}: scripts/test creates it when run as root")
            uid, gid = user.pw_uid, user.pw_gid
    if sandbox == "bwrap":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap is not installed (scripts/test installs it when run as root)")
        env_path = os.environ.get("PATH", "")
    else:
        env_path = path_without_bwrap
    base = Path(tempfile.mkdtemp(prefix="cox-sec-", dir="/tmp"))
    os.chmod(base, 0o755)
    a = Attack(identity, sandbox, base, env_path, uid, gid)
    a.workspace.mkdir()
    a.home.mkdir()
    a.own(base)
    try:
        yield a
    finally:
        shutil.rmtree(base, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    for name, what in (("only_bwrap", "needs a working sandbox to mean anything"),
                       ("only_nobwrap", "is about a machine without bubblewrap"),
                       ("only_root", "is about running as root")):
        config.addinivalue_line("markers", f"{name}: the attack {what}")
