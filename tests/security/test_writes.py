"""Attacks on cox's writes and on the git it runs in a hostile checkout.

1. Writes through a planted link: the repository ships ``.hello.txt.cox-tmp -> ~/.bashrc`` (the
   fixed temporary name ``write`` once used) and other temporary-name patterns, a link out of the
   workspace at the target, a folder link out of it; the model writes, edits and patches.
   ``~/.bashrc`` must keep its bytes.
2. Rewind through a planted link: files cox wrote are swapped for links to the user's files
   between the checkpoint and the rewind; the rewind must replace or remove the links, never
   write through them or delete their targets.
3. A repository's git config is code: ``core.fsmonitor``, hooks, filter and diff drivers, a pager,
   all of which touch a marker. Nothing cox does in that checkout (a session with writes and a
   bash call, so checkpoints snapshot, the glob/grep listings, ``cox doctor``, the TUI's status
   probe and file list) may create a marker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cox

SECRET = "# the user's own shell start-up file\nexport PATH=/usr/bin\n"
WRITE_MODE = ("--permission-mode", "acceptEdits")  # writes are allowed: only the links may stop them


def _home_files(attack) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The user's files outside the workspace, which every attack here aims at."""
    files = {".bashrc": SECRET, ".profile": "profile\n", "c.txt": "the user's c\n"}
    for name, text in files.items():
        attack.file(name, text, root=attack.home)
    return files


def _unchanged(attack, files: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    for name, text in files.items():
        path = attack.home / name
        assert path.is_file() and not path.is_symlink(), f"~/{name} was replaced or removed"
        assert path.read_text() == text, f"~/{name} was written through a link"


def _link(attack, rel: str, target: Path) -> Path:  # type: ignore[no-untyped-def]
    path = attack.workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        path.unlink()
    path.symlink_to(target)
    attack.own(attack.base)
    return path


# -- 1. writes through planted links ---------------------------------------------------------------

TEMP_NAMES = (".hello.txt.cox-tmp", ".hello.txt.tmp", ".hello.txt.cox-new", ".hello.txt.cox-old",
              ".hello.txt.cox-rewind", f".hello.txt.cox-rewind-{os.getpid()}")


def test_links_at_temporary_names_do_not_redirect_write_edit_or_patch(attack) -> None:  # type: ignore[no-untyped-def]
    files = _home_files(attack)
    attack.file("hello.txt", "hello\n")
    for name in TEMP_NAMES:
        _link(attack, name, attack.home / ".bashrc")
    out = attack.run([
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "hello.txt", "content": "hello there\n"}}]},
        {"tool_calls": [{"id": "e1", "name": "edit", "input": {"path": "hello.txt", "old_string": "there",
                                                               "new_string": "world"}}]},
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "input": {"patch": (
            "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+hello patched\n"
            "*** Add File: new.txt\n+new\n*** End Patch\n")}}]},
        {"text": "done"}], args=WRITE_MODE)
    assert out.result["subtype"] == "success", out.proc.stderr
    assert [r["status"] for r in out.results()] == ["ok", "ok", "ok"], out.results()
    assert (attack.workspace / "hello.txt").read_text() == "hello patched\n"
    _unchanged(attack, files)
    assert all((attack.workspace / n).is_symlink() for n in TEMP_NAMES)


def test_a_target_link_out_of_the_workspace_is_refused(attack) -> None:  # type: ignore[no-untyped-def]
    files = _home_files(attack)
    _link(attack, "link.txt", attack.home / ".bashrc")
    _link(attack, "sub", attack.home)
    out = attack.run([
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "link.txt", "content": "owned\n"}}]},
        {"tool_calls": [{"id": "e1", "name": "edit", "input": {"path": "link.txt", "old_string": "export",
                                                               "new_string": "owned"}}]},
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "input": {"patch": (
            "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n")}}]},
        {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "sub/.profile", "content": "owned\n"}}]},
        {"tool_calls": [{"id": "w3", "name": "write", "input": {"path": "sub/made/x.txt", "content": "owned\n"}}]},
        {"tool_calls": [{"id": "p2", "name": "apply_patch", "input": {"patch": (
            "*** Begin Patch\n*** Add File: sub/evil.sh\n+owned\n*** Delete File: sub/c.txt\n*** End Patch\n")}}]},
        {"text": "done"}], args=("--permission-mode", "bypassPermissions"))  # only confinement may stop it
    assert out.result["subtype"] == "success", out.proc.stderr
    results = out.results()
    assert [r["status"] for r in results] == ["error"] * 6, results
    assert all("outside the workspace" in r["visible"] for r in results), results
    _unchanged(attack, files)
    assert sorted(p.name for p in attack.home.iterdir() if p.name != ".cox") == sorted(files)
    assert (attack.workspace / "link.txt").is_symlink()


