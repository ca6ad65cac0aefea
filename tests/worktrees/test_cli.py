"""``cox run --worktree`` end to end with the scripted model and real git repositories: edits land
only in the worktree, the main checkout stays readable and untouched; resume reopens the session
there (or refuses when the worktree is gone); a second live session gets the warning;
``cox sessions`` marks worktree sessions."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waits import BOUND_S
from tests.worktrees.gitrepo import git, make_repo

pytestmark = pytest.mark.xdist_group("headless")


def cox(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def script(tmp_path: Path, name: str, replies: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"model": "scripted", "replies": replies}))
    return path


def events(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def results(out: list[dict]) -> dict[str, dict]:
    return {e["call_id"]: e["result"] for e in out if e["type"] == "tool_call_done"}


def run_in_worktree(tmp_path: Path, repo: Path, name: str = "T1") -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    main_readme = repo / "README.md"
    s = script(tmp_path, "s1.json", [
        {"tool_calls": [
            {"id": "w1", "name": "write", "input": {"path": "new.txt", "content": "made in the worktree\n"}},
            {"id": "r1", "name": "read", "input": {"path": str(main_readme)}},
            {"id": "w2", "name": "write", "input": {"path": str(repo / "evil.txt"), "content": "x\n"}},
            {"id": "e1", "name": "edit", "input": {"path": str(main_readme), "old_string": "hello",
                                                   "new_string": "owned"}},
            {"id": "p1", "name": "apply_patch", "input": {"input": (
                f"*** Begin Patch\n*** Add File: {repo / 'patched.txt'}\n+x\n*** End Patch")}},
        ]},
        {"text": "done"}])
    p = cox(["run", "--script", str(s), "--worktree", name, "--permission-mode", "bypassPermissions",
             "--output-format", "stream-json", "-p", "make new.txt"], repo)
    return p, events(p.stdout)


def test_edits_land_only_in_the_worktree_and_the_main_checkout_is_readable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    p, out = run_in_worktree(tmp_path, repo)
    assert p.returncode == 0, p.stderr
    wt = tmp_path / "_worktrees" / "repo-t1"
    assert out[0]["type"] == "session_started" and out[0]["cwd"] == str(wt)
    assert (wt / "new.txt").read_text() == "made in the worktree\n"
    got = results(out)
    assert got["r1"]["status"] == "ok" and "hello" in got["r1"]["visible"]  # the main checkout is readable
    for call in ("w2", "e1", "p1"):
        assert got[call]["status"] == "error" and "read-only root" in got[call]["visible"]
    assert sorted(x.name for x in repo.iterdir()) == [".git", "README.md"]
    assert (repo / "README.md").read_text() == "hello\n"
    assert git(wt, "symbolic-ref", "--short", "HEAD") == "t1"
    assert f"working in new worktree {wt} (branch t1)" in p.stderr


def test_bash_reads_the_main_checkout_and_cannot_write_it(tmp_path: Path) -> None:
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    repo = make_repo(tmp_path)
    s = script(tmp_path, "s.json", [
        {"tool_calls": [{"id": "b1", "name": "bash", "input": {
            "command": f"cat {repo}/README.md > copied.txt; echo x > {repo}/evil.txt"}}]},
        {"text": "done"}])
    p = cox(["run", "--script", str(s), "--worktree", "t2", "--permission-mode", "bypassPermissions",
             "--output-format", "stream-json", "-p", "copy"], repo)
    assert p.returncode == 0, p.stderr
    wt = tmp_path / "_worktrees" / "repo-t2"
    assert (wt / "copied.txt").read_text() == "hello\n"
    assert "Read-only file system" in results(events(p.stdout))["b1"]["visible"]
    assert not (repo / "evil.txt").exists()


def test_resume_reopens_the_session_in_its_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    p, out = run_in_worktree(tmp_path, repo)
    sid = out[-1]["session_id"]
    wt = tmp_path / "_worktrees" / "repo-t1"
    s = script(tmp_path, "s2.json", [
        {"tool_calls": [{"id": "w3", "name": "write", "input": {"path": "second.txt", "content": "again\n"}},
                        {"id": "w4", "name": "write", "input": {"path": str(repo / "evil.txt"), "content": "x\n"}}]},
        {"text": "resumed"}])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p2 = cox(["run", "--script", str(s), "--resume", sid, "--permission-mode", "bypassPermissions",
              "--output-format", "stream-json", "-p", "more"], elsewhere)
    assert p2.returncode == 0, p2.stderr
    out2 = events(p2.stdout)
    assert out2[0]["cwd"] == str(wt) and out2[0]["resumed"] is True
    assert (wt / "second.txt").read_text() == "again\n"
    assert "read-only root" in results(out2)["w4"]["visible"]  # the same roots as --worktree
    assert not (repo / "evil.txt").exists() and not (elsewhere / "second.txt").exists()
    listing = cox(["sessions"], elsewhere)
    line = next(ln for ln in listing.stdout.splitlines() if ln.startswith(sid))
    assert "⧉ t1" in line
    as_json = [json.loads(x) for x in cox(["sessions", "--json"], elsewhere).stdout.splitlines()]
    assert next(r for r in as_json if r["id"] == sid)["worktree"] == str(wt)


def test_resume_refuses_when_the_worktree_is_gone_and_never_makes_it_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _, out = run_in_worktree(tmp_path, repo)
    sid = out[-1]["session_id"]
    wt = tmp_path / "_worktrees" / "repo-t1"
    git(repo, "worktree", "unlock", str(wt))
    git(repo, "worktree", "remove", "--force", str(wt))
    s = script(tmp_path, "s3.json", [{"text": "must not run"}])
    p = cox(["run", "--script", str(s), "--resume", sid, "--output-format", "json", "-p", "more"], repo)
    assert p.returncode != 0
    res = json.loads(p.stdout.splitlines()[-1])
    assert res["is_error"] is True
    assert "git worktree list" in res["result"] and f"--worktree t1 --resume {sid}" in res["result"]
    assert not wt.exists()
    # the hint works: --worktree makes it again and the session continues there
    s4 = script(tmp_path, "s4.json", [{"text": "back"}])
    p4 = cox(["run", "--script", str(s4), "--worktree", "t1", "--resume", sid, "--output-format", "stream-json",
              "-p", "more"], repo)
    assert p4.returncode == 0, p4.stderr
    assert events(p4.stdout)[0]["cwd"] == str(wt) and (wt / "README.md").is_file()


def test_with_a_local_origin_the_worktree_starts_from_its_fresh_default(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, origin=True)
    s = script(tmp_path, "s.json", [{"text": "ok"}])
    p = cox(["run", "--script", str(s), "--worktree", "t4", "-p", "hi"], repo)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "_worktrees" / "repo-t4" / "NEW.md").is_file()


def test_a_second_live_session_in_the_worktree_is_warned_and_starts_anyway(tmp_path: Path, cox_home: Path) -> None:
    repo = make_repo(tmp_path)
    stall = script(tmp_path, "stall.json", [{"events": [{"stall": True}]}])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    first = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(stall), "--worktree",
                              "t1", "--output-format", "stream-json", "-p", "wait"], cwd=repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert first.stdout is not None
        started = json.loads(first.stdout.readline())  # session_started: the store has opened it
        assert started["type"] == "session_started"
        wt = tmp_path / "_worktrees" / "repo-t1"
        deadline = time.monotonic() + BOUND_S
        while True:  # the presence row is written by the store when it opens the session
            conn = sqlite3.connect(cox_home / "cox.db")
            try:
                rows = conn.execute("SELECT worktree FROM presence WHERE session_id=?",
                                    (started["session_id"],)).fetchall()
            except sqlite3.Error:
                rows = []
            finally:
                conn.close()
            if rows:
                break
            assert time.monotonic() < deadline, "the first session never recorded its presence"
            time.sleep(0.05)
        assert rows[0][0] == str(wt)  # the presence record carries the worktree path
        s = script(tmp_path, "s.json", [{"text": "ok"}])
        second = cox(["run", "--script", str(s), "--worktree", "t1", "-p", "hi"], repo)
        assert second.returncode == 0, second.stderr
        assert (f"cox: warning: session {started['session_id']} (pid {first.pid}) is already working in "
                f"worktree {wt}") in second.stderr
    finally:
        first.terminate()
        first.communicate(timeout=BOUND_S)


@pytest.mark.parametrize("answer", ["y", "n"])
def test_plain_quit_offers_to_remove_a_clean_worktree(tmp_path: Path, answer: str) -> None:
    repo = make_repo(tmp_path)
    s = script(tmp_path, "s.json", [{"text": "Hi."}])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--script", str(s), "--worktree", "t1"], cwd=repo,
                       env=env, input=f"hello\n/quit\n{answer}\n", capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    wt = tmp_path / "_worktrees" / "repo-t1"
    assert "is clean; remove it? (branch t1 stays)" in p.stdout
    if answer == "y":
        assert f"removed worktree {wt}; branch t1 stays" in p.stdout and not wt.exists()
        assert git(repo, "rev-parse", "--verify", "t1")
    else:
        assert f"worktree {wt} kept (branch t1)" in p.stdout and wt.is_dir()


def test_plain_quit_keeps_a_dirty_worktree_and_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    s = script(tmp_path, "s.json", [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "new.txt", "content": "x\n"}}]},
        {"text": "Wrote."}])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--script", str(s), "--worktree", "t1",
                        "--permission-mode", "acceptEdits"], cwd=repo, env=env, input="write\n/quit\n",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    wt = tmp_path / "_worktrees" / "repo-t1"
    assert f"worktree {wt} has uncommitted changes: kept (branch t1)" in p.stdout
    assert (wt / "new.txt").is_file() and not (repo / "new.txt").exists()


def test_read_deny_rules_hold_in_the_read_only_main_checkout(tmp_path: Path, cox_home: Path) -> None:
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    repo = make_repo(tmp_path)
    (repo / ".env").write_text("TOKEN=hunter2-in-main\n")
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text('[permissions]\ndeny = ["Read(./.env)"]\n')
    s = script(tmp_path, "s.json", [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": str(repo / ".env")}},
                        {"id": "b1", "name": "bash", "input": {"command": f"n=env; cat {repo}/.$n; cat {repo}/README.md"}}]},
        {"text": "done"}])
    p = cox(["run", "--script", str(s), "--worktree", "t3", "--permission-mode", "bypassPermissions",
             "--output-format", "stream-json", "-p", "peek"], repo)
    assert p.returncode == 2, p.stderr  # a call was denied
    got = results(events(p.stdout))
    assert "hunter2" not in p.stdout
    assert got["r1"]["status"] == "denied"
    assert got["b1"]["status"] != "denied", got["b1"]  # the policy cannot see the path: the sandbox masks it
    assert "hello" in got["b1"]["visible"]  # the rest of the main checkout is readable


def test_worktree_outside_a_repository_or_with_a_bad_name_is_one_sentence(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    s = script(tmp_path, "s.json", [{"text": "must not run"}])
    p = cox(["run", "--script", str(s), "--worktree", "t1", "-p", "hi"], plain)
    assert p.returncode == 1 and "is not inside a git checkout" in p.stderr and "Traceback" not in p.stderr
    repo = make_repo(tmp_path)
    p = cox(["run", "--script", str(s), "--worktree", "../up", "-p", "hi"], repo)
    assert p.returncode == 1 and "worktree name '../up' cannot be used" in p.stderr
    assert not (tmp_path / "_worktrees").exists() and not (tmp_path / "up").exists()
