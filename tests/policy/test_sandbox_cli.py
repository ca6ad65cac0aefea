"""What ``cox policy check`` and ``cox doctor`` say a call's sandbox would be: the same rows, from
``cox.policy.sandbox.explain``, so the person sees the boundary the command would get."""

from __future__ import annotations

from pathlib import Path

from tests.policy.test_policy_cli import check


def test_policy_check_shows_a_read_only_rated_line_gets_a_read_only_file_system(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    config = tmp_path / "c.toml"
    config.write_text('[permissions]\ndeny = ["Read(~/secret/**)"]\n')
    (home / "secret").mkdir()
    ro = check("--config", str(config), "--root", str(ws), "--home", str(home), "--", "ls -la")
    assert ro["risk"] == "read_only"
    box = ro["sandbox"]
    assert isinstance(box, dict)
    assert box["writable"] == "nothing" and box["read-only"] == "everything"
    assert str(home / ".ssh") in box["masked"] and str(home / "secret") in box["masked"]
    rw = check("--config", str(config), "--root", str(ws), "--home", str(home), "--", "make build")
    box = rw["sandbox"]
    assert isinstance(box, dict)
    assert box["writable"] == str(ws) and str(ws / ".git" / "config") in box["read-only"]
    assert box["network"] == "off" and "env removed" in box
    assert not (ws / ".cox").exists(), "a description prepares nothing on disk"
    bare = check("--root", str(ws), "--sandbox", "danger-full-access", "--", "make build")["sandbox"]
    assert isinstance(bare, dict) and "danger-full-access" in bare["sandbox"]


def test_policy_check_says_nothing_of_a_sandbox_for_other_tools(tmp_path: Path) -> None:
    assert "sandbox" not in check("--tool", "Read", "--", str(tmp_path / "a"))


def test_doctor_lists_the_sandbox_rows(tmp_path: Path) -> None:
    from cox.surfaces.doctor import checks

    rows = {name: text for _, name, text in checks(tmp_path, env={"COX_HOME": str(tmp_path / "h"),
                                                                  "HOME": str(tmp_path)})}
    from cox.actors.tools.shell_env import sandbox_status

    wanted = ("sandbox", "sandbox network", "sandbox /tmp", "sandbox env removed") if sandbox_status()[0] else \
        ("sandbox", "sandbox env removed")
    for what in wanted:
        assert what in rows, rows
    if not sandbox_status()[0]:
        assert "install bubblewrap" in rows["sandbox"]