def test_the_file_tools_never_plant_git_config_hooks_or_cox_config(attack) -> None:  # type: ignore[no-untyped-def]
    """Even in bypassPermissions: the file tools run outside the sandbox, so they keep the
    sandbox's read-only places read-only themselves, a link into them included."""
    marks = attack.base / "marks"
    hostile_repo(attack.workspace, marks)  # a real repository (its own config already hostile)
    config = (attack.workspace / ".git" / "config").read_text()
    _link(attack, "notes.txt", attack.workspace / ".git" / "config")
    evil = f'[core]\n\tfsmonitor = "touch {marks}/planted"\n'
    out = attack.run([
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": ".git/config", "content": evil}}]},
        {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "notes.txt", "content": evil}}]},
        {"tool_calls": [{"id": "w3", "name": "write", "input": {"path": ".git/hooks/pre-commit",
                                                                "content": f"#!/bin/sh\ntouch {marks}/planted\n"}}]},
        {"tool_calls": [{"id": "e1", "name": "edit", "input": {"path": ".git/config", "old_string": "[core]",
                                                               "new_string": evil}}]},
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "input": {"patch": (
            "*** Begin Patch\n*** Add File: .cox/config.toml\n+[core]\n+provider = 'x'\n*** End Patch\n")}}]},
        {"text": "done"}], args=("--permission-mode", "bypassPermissions"))
    assert out.result["subtype"] == "success", out.proc.stderr
    assert [r["status"] for r in out.results()] == ["error"] * 5, out.results()
    assert (attack.workspace / ".git" / "config").read_text() == config
    assert not (attack.workspace / ".git" / "hooks" / "pre-commit").exists() or \
        "planted" not in (attack.workspace / ".git" / "hooks" / "pre-commit").read_text()
    assert not (attack.workspace / ".cox").exists()


# -- 2. rewind through planted links ---------------------------------------------------------------


def test_a_rewind_replaces_planted_links_and_never_writes_through_them(attack) -> None:  # type: ignore[no-untyped-def]
    files = _home_files(attack)
    attack.file("a.txt", "original a\n")
    (attack.workspace / "sub").mkdir()
    attack.own(attack.base)
    first = attack.run([
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "a.txt", "content": "changed a\n"}},
                        {"id": "w2", "name": "write", "input": {"path": "b.txt", "content": "made b\n"}},
                        {"id": "w3", "name": "write", "input": {"path": "sub/c.txt", "content": "made c\n"}}]},
        {"text": "done"}], args=WRITE_MODE)
    assert first.result["subtype"] == "success", first.proc.stderr
    assert [r["status"] for r in first.results()] == ["ok"] * 3
    session = first.result["session_id"]

    # What a later command of the session could do: swap each file (and a folder) for a link
    # to the user's files. The rewind that follows must not go through any of them.
    _link(attack, "a.txt", attack.home / ".bashrc")  # was a file: restored as a file
    _link(attack, "b.txt", attack.home / ".profile")  # was created: the link goes, ~/.profile stays
    (attack.workspace / "sub" / "c.txt").unlink()
    (attack.workspace / "sub").rmdir()
    _link(attack, "sub", attack.home)  # sub/c.txt was created: ~/c.txt must not be deleted

    # Swapped outside any call of the session: without force the rewind leaves them alone as
    # conflicts (issue 12); forced, it must still never go through a link.
    submissions = "".join(json.dumps(s) + "\n" for s in (
        {"type": "rewind", "to_turn": 1, "what": "code", "force": True},
        {"type": "user_turn", "text": "what changed?"}))
    second = attack.run([{"text": "rewound"}], prompt=None, stdin=submissions,
                        args=(*WRITE_MODE, "--resume", session, "--input-format", "stream-json"))
    assert second.result["subtype"] == "success", second.proc.stderr
    _unchanged(attack, files)
    a = attack.workspace / "a.txt"
    assert not a.is_symlink() and a.read_text() == "original a\n"
    assert not os.path.lexists(attack.workspace / "b.txt")
    assert (attack.workspace / "sub").is_symlink()  # not ours to remove: reported instead
    said = json.dumps(second.lines)
    assert "sub/c.txt" in said and "is a symlink" in said, said[-3000:]


