"""``cox -r`` with no id, for real: two sessions stored by scripted headless runs, the picker in
the TUI (tmux), the older one chosen and its transcript replayed; Esc cancels and opens nothing;
a session another live cox holds is marked and refused; the ``--plain`` numbered list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .tmux import BOUND_S, REPO

pytestmark = pytest.mark.xdist_group("tui")


def cox(*args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COX_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=BOUND_S)


def stored(tmp: Path, home: Path, *prompts: str) -> tuple[Path, list[str]]:
    """One scripted `cox run` per prompt in ``tmp/ws`` (oldest first); their session ids."""
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    ids = []
    for n, prompt in enumerate(prompts):
        script = tmp / f"stored{n}.json"
        script.write_text(json.dumps({"model": "scripted", "replies": [{"text": f"Answer to {prompt}."}]}))
        run = cox("run", "-p", prompt, "--script", str(script), "--cwd", str(ws), "--output-format", "json",
                  home=home)
        assert run.returncode == 0, run.stderr
        ids.append(json.loads(run.stdout)["session_id"])
    return ws, ids


def test_the_picker_resumes_the_older_session_and_replays_it(tui: Any, tmp_path: Path, cox_home: Path) -> None:
    _, (older, newer) = stored(tmp_path, cox_home, "first task", "second task")
    t = tui([{"text": "Resumed answer."}], cli=True, extra="-r")
    screen = t.wait("resume which session?")
    assert screen.index("second task") < screen.index("first task")  # newest first
    assert "▸ second task" in screen and "1 turn · scripted" in screen and "just now" in screen
    t.save("resume-picker", screen)
    t.keys("Down")
    t.wait("▸ first task")
    t.keys("Enter")
    screen = t.wait("resumed session")
    assert f"resumed session {older}" in screen
    assert "› first task" in screen and "Answer to first task." in screen
    assert "second task" not in screen
    t.send("go on")
    t.wait("Resumed answer.")
    after = t.quit()
    assert "resume with: " in after and f"--resume {older}" in after.replace("\n", "")


def test_typing_filters_and_j_k_move(tui: Any, tmp_path: Path, cox_home: Path) -> None:
    stored(tmp_path, cox_home, "fix the parser", "write the docs", "fix the lexer")
    t = tui([{"text": "unused"}], cli=True, extra="--resume")
    t.wait("▸ fix the lexer")
    t.keys("j")
    t.wait("▸ write the docs")
    t.keys("k")
    t.wait("▸ fix the lexer")
    t.type("pars")
    screen = t.wait("filter › pars")
    assert "▸ fix the parser" in screen and "write the docs" not in screen and "fix the lexer" not in screen
    assert "(1 of 3, newest first)" in screen
    t.keys("Enter")
    screen = t.wait("resumed session")
    assert "Answer to fix the parser." in screen
    t.quit()


@pytest.mark.parametrize("key", ["Escape", "q", "C-c"])
def test_esc_q_or_ctrl_c_cancel_and_open_nothing(tui: Any, tmp_path: Path, cox_home: Path, key: str) -> None:
    stored(tmp_path, cox_home, "only task")
    before = sorted(p.name for p in (cox_home / "sessions").iterdir())
    t = tui([{"text": "unused"}], cli=True, extra="-r")
    t.wait("▸ only task")
    t.keys(key)
    screen = t.wait("EXITED 0")
    assert "no session resumed" in screen and "nothing was opened" in screen
    assert sorted(p.name for p in (cox_home / "sessions").iterdir()) == before  # no new rollout, no lock


def test_no_stored_session_says_so_and_exits_0(tui: Any, cox_home: Path) -> None:
    t = tui([{"text": "unused"}], cli=True, extra="-r")
    screen = " ".join(t.wait("EXITED 0").split())  # the sentence wraps where the pane is narrower than the path
    assert "no stored session in" in screen and "to resume" in screen
    assert not (cox_home / "sessions").exists() or not list((cox_home / "sessions").glob("*.jsonl"))


def _holder(home: Path, session_id: str) -> subprocess.Popen[str]:
    """Another live process holding the session's lock, as a running cox does."""
    code = ("import sys; from pathlib import Path; from cox.actors.store import lock; "
            f"lock.hold(Path({str(home / 'sessions')!r}), {session_id!r}); print('held', flush=True); "
            "sys.stdin.read()")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_session_held_by_a_live_cox_is_marked_and_refused(tui: Any, tmp_path: Path, cox_home: Path) -> None:
    _, (older, newer) = stored(tmp_path, cox_home, "free task", "busy task")
    holder = _holder(cox_home, newer)
    try:
        t = tui([{"text": "unused"}], cli=True, extra="-r")
        screen = t.wait("▸ busy task")
        assert "● in use" in screen.split("busy task", 1)[1].split("free task", 1)[0]
        assert "● in use" not in screen.split("free task", 1)[1]
        t.keys("Enter")
        screen = t.wait(f"session {newer} is in use by process {holder.pid}")
        assert "resume which session?" in screen  # still open: another one can be chosen
        t.keys("Down")
        t.keys("Enter")
        screen = t.wait("resumed session")
        assert f"resumed session {older}" in screen and "Answer to free task." in screen
        t.quit()
    finally:
        holder.communicate("", timeout=BOUND_S)
    # the sentence is the one --resume ID gives; the plain list marks the session and refuses it too
    holder = _holder(cox_home, newer)
    try:
        direct = cox("--plain", "--resume", newer, "--script", str(tmp_path / "stored0.json"),
                     "--cwd", str(tmp_path / "ws"), home=cox_home)
        plain = cox("-r", "--plain", "--cwd", str(tmp_path / "ws"), home=cox_home, stdin="2\n")
    finally:
        holder.communicate("", timeout=BOUND_S)
    refusal = f"session {newer} is in use by process {holder.pid}; wait for it to end"
    assert direct.returncode == 1 and refusal in direct.stderr
    sentence = direct.stderr.strip()
    # (free task was resumed above: it is the newest now)
    assert "1. free task" in plain.stdout and "● in use" not in plain.stdout.split("2. busy task")[0]
    assert "● in use" in plain.stdout.split("2. busy task")[1]
    assert sentence in plain.stdout and plain.returncode == 0  # refused, asked again, then the input ended
    assert "resumed session" not in plain.stdout


