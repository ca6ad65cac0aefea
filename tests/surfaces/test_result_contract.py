"""The headless contract (issue 12): in json and stream-json every run that parsed its arguments
ends with one ``result`` line — start-up errors and signals at any moment included — and the
exit code is the one that result stands for: 0 ok · 1 error · 2 denied · 3 budget ·
4 interrupted · 64 usage. Each test starts a real ``cox run`` process."""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cox.surfaces.headless import exit_code

from .test_headless import cox, lines, script

pytestmark = pytest.mark.xdist_group("headless")

EXPECTED = {"success": 0, "error_during_execution": 1, "error_max_turns": 1, "error_permission_denied": 2,
            "error_max_budget_usd": 3, "error_interrupted": 4, "error_usage": 64}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "a.txt").write_text("alpha\n")
    return d


def agrees(p: subprocess.CompletedProcess[str] | subprocess.Popen[str], res: dict) -> None:
    want = EXPECTED[res["subtype"]]
    if res["subtype"] == "success" and res["permission_denials"]:
        want = 2
    assert p.returncode == want, (p.returncode, res)


def last_result(out: str, err: str = "") -> dict:
    out_lines = lines(out)
    assert out_lines, f"no output at all; stderr: {err[-3000:]}"
    assert out_lines[-1]["type"] == "result", out_lines[-3:]
    return out_lines[-1]


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _end_every_process():
    """Every cox this module starts is ended, even when its test failed half way."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def start(args: list[str], cwd: Path, **kw) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)
    STARTED.append(proc)
    return proc


class Reader:
    """A process's stdout read by a thread, so that every wait for a line has an outer bound."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        assert proc.stdout
        out = proc.stdout

        def pump() -> None:
            for line in out:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def until(self, kind: str, timeout: float = 60) -> dict:
        """The next line of type ``kind`` (lines before it are kept in ``seen``)."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, f"stdout closed before a {kind} line: {self.seen[-3:]}"
            self.seen.append(line)
            if json.loads(line)["type"] == kind:
                return json.loads(line)

    def rest(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while (line := self.lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
            self.seen.append(line)
        return "".join(self.seen)


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def wait_for_handlers(proc: subprocess.Popen[str]) -> None:
    """Until cox has taken SIGTERM (its bit in /proc/PID/status SigCgt): from then on any signal
    must end in a result line. Bounded only against a hang."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except FileNotFoundError:
            return
        mask = next(int(x.split()[1], 16) for x in status.splitlines() if x.startswith("SigCgt:"))
        if mask & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.001)
    raise AssertionError("cox never installed its SIGTERM handler")


# ---------------------------------------------------------------- exit codes


def test_exit_code_is_a_function_of_the_result():
    for subtype, code in EXPECTED.items():
        assert exit_code({"subtype": subtype, "permission_denials": []}) == code
    assert exit_code({"subtype": "success", "permission_denials": [{"tool_use_id": "b1"}]}) == 2


def test_usage_errors_exit_64(tmp_path, ws):
    s = script(tmp_path, [{"text": "never"}])
    dump = tmp_path / "requests.json"
    p = cox(["run", "--no-such-flag"], ws)
    assert p.returncode == 64 and "unrecognized arguments" in p.stderr
    p = cox(["run", "--script", str(s), "-p", "x", "--max-turns", "0"], ws)
    assert p.returncode == 64 and "--max-turns: must be at least 1" in p.stderr
    p = cox(["run", "--script", str(s), "-p", "x", "--max-turns", "many"], ws)
    assert p.returncode == 64 and "--max-turns" in p.stderr
    p = cox(["run", "--script", str(s), "--output-format", "json"], ws)
    assert p.returncode == 64 and last_result(p.stdout)["subtype"] == "error_usage"
    for prompt, stdin in (("", None), ("  \n\t", None), ("-", ""), ("-", " \n")):
        p = cox(["run", "--script", str(s), "-p", prompt, "--output-format", "json"], ws,
                env_extra={"COX_SCRIPTED_DUMP": str(dump)}, input=stdin)
        res = last_result(p.stdout)
        assert p.returncode == 64 and res["subtype"] == "error_usage" and res["is_error"], (prompt, p.stderr)
        assert "empty" in res["result"] and res["errors"] == [res["result"]] and "Traceback" not in p.stderr
    assert not dump.exists()  # nothing was sent to the model