# -- 3. git config that would run programs ---------------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent / "git-home"), GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "safe.directory=*", *args], cwd=repo, env=env, check=True,
                   capture_output=True, timeout=60)


HOOKS = ("post-index-change", "pre-commit", "post-commit", "post-checkout", "reference-transaction",
         "pre-auto-gc", "fsmonitor-watchman")


def hostile_repo(ws: Path, marks: Path) -> None:
    """A repository whose config and attributes would run a program at every step, each touching
    its own marker. The config is planted after the commit (git itself would run it)."""
    marks.mkdir(exist_ok=True)
    os.chmod(marks, 0o777)
    _git(ws, "init", "-q")
    (ws / "tracked.txt").write_text("tracked\n")
    (ws / "drv.txt").write_text("filtered\n")
    (ws / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "base")
    hooks = ws / ".git" / "evil-hooks"
    hooks.mkdir()
    for name in HOOKS:
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\ntouch {marks}/hook-{name}\n")
        hook.chmod(0o755)
        (ws / ".git" / "hooks" / name).write_text(hook.read_text())
        (ws / ".git" / "hooks" / name).chmod(0o755)

    def cmd(name: str) -> str:
        return f'"touch {marks}/{name}; cat"'

    with open(ws / ".git" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = \"touch {marks}/fsmonitor; false\"\n\thooksPath = {hooks}\n"
                f"\tpager = {cmd('pager')}\n\tsshCommand = {cmd('ssh')}\n"
                f"[filter \"evil\"]\n\tclean = {cmd('clean')}\n\tsmudge = {cmd('smudge')}\n\trequired = true\n"
                f"[filter \"other.driver\"]\n\tprocess = {cmd('process')}\n"
                f"[diff \"evil\"]\n\ttextconv = {cmd('textconv')}\n\tcommand = {cmd('diff-command')}\n"
                f"[diff]\n\texternal = {cmd('diff-external')}\n"
                f"[gpg]\n\tprogram = {cmd('gpg')}\n[log]\n\tshowSignature = true\n"
                f"[credential]\n\thelper = \"!touch {marks}/credential\"\n")
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "attributes").write_text("drv.txt filter=other.driver\n")
    # Stat-dirty and changed files: git must look at their contents (clean filter, fsmonitor).
    (ws / "tracked.txt").write_text("tracked, changed\n")
    (ws / "untracked.txt").write_text("new\n")
    os.utime(ws / "drv.txt", (0, 0))


def _probe_git_really_runs_it(ws: Path, marks: Path,
                              expect: frozenset[str] = frozenset({"fsmonitor", "clean"})) -> None:
    """The planted config is live: plain ``git diff`` there creates the markers (else the
    attacks below would prove nothing)."""
    subprocess.run(["git", "diff", "--numstat", "HEAD"], cwd=ws, capture_output=True, timeout=60,
                   env={**os.environ, "HOME": str(ws.parent / "git-home")})
    assert expect <= {p.name for p in marks.iterdir()}, sorted(p.name for p in marks.iterdir())
    for p in marks.iterdir():
        p.unlink()


def test_the_hostile_config_is_live_for_plain_git(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    hostile_repo(ws, tmp_path / "marks")
    _probe_git_really_runs_it(ws, tmp_path / "marks",
                              frozenset({"fsmonitor", "clean", "process", "hook-post-index-change"}))


def test_a_session_with_writes_bash_and_listings_runs_nothing_from_git_config(attack) -> None:  # type: ignore[no-untyped-def]
    marks = attack.base / "marks"
    hostile_repo(attack.workspace, marks)
    attack.own(attack.base)
    os.chmod(marks, 0o777)
    out = attack.run([
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "tracked.txt", "content": "x\n"}}]},
        {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch made-by-bash.txt"}}]},
        {"tool_calls": [{"id": "g1", "name": "glob", "input": {"pattern": "*.txt"}},
                        {"id": "g2", "name": "grep", "input": {"pattern": "tracked"}}]},
        {"text": "done"}], args=WRITE_MODE, config='[permissions]\nallow = ["Bash(touch:*)"]\n')
    assert out.result["subtype"] == "success", out.proc.stderr
    statuses = {r.get("call_id", i): r["status"] for i, r in enumerate(out.results())}
    assert list(statuses.values())[0] == "ok", out.results()
    assert sorted(p.name for p in marks.iterdir()) == [], "a program from the repository's git config ran"


