"""``cox demo`` leaves one workspace however often it runs, and its "resume it" hint works as
printed from anywhere — without cox on PATH (``scripts/demo`` does not put ``.venv/bin`` there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cox.surfaces.demo.run import workspace_path


def demo(tmp_path: Path, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "demo"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def field(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{name}:")).split(":", 1)[1].strip()


def test_every_run_reuses_one_workspace(tmp_path: Path, cox_home: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    first = demo(tmp_path, tmpdir)
    assert first.returncode == 0, first.stderr
    ws = Path(field(first.stdout, "workspace").split()[0])
    assert ws.parent == tmpdir.resolve() and (ws / "hello.py").is_file()
    (ws / "stray.txt").write_text("left from before\n")
    second = demo(tmp_path, tmpdir)
    assert second.returncode == 0, second.stderr
    assert Path(field(second.stdout, "workspace").split()[0]) == ws
    assert "the next cox demo empties and reuses it" in second.stdout
    assert not (ws / "stray.txt").exists() and (ws / "hello.py").is_file()
    assert [p.name for p in tmpdir.iterdir()] == [ws.name]


def test_a_planted_link_under_the_workspace_name_is_not_followed(tmp_path: Path, cox_home: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    os.environ["TMPDIR"] = str(tmpdir)  # workspace_path reads it as the demo will
    try:
        import tempfile

        tempfile.tempdir = None
        planted = workspace_path(cox_home)
    finally:
        del os.environ["TMPDIR"]
        tempfile.tempdir = None
    planted.symlink_to(victim)
    p = demo(tmp_path, tmpdir)
    assert p.returncode == 0, p.stderr
    assert (victim / "keep.txt").read_text() == "mine\n" and not (victim / "hello.py").exists()
    assert Path(field(p.stdout, "workspace").split()[0]) != planted


def test_the_resume_hint_works_as_printed_without_cox_on_path(tmp_path: Path, cox_home: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    p = demo(tmp_path, tmpdir)
    assert p.returncode == 0, p.stderr
    hint = field(p.stdout, "resume it")
    command, _, rest = hint.partition(" -p '…'")
    assert "(needs a model key)" in rest and " run --cwd " in command and " --resume " in command
    script = tmp_path / "again.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [{"text": "resumed fine"}]}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    again = subprocess.run(["bash", "-c", f"{command} -p 'once more' --script {script} --output-format stream-json"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    events = [json.loads(line) for line in again.stdout.splitlines()]
    started = events[0]
    assert started["type"] == "session_started" and started["resumed"] is True
    assert started["cwd"] == field(p.stdout, "workspace").split()[0]
    assert events[-1]["result"] == "resumed fine"


def test_scripts_demo_prints_a_resume_command_for_the_callers_shell(tmp_path: Path, cox_home: Path) -> None:
    """``scripts/demo`` (with its real ``_env``) in a copy of the checkout whose ``.venv`` is set
    up already: ``_env`` puts ``.venv/bin`` on PATH for itself, the person's shell does not have
    it, so the hint must name ``.venv/bin/cox`` by its path — and that command must work."""
    import hashlib
    import shutil

    root = Path(__file__).resolve().parents[2]
    fake = tmp_path / "checkout"
    (fake / "scripts").mkdir(parents=True)
    for name in ("demo", "_env"):
        shutil.copy2(root / "scripts" / name, fake / "scripts" / name)
    shutil.copy2(root / "pyproject.toml", fake / "pyproject.toml")
    venv = fake / ".venv"
    (venv / "bin").mkdir(parents=True)
    base = Path(sys.prefix)
    shutil.copy2(base / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    lib = next((base / "lib").glob("python3*"))
    (venv / "lib" / lib.name).mkdir(parents=True)
    (venv / "lib" / lib.name / "site-packages").symlink_to(lib / "site-packages")
    (venv / "bin" / "cox").write_text(f"#!{venv / 'bin' / 'python'}\n"
                                      "import sys\nfrom cox.surfaces.cli import main\nsys.exit(main())\n")
    (venv / "bin" / "cox").chmod(0o755)
    (venv / ".cox-installed").write_text(hashlib.sha256((fake / "pyproject.toml").read_bytes()).hexdigest() + "\n")
    npm = fake / "node_modules" / "@modelcontextprotocol" / "server-everything"
    npm.mkdir(parents=True)
    (npm / "package.json").write_text("{}")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    p = subprocess.run(["bash", str(fake / "scripts" / "demo")], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    hint = field(p.stdout, "resume it")
    assert hint.startswith(f"{venv / 'bin' / 'cox'} run --cwd "), hint  # not a bare `cox`: it is not on PATH
    command = hint.partition(" -p '…'")[0]
    script = tmp_path / "again.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [{"text": "resumed fine"}]}))
    again = subprocess.run(["bash", "-c", f"{command} -p 'once more' --script {script}"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout == "resumed fine\n", again.stderr