def test_a_rewind_only_run_that_worked_exits_0_and_one_that_failed_exits_1(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "n.txt", "content": "n"}}]},
                          {"text": "written"}])
    p = cox(["run", "--script", str(s), "-p", "write n", "--permission-mode", "acceptEdits",
             "--output-format", "json"], ws)
    assert p.returncode == 0 and (ws / "n.txt").exists(), p.stderr
    sid = last_result(p.stdout)["session_id"]
    s = script(tmp_path, [])
    rewind = json.dumps({"type": "rewind", "to_turn": 1}) + "\n"
    p = cox(["run", "--script", str(s), "--resume", sid, "--input-format", "stream-json",
             "--output-format", "stream-json"], ws, input=rewind)
    out = lines(p.stdout)
    assert [o["type"] for o in out].count("rewound") == 1  # the rewind ran before the run ended
    res = last_result(p.stdout)
    assert res["subtype"] == "success" and p.returncode == 0, p.stderr
    assert not (ws / "n.txt").exists()
    p = cox(["run", "--script", str(s), "--resume", sid, "--input-format", "stream-json",
             "--output-format", "json"], ws, input=json.dumps({"type": "rewind", "to_turn": 9}) + "\n")
    res = last_result(p.stdout)
    assert p.returncode == 1 and res["subtype"] == "error_during_execution"
    assert "rewind to turn 9" in res["result"] and "no turn 9" in res["result"]


def test_after_a_failure_the_result_is_the_error_and_the_partial_answer_has_its_own_field(tmp_path, ws):
    s = script(tmp_path, [{"events": [{"text": "Half an ans"}, {"error": {"message": "upstream 500", "status": 500}}]}])
    p = cox(["run", "--script", str(s), "-p", "x", "--output-format", "json"], ws)
    res = last_result(p.stdout)
    assert res["is_error"] and "upstream 500" in res["result"] and res["errors"] == [res["result"]]
    assert res["partial_result"] == "Half an ans"
    agrees(p, res)
    assert p.returncode == 1
    # text: the partial answer alone on stdout, the error on stderr
    s = script(tmp_path, [{"events": [{"text": "Half an ans"}, {"error": {"message": "upstream 500", "status": 500}}]}])
    p = cox(["run", "--script", str(s), "-p", "x"], ws)
    assert p.returncode == 1 and p.stdout == "Half an ans\n"
    assert "upstream 500" in p.stderr and "cox: session " in p.stderr


def test_text_mode_keeps_status_lines_off_stdout(tmp_path, ws):
    s = script(tmp_path, [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "rm -rf a.txt"}}]},
                          {"text": "Could not delete."}])
    p = cox(["run", "--script", str(s), "-p", "delete a"], ws)
    assert p.returncode == 2 and p.stdout == "Could not delete.\n"
    err = p.stderr.splitlines()
    assert any(x.startswith("cox: denied: bash rm -rf a.txt") for x in err), err
    assert err[-1].startswith("cox: session ") and len(err[-1].split()[-1]) == 26


# ---------------------------------------------------------------- start-up errors


def test_start_up_errors_end_in_a_result_line(tmp_path, ws, cox_home):
    bad_config = tmp_path / "bad-config"
    (bad_config / ".cox").mkdir(parents=True)
    (bad_config / ".cox" / "config.toml").write_text("[core]\nmodle = 'x'\n")
    good = script(tmp_path, [{"text": "never"}])
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"replies": [{"text": "ok"}, {"txt": "hi"}]}))
    file_home = tmp_path / "home-file"
    file_home.write_text("")
    cases = [
        (["-p", "x"], ws, {}, "ANTHROPIC_API_KEY"),
        (["--script", str(good), "-p", "x"], bad_config, {}, "modle"),
        (["--script", str(tmp_path / "missing.json"), "-p", "x"], ws, {}, "cannot read model script"),
        (["--script", str(typo), "-p", "x"], ws, {}, "reply #2 has an unknown key 'txt'"),
        (["--script", str(good), "-p", "x"], ws, {"COX_HOME": str(file_home)}, "is not a folder; set COX_HOME"),
        (["--script", str(good), "-p", "x", "--resume", "01NOSUCHSESSION0000000000"], ws, {}, "no session"),
    ]
    for args, cwd, env, needle in cases:
        for fmt in ("json", "stream-json"):
            p = cox(["run", *args, "--output-format", fmt], cwd, env_extra=env)
            res = last_result(p.stdout)
            assert len(lines(p.stdout)) == 1, p.stdout
            assert p.returncode == 1 and res["subtype"] == "error_during_execution" and res["is_error"], (args, p)
            assert needle in res["result"] and res["errors"] == [res["result"]], (needle, res)
            assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
        p = cox(["run", *args], cwd, env_extra=env)  # text: the one line, stdout empty
        assert p.returncode == 1 and p.stdout == "" and needle in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------- a broken COX_HOME