def test_cox_doctor_in_a_hostile_checkout_runs_nothing_from_it(tmp_path: Path) -> None:
    ws, home, marks = tmp_path / "ws", tmp_path / "home", tmp_path / "marks"
    ws.mkdir()
    home.mkdir()
    hostile_repo(ws, marks)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COX_", "GIT_"))}
    env.update(HOME=str(home), COX_HOME=str(home / ".cox"),
               PYTHONPATH=str(Path(cox.__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "doctor"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "checkpoints" in proc.stdout, proc.stdout + proc.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def test_the_tui_status_probe_and_file_list_run_nothing_from_git_config(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from cox.surfaces.tui.worktree import probe

    ws, marks = tmp_path / "ws", tmp_path / "marks"
    ws.mkdir()
    hostile_repo(ws, marks)
    monkeypatch.setenv("HOME", str(tmp_path / "git-home"))
    state = probe(str(ws))
    assert state is not None and state.branch == "main"
    assert state.added >= 2  # the changed line and the untracked file still count
    from cox.surfaces.tui.app import TUI

    files = TUI.workspace_files(_Stub(str(ws)))  # type: ignore[arg-type]
    assert "untracked.txt" in files and "tracked.txt" in files
    assert sorted(p.name for p in marks.iterdir()) == []
    _probe_git_really_runs_it(ws, marks)  # and the same checkout does run them for plain git
    # (the probe's own diff refreshed the index, so drv.txt's process filter and the index hook
    # no longer have a reason to run here: test_the_hostile_config_is_live_for_plain_git shows them)


class _Stub:
    """Just what ``workspace_files`` reads from the app."""

    def __init__(self, cwd: str) -> None:
        self._files = None

        class Status:
            pass

        class Model:
            status = Status()

        Model.status.cwd = cwd  # type: ignore[attr-defined]
        self.model = Model()


def test_an_embedded_bare_repository_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace folder that is itself a bare repository with a hostile config (git would
    discover it from inside) is ignored: ``safe.bareRepository=explicit``."""
    from cox.surfaces.tui.worktree import probe

    src, marks = tmp_path / "src", tmp_path / "marks"
    src.mkdir()
    hostile_repo(src, marks)
    bare = tmp_path / "ws" / "evil.git"
    bare.parent.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True, capture_output=True,
                   timeout=60, env={**os.environ, "HOME": str(tmp_path / "git-home")})
    # Found by discovery from inside it, with a work tree of its choosing: git would read an
    # index there and run the fsmonitor (and the rest) it configures.
    with open(bare / "config", "a") as f:
        f.write(f"[core]\n\tbare = false\n\tworktree = {src}\n"
                f"\tfsmonitor = \"touch {marks}/bare-fsmonitor; false\"\n")
    subprocess.run(["git", "--git-dir", str(bare), "read-tree", "HEAD"], check=True, capture_output=True,
                   timeout=60, env={**os.environ, "HOME": str(tmp_path / "git-home")})
    for p in marks.iterdir():
        p.unlink()
    monkeypatch.setenv("HOME", str(tmp_path / "git-home"))
    assert probe(str(bare)) is None
    assert sorted(p.name for p in marks.iterdir()) == []
    # The same folder is live for plain git (else this proves nothing).
    subprocess.run(["git", "diff", "--numstat", "HEAD"], cwd=bare, capture_output=True, timeout=60,
                   env={**os.environ, "HOME": str(tmp_path / "git-home")})
    assert "bare-fsmonitor" in {p.name for p in marks.iterdir()}


def test_the_tui_probe_does_not_read_through_planted_untracked_links(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Untracked entries count their lines; a link to a device that never ends (or to a secret)
    and a FIFO count nothing, and the probe returns."""
    import threading

    from cox.surfaces.tui.worktree import probe

    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q")
    (ws / "zero").symlink_to("/dev/zero")
    os.mkfifo(ws / "pipe")
    (ws / "real.txt").write_text("one\ntwo\n")
    monkeypatch.setenv("HOME", str(tmp_path / "git-home"))
    box: list[object] = []
    t = threading.Thread(target=lambda: box.append(probe(str(ws))), daemon=True)
    t.start()
    t.join(60)  # only a hang reaches this bound
    assert box, "the probe hung reading an untracked link or FIFO"
    state = box[0]
    assert state is not None and state.added == 2  # type: ignore[attr-defined]


GIT_COMMANDS = (("status",), ("diff", "HEAD"), ("diff", "--stat", "HEAD"), ("log", "-p", "-2"),
                ("show", "HEAD"), ("ls-files", "--others"), ("add", "-A"), ("write-tree",))


def test_every_git_through_gitsafe_runs_nothing_the_checkout_configures(tmp_path: Path) -> None:
    """The same commands, plain and through ``cox.gitsafe``: plain git runs the planted programs
    (fsmonitor, filters, the diff driver, hooks); the safe one runs none, and still answers."""
    from cox.gitsafe import run_git

    home = tmp_path / "git-home"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "HOME": str(home)}
    safe, plain = tmp_path / "safe", tmp_path / "plain"
    for ws in (safe, plain):
        ws.mkdir()
        hostile_repo(ws, tmp_path / f"marks-{ws.name}")
    (safe / "tracked.txt").write_text("tracked, changed\n")
    for args in GIT_COMMANDS:
        subprocess.run(["git", *args], cwd=plain, env=env, capture_output=True, timeout=60)
        proc = run_git(safe, *args, base_env=env)
        assert proc is not None and proc.returncode == 0, (args, proc and proc.stderr)
    ran = {p.name for p in (tmp_path / "marks-plain").iterdir()}
    assert {"fsmonitor", "clean", "process", "diff-command", "hook-post-index-change"} <= ran, sorted(ran)
    assert sorted(p.name for p in (tmp_path / "marks-safe").iterdir()) == []


@pytest.mark.parametrize(("args", "want"), [
    (("diff", "--numstat", "HEAD"), ["diff", "--no-ext-diff", "--no-textconv", "--numstat", "HEAD"]),
    (("-c", "core.quotepath=off", "log", "-p"), ["-c", "core.quotepath=off", "log", "--no-ext-diff", "--no-textconv",
                                                 "-p"]),
    (("-C", "sub", "blame", "f"), ["-C", "sub", "blame", "--no-textconv", "f"]),
    (("ls-files", "-z"), ["ls-files", "-z"]),
    (("--version",), ["--version"]),
])
def test_diffing_subcommands_get_the_driver_flags_after_their_name(args: tuple[str, ...], want: list[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from cox.gitsafe import git_command

    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")  # cox started from a hook: not inherited
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=touch /tmp/x'")
    cmd = git_command("/", *args, git="/usr/bin/git", filters=False)
    assert cmd is not None and cmd.argv == ["/usr/bin/git", "--no-pager", "-C", "/", *want]
    assert "GIT_DIR" not in cmd.env and "GIT_CONFIG_PARAMETERS" not in cmd.env
    assert cmd.env["GIT_CONFIG_KEY_0"] == "core.fsmonitor" and cmd.env["GIT_CONFIG_VALUE_0"] == "false"


def test_a_git_shipped_in_the_workspace_is_never_the_git_cox_runs(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty PATH entry means the current folder: a repository's own ``git`` script would run.
    cox looks in absolute folders only (the probe, the listings, the checkpoints)."""
    from cox.actors.store.checkpoint_git import which_git
    from cox.surfaces.tui.worktree import probe

    ws, marks = tmp_path / "ws", tmp_path / "marks"
    ws.mkdir()
    marks.mkdir()
    _git(ws, "init", "-q")
    fake = ws / "git"
    fake.write_text(f"#!/bin/sh\ntouch {marks}/fake-git\n")
    fake.chmod(0o755)
    monkeypatch.chdir(ws)
    monkeypatch.setenv("PATH", ":" + os.environ["PATH"])  # the empty entry first
    monkeypatch.setenv("HOME", str(tmp_path / "git-home"))
    import shutil

    assert shutil.which("git") == "git"  # the trap is live for a plain lookup
    assert which_git() not in (None, "git") and os.path.isabs(which_git() or "")
    assert probe(str(ws)) is not None
    assert sorted(p.name for p in marks.iterdir()) == []