def test_plain_lists_numbers_and_reads_one(tmp_path: Path, cox_home: Path) -> None:
    ws, (older, newer) = stored(tmp_path, cox_home, "first task", "second task")
    script = tmp_path / "next.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [{"text": "Went on."}]}))
    run = cox("-r", "--plain", "--script", str(script), "--cwd", str(ws), home=cox_home, stdin="7\n2\nand now\n")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.index("1. second task") < out.index("2. first task") < out.index("'7' is not one of the numbers 1-2")
    assert f"resumed session {older}" in out and "Went on." in out  # the line after the number went to the session
    cancelled = cox("-r", "--plain", "--cwd", str(ws), home=cox_home, stdin="\n")
    assert cancelled.returncode == 0 and "no session resumed" in cancelled.stdout
    assert "resumed session" not in cancelled.stdout
    eof = cox("-r", "--plain", "--cwd", str(ws), home=cox_home, stdin="")
    assert eof.returncode == 0 and "no session resumed" in eof.stdout
    empty = cox("-r", "--plain", "--cwd", str(tmp_path), home=cox_home)
    assert empty.returncode == 0 and "no stored session in" in empty.stdout


def test_a_worktree_session_is_listed_from_the_main_checkout_and_reopened_there(tmp_path: Path,
                                                                               cox_home: Path) -> None:
    from tests.worktrees.gitrepo import make_repo

    repo = make_repo(tmp_path)
    script = tmp_path / "wt.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [{"text": "Worked in the tree."}]}))
    made = cox("run", "-p", "work in the tree", "--worktree", "t1", "--script", str(script), "--cwd", str(repo),
               "--output-format", "json", home=cox_home)
    assert made.returncode == 0, made.stderr
    sid = json.loads(made.stdout)["session_id"]
    wt = tmp_path / "_worktrees" / "repo-t1"
    run = cox("-r", "--plain", "--script", str(script), "--cwd", str(repo), home=cox_home, stdin="1\n")
    assert run.returncode == 0, run.stderr
    assert "1. work in the tree" in run.stdout and "⧉ t1 (t1)" in run.stdout
    assert f"resumed session {sid}" in run.stdout
    assert f"working in existing worktree {wt} (branch t1)" in run.stderr