@pytest.fixture
def read_only_home(tmp_path: Path):
    """A COX_HOME nobody can write: a read-only tmpfs when root (root writes through modes),
    else a folder without write permission."""
    home = tmp_path / "ro-home"
    home.mkdir()
    if os.geteuid() != 0:
        home.chmod(0o555)
        yield home
        home.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(home)]).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        yield home
    finally:
        subprocess.run(["umount", str(home)], check=True)


def corrupt_db_home(tmp_path: Path, how: str) -> Path:
    home = tmp_path / f"home-{how}"
    home.mkdir()
    if how == "garbage":
        (home / "cox.db").write_bytes(b"this is not sqlite at all\n" * 100)
        return home
    # a real cox.db whose pages were overwritten after its valid header
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from cox.actors.store import db; "
                    "db.connect(Path(sys.argv[1])).close()", str(home / "cox.db")], check=True)
    data = (home / "cox.db").read_bytes()
    (home / "cox.db").write_bytes(data[:100] + b"\xff" * (len(data) - 100))
    return home


def broken_home_commands(tmp_path: Path) -> list[list[str]]:
    s = script(tmp_path, [{"text": "never"}])
    return [["run", "--script", str(s), "-p", "x", "--output-format", "json"],
            ["run", "--script", str(s), "-p", "x", "--output-format", "stream-json"],
            ["run", "--script", str(s), "-p", "x"],
            ["--plain", "--script", str(s)], ["sessions"], ["sessions", "--json"], ["stats"], ["expand", "abc"]]


def check_broken_home(tmp_path: Path, ws: Path, home: Path, sentence: str) -> None:
    for args in broken_home_commands(tmp_path):
        p = cox(args, ws, env_extra={"COX_HOME": str(home)}, input="")
        assert p.returncode == 1, (args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and sentence in p.stderr, (args, p.stderr)
        # one line (and, when the store broke only once the session had its id, that id)
        said = [x for x in p.stderr.splitlines() if not x.startswith("cox: session ")]
        assert len(said) == 1 and said[0].startswith("cox: "), p.stderr
        if "json" in args and args[0] == "run":
            res = last_result(p.stdout)
            assert res["subtype"] == "error_during_execution" and sentence in res["result"]
    from cox.surfaces.doctor import checks

    rows = {name: (status, text) for status, name, text in checks(ws, env={"COX_HOME": str(home)})}
    assert rows["cox home"][0] == "fail" and sentence in rows["cox home"][1]  # the doctor says the same


def test_a_read_only_home_is_one_clear_line(tmp_path, ws, read_only_home):
    check_broken_home(tmp_path, ws, read_only_home,
                      f"COX_HOME {read_only_home} is read-only; set COX_HOME to a folder you own")


def test_a_file_for_a_home_is_one_clear_line(tmp_path, ws):
    home = tmp_path / "home-file"
    home.write_text("")
    check_broken_home(tmp_path, ws, home, f"COX_HOME {home} is not a folder; set COX_HOME to a folder you own")


@pytest.mark.parametrize("how", ["garbage", "malformed"])
def test_a_corrupt_cox_db_is_one_clear_line(tmp_path, ws, how):
    home = corrupt_db_home(tmp_path, how)
    check_broken_home(tmp_path, ws, home, f"{home / 'cox.db'} is not a")
    p = cox(["sessions"], ws, env_extra={"COX_HOME": str(home)})
    assert "move it aside" in p.stderr


# ---------------------------------------------------------------- signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_moment_of_start_up_gives_a_result_and_exit_4(tmp_path, ws, sig):
    # The model stalls, so whenever the signal lands (during imports, config, store, session or
    # the first request) the run was interrupted; the moments cover the whole start-up.
    s = script(tmp_path, [{"events": [{"stall": True}]}])
    rng = random.Random(1200 + sig)
    for delay in [0.0, 0.0, *(rng.uniform(0.0, 0.35) for _ in range(6))]:
        proc = start(["run", "--script", str(s), "-p", "x", "--output-format", "stream-json"], ws)
        wait_for_handlers(proc)
        time.sleep(delay)  # picks the moment; the assertions hold for every moment
        proc.send_signal(sig)
        out, err = finish(proc)
        res = last_result(out, err)
        assert proc.returncode == 4, (delay, proc.returncode, err)
        assert res["subtype"] == "error_interrupted" and sig.name in res["result"], (delay, res)
        assert "Traceback" not in err, (delay, err)


def test_sigterm_right_after_the_result_line_keeps_the_results_exit_code(tmp_path, ws):
    for reply, code in (({"text": "done"}, 0), ({"error": {"message": "upstream 500", "status": 500}}, 1)):
        for _ in range(4):
            s = script(tmp_path, [reply])
            proc = start(["run", "--script", str(s), "-p", "x", "--output-format", "stream-json"], ws)
            res = Reader(proc).until("result")
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            assert proc.returncode == code, (proc.returncode, res)  # never -15
            agrees(proc, res)


def test_a_signal_at_any_moment_of_a_short_run_gives_a_result_the_exit_code_agrees_with(tmp_path, ws):
    rng = random.Random(12)
    seen: set[str] = set()
    for _ in range(10):
        s = script(tmp_path, [{"text": "quick"}])
        proc = start(["run", "--script", str(s), "-p", "x", "--output-format", "json"], ws)
        wait_for_handlers(proc)
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(rng.choice([signal.SIGINT, signal.SIGTERM]))
        out, err = finish(proc)
        if proc.returncode < 0:  # the process had exited and was only waiting to be reaped
            pytest.fail(f"killed by the signal: {proc.returncode} {err}")
        res = last_result(out, err)
        assert len(lines(out)) == 1
        agrees(proc, res)
        seen.add(res["subtype"])
    assert seen <= {"success", "error_interrupted"}


# ---------------------------------------------------------------- multi-turn stream-json


def test_stream_json_input_gives_one_result_per_turn_as_the_turn_ends(tmp_path, ws):
    s = script(tmp_path, [{"text": "ONE"}, {"text": "TWO"}])
    proc = start(["run", "--script", str(s), "--input-format", "stream-json", "--output-format", "stream-json"], ws,
                 stdin=subprocess.PIPE)
    assert proc.stdin
    out = Reader(proc)
    results = []
    for text in ("one", "two"):  # a client that waits for each turn's result before the next
        proc.stdin.write(json.dumps({"type": "user_turn", "text": text}) + "\n")
        proc.stdin.flush()
        results.append(out.until("result"))
    proc.stdin.close()
    assert [r["result"] for r in results] == ["ONE", "TWO"]
    assert all(r["subtype"] == "success" and r["num_turns"] == 1 for r in results)
    assert lines(out.rest())[-1] == results[-1]  # nothing after the last turn's result
    assert proc.wait(60) == 0


def test_stream_json_turns_sent_at_once_run_one_after_another(tmp_path, ws):
    s = script(tmp_path, [{"text": "ONE"}, {"text": "TWO"}])
    turns = "".join(json.dumps({"type": "user_turn", "text": t}) + "\n" for t in ("one", "two"))
    p = cox(["run", "--script", str(s), "--input-format", "stream-json", "--output-format", "stream-json"], ws,
            input=turns)
    out = lines(p.stdout)
    assert [o["result"] for o in out if o["type"] == "result"] == ["ONE", "TWO"]
    kinds = [o["type"] for o in out]
    assert kinds.count("turn_done") == 2 and kinds[-1] == "result"
    first_done = kinds.index("turn_done")
    assert kinds[first_done + 1] == "result" and kinds[first_done + 2] == "turn_started"  # written as turn 1 ended
    assert p.returncode == 0
    p = cox(["run", "--script", str(s), "--input-format", "stream-json", "--output-format", "json"], ws, input="")
    res = last_result(p.stdout)  # no input at all: still a result
    assert p.returncode == 0 and res["subtype"] == "success" and res["num_turns"] == 0


def test_a_signal_between_stream_json_turns_is_an_interrupted_result(tmp_path, ws):
    s = script(tmp_path, [{"text": "ONE"}])
    proc = start(["run", "--script", str(s), "--input-format", "stream-json", "--output-format", "json"], ws,
                 stdin=subprocess.PIPE)
    assert proc.stdin
    out = Reader(proc)
    proc.stdin.write(json.dumps({"type": "user_turn", "text": "one"}) + "\n")
    proc.stdin.flush()
    assert out.until("result")["result"] == "ONE"
    proc.send_signal(signal.SIGINT)  # stdin still open: the run was waiting for more
    res = out.until("result")  # (closing stdin would end the input, and input that ends is no interrupt)
    assert res["subtype"] == "error_interrupted" and "SIGINT" in res["result"]
    assert proc.wait(60) == 4
    proc.stdin.close()


def test_text_mode_an_interrupt_is_a_status_line_and_the_answer_stays_alone_on_stdout(tmp_path, ws):
    s = script(tmp_path, [{"events": [{"text": "thinking hard"}, {"stall": True}]}])
    proc = start(["run", "--script", str(s), "-p", "x"], ws)
    wait_for_handlers(proc)  # text shows nothing before the end: any moment from here is a fair test
    proc.send_signal(signal.SIGTERM)
    out, err = finish(proc)
    assert proc.returncode == 4 and out in ("", "thinking hard\n"), (out, err)
    assert "cox: interrupted by SIGTERM" in err and "Traceback" not in err
