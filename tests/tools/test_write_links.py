"""write, edit and apply_patch never write through a planted link, and cox.atomic's guarantees.

Each attack plants a link where a file tool would follow one: at a temporary name cox once used
(``.NAME.cox-tmp``), at the target, or in place of a folder on the way, pointing at a file outside
the workspace that must keep its bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cox.actors.tools.apply_patch import ApplyPatchTool
from cox.actors.tools.base import ToolEnv
from cox.actors.tools.edit import EditTool
from cox.actors.tools.files import WriteTool
from cox.atomic import Folder, LinkInTheWay, open_append, remove_file, write_atomic
from cox.policy.paths import PathEscape
from cox.protocol.types import ToolCall, ToolResult
from cox.supervisors import CancelScope

SECRET = "export PATH=/usr/bin  # the user's own\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    p = tmp_path / "ws"
    p.mkdir()
    return p.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    p = tmp_path / "home" / ".bashrc"
    p.parent.mkdir()
    p.write_text(SECRET)
    return p.resolve()


def env(ws: Path) -> ToolEnv:
    return ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())


def write(ws: Path, path: str, content: str) -> ToolResult:
    return WriteTool().call(ToolCall(id="t", name="write", input={"path": path, "content": content}), env(ws))


def edit(ws: Path, path: str, old: str, new: str) -> ToolResult:
    return EditTool().call(ToolCall(id="t", name="edit", input={"path": path, "old_string": old,
                                                                "new_string": new}), env(ws))


def patch(ws: Path, *lines: str) -> ToolResult:
    text = "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"
    return ApplyPatchTool().call(ToolCall(id="t", name="apply_patch", input={"patch": text}), env(ws))


def leftovers(ws: Path) -> list[str]:
    return sorted(p.name for p in ws.rglob("*") if ".cox-" in p.name or p.name.endswith(".tmp"))


# -- the temporary name ----------------------------------------------------------------------------


@pytest.mark.parametrize("planted", [".hello.txt.cox-tmp", ".hello.txt.tmp", ".hello.txt.cox-new"])
def test_write_ignores_a_link_at_the_old_temporary_name(ws: Path, outside: Path, planted: str) -> None:
    (ws / planted).symlink_to(outside)
    res = write(ws, "hello.txt", "hi\n")
    assert res.ok, res.visible
    assert (ws / "hello.txt").read_text() == "hi\n"
    assert outside.read_text() == SECRET
    assert os.path.islink(ws / planted)  # left as it was


def test_edit_ignores_a_link_at_the_old_temporary_name(ws: Path, outside: Path) -> None:
    (ws / "hello.txt").write_text("hello\n")
    (ws / ".hello.txt.cox-tmp").symlink_to(outside)
    res = edit(ws, "hello.txt", "hello", "bye")
    assert res.ok, res.visible
    assert (ws / "hello.txt").read_text() == "bye\n"
    assert outside.read_text() == SECRET


def test_patch_ignores_links_at_temporary_names(ws: Path, outside: Path) -> None:
    (ws / "hello.txt").write_text("hello\n")
    for name in (".hello.txt.cox-tmp", ".hello.txt.cox-new", ".hello.txt.cox-old", ".new.txt.cox-new"):
        (ws / name).symlink_to(outside)
    res = patch(ws, "*** Update File: hello.txt", "@@", "-hello", "+bye", "*** Add File: new.txt", "+n")
    assert res.ok, res.visible
    assert (ws / "hello.txt").read_text() == "bye\n"
    assert (ws / "new.txt").read_text() == "n\n"
    assert outside.read_text() == SECRET


def test_temporary_names_are_random_and_cleaned_up(ws: Path) -> None:
    for i in range(3):
        assert write(ws, "f.txt", f"{i}\n").ok
    assert edit(ws, "f.txt", "2", "3").ok
    assert leftovers(ws) == []


# -- the target itself is a link -------------------------------------------------------------------


def test_write_to_a_link_out_of_the_workspace_is_refused(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside)
    with pytest.raises(PathEscape, match="through a symlink"):
        write(ws, "link.txt", "owned\n")
    assert outside.read_text() == SECRET


def test_edit_and_patch_through_a_link_out_of_the_workspace_are_refused(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside)
    with pytest.raises(PathEscape):
        edit(ws, "link.txt", "export", "owned")
    res = patch(ws, "*** Update File: link.txt", "@@", "-export PATH=/usr/bin  # the user's own", "+owned")
    assert not res.ok and "outside the workspace" in res.visible
    res = patch(ws, "*** Delete File: link.txt")
    assert not res.ok
    assert outside.read_text() == SECRET and os.path.islink(ws / "link.txt")


def test_write_to_a_link_inside_the_workspace_writes_its_target(ws: Path) -> None:
    """An in-workspace link is resolved like the kernel would: the real file changes (and it is
    that file the checkpoint saved), the link stays a link."""
    (ws / "real.txt").write_text("old\n")
    (ws / "link.txt").symlink_to("real.txt")
    assert write(ws, "link.txt", "new\n").ok
    assert (ws / "real.txt").read_text() == "new\n"
    assert os.readlink(ws / "link.txt") == "real.txt"


# -- a folder on the way is a link -----------------------------------------------------------------


def test_write_under_a_linked_folder_out_of_the_workspace_is_refused(ws: Path, outside: Path) -> None:
    (ws / "sub").symlink_to(outside.parent)
    with pytest.raises(PathEscape):
        write(ws, "sub/.bashrc", "owned\n")
    with pytest.raises(PathEscape):
        write(ws, "sub/new/deeper.txt", "owned\n")
    res = patch(ws, "*** Add File: sub/evil.txt", "+owned")
    assert not res.ok
    assert outside.read_text() == SECRET
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"]


def test_a_folder_swapped_for_a_link_after_confinement_is_not_followed(ws: Path, outside: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: the path was confined while ``sub`` was a folder, and a background command
    swapped it for a link before the write. The write refuses instead of following it."""
    import cox.actors.tools.files as files

    (ws / "sub").mkdir()
    real_resolve = files.resolve

    def racing(call_input, tool_env, key="path"):  # type: ignore[no-untyped-def]
        path = real_resolve(call_input, tool_env, key)
        (ws / "sub").rmdir()
        (ws / "sub").symlink_to(outside.parent)
        return path

    monkeypatch.setattr(files, "resolve", racing)
    res = write(ws, "sub/.bashrc", "owned\n")
    assert not res.ok
    assert "is a symlink" in res.visible and "nothing was written" in res.visible
    assert outside.read_text() == SECRET


def test_new_files_get_the_umask_and_existing_ones_keep_their_mode(ws: Path) -> None:
    old = os.umask(0o022)
    try:
        assert write(ws, "new/made.txt", "x\n").ok
        assert stat.S_IMODE((ws / "new" / "made.txt").stat().st_mode) == 0o644
        script = ws / "run.sh"
        script.write_text("#!/bin/sh\n")
        script.chmod(0o750)
        assert write(ws, "run.sh", "#!/bin/sh\necho\n").ok
        assert stat.S_IMODE(script.stat().st_mode) == 0o750
    finally:
        os.umask(old)


# -- cox.atomic itself -----------------------------------------------------------------------------


def test_write_atomic_replaces_a_link_at_the_target_and_never_writes_through_it(ws: Path, outside: Path) -> None:
    (ws / "a.txt").symlink_to(outside)
    write_atomic(ws / "a.txt", b"mine\n", follow=False, keep_mode=True)
    assert not os.path.islink(ws / "a.txt") and (ws / "a.txt").read_bytes() == b"mine\n"
    assert stat.S_IMODE((ws / "a.txt").stat().st_mode) == 0o600  # a link's target lends no mode
    assert outside.read_text() == SECRET


def test_write_atomic_strict_refuses_every_link_on_the_way(ws: Path, outside: Path) -> None:
    (ws / "deep").mkdir()
    (ws / "deep" / "sub").symlink_to(outside.parent)
    for target in (ws / "deep" / "sub" / "x", ws / "deep" / "sub" / "made" / "x"):
        with pytest.raises(LinkInTheWay, match=r"deep/sub is a symlink"):
            write_atomic(target, b"owned", follow=False, make_parents=True)
    with pytest.raises(LinkInTheWay):
        remove_file(ws / "deep" / "sub" / ".bashrc")
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"]
    assert outside.read_text() == SECRET


def test_write_atomic_following_mode_allows_the_users_own_links(tmp_path: Path) -> None:
    """cox's own files (``COX_HOME`` may be a link the user made) follow folder links, but still
    create their temporary file exclusively and rename it over the target."""
    real = tmp_path / "real-home"
    real.mkdir()
    (tmp_path / "home").symlink_to(real)
    write_atomic(tmp_path / "home" / "f.json", b"{}", fsync=True)
    assert (real / "f.json").read_bytes() == b"{}"
    assert stat.S_IMODE((real / "f.json").stat().st_mode) == 0o600


def test_remove_file_removes_a_link_not_its_target(ws: Path, outside: Path) -> None:
    (ws / "made.txt").symlink_to(outside)
    remove_file(ws / "made.txt")
    assert not os.path.lexists(ws / "made.txt")
    assert outside.read_text() == SECRET


def test_open_append_refuses_a_planted_link(ws: Path, outside: Path) -> None:
    (ws / "log.jsonl").symlink_to(outside)
    with pytest.raises(OSError):
        open_append(ws / "log.jsonl")
    with open_append(ws / "fresh.jsonl", text=True) as f:
        f.write("line\n")
    assert (ws / "fresh.jsonl").read_text() == "line\n"
    assert stat.S_IMODE((ws / "fresh.jsonl").stat().st_mode) == 0o600
    assert outside.read_text() == SECRET


def test_folder_walks_a_traverse_only_folder() -> None:
    """Folders are stepped through with O_PATH: a folder the user may only traverse (no read
    bit, as the security suite's set-up grants) does not stop a write below it. Root ignores
    permissions, so as root the write runs as the unprivileged test user."""
    import pwd
    import shutil
    import subprocess
    import sys
    import tempfile

    import cox

    base = Path(tempfile.mkdtemp(prefix="cox-traverse-", dir="/tmp"))  # a path the test user can reach
    gate = base / "gate"
    (gate / "ws").mkdir(parents=True)
    argv = [sys.executable, "-c", "import sys; from cox.atomic import write_atomic; "
            "write_atomic(sys.argv[1], b'x', follow=False)", str(gate / "ws" / "f.txt")]
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam(os.environ.get("COX_TEST_USER", "coxtest"))
        except KeyError:
            pytest.skip("as root this needs the unprivileged test user (scripts/test creates it)")
        os.chmod(base, 0o711)
        os.chown(gate / "ws", user.pw_uid, user.pw_gid)
        argv = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--", *argv]
    gate.chmod(0o311)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(Path(cox.__file__).resolve().parents[1])})
        assert proc.returncode == 0, proc.stderr
        assert (gate / "ws" / "f.txt").read_bytes() == b"x"
    finally:
        gate.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def test_temp_skips_a_name_that_is_taken(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([b"\x00" * 4, b"\x00" * 4, b"\x01" * 4])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    with Folder(ws) as folder:
        first = folder.temp("f", b"1")
        second = folder.temp("f", b"2")
    assert first != second
    assert (ws / first).read_bytes() == b"1" and (ws / second).read_bytes() == b"2"


def test_edit_refuses_a_fifo_instead_of_blocking_on_it(ws: Path) -> None:
    import threading

    os.mkfifo(ws / "pipe.txt")
    box: list[ToolResult] = []
    t = threading.Thread(target=lambda: box.append(edit(ws, "pipe.txt", "a", "b")), daemon=True)
    t.start()
    t.join(30)  # only a hang reaches this bound
    assert box, "edit blocked reading a FIFO"
    assert not box[0].ok and "not a regular file" in box[0].visible


def test_edit_does_not_read_a_file_swapped_for_a_link_after_confinement(ws: Path, outside: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the other way: ``a.txt`` was confined as a file, then swapped for a link to a
    secret. Reading through it would copy the secret into the workspace (and into the diff the
    model sees); the edit refuses instead."""
    import cox.actors.tools.edit as edit_module

    (ws / "a.txt").write_text("export\n")
    real_resolve = edit_module.resolve

    def racing(call_input, tool_env, key="path"):  # type: ignore[no-untyped-def]
        path = real_resolve(call_input, tool_env, key)
        (ws / "a.txt").unlink()
        (ws / "a.txt").symlink_to(outside)
        return path

    monkeypatch.setattr(edit_module, "resolve", racing)
    res = edit(ws, "a.txt", "export", "owned")
    assert not res.ok and "nothing was changed" in res.visible
    assert "PATH" not in res.visible  # not a byte of the secret
    assert os.path.islink(ws / "a.txt") and outside.read_text() == SECRET


def test_a_patch_reads_no_file_through_a_link(ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cox.actors.tools.patch import apply_patch as apply_text

    (ws / "a.txt").write_text("export\n")
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to(outside)
    text = "*** Begin Patch\n*** Update File: a.txt\n@@\n-export PATH=/usr/bin  # the user's own\n+x\n*** End Patch\n"
    with pytest.raises(Exception, match="Failed to read"):
        apply_text(text, lambda raw: ws / raw)  # a resolver that (wrongly) lets the link through
    assert outside.read_text() == SECRET


def test_links_inside_the_workspace_still_work(tmp_path: Path, ws: Path) -> None:
    """Confinement resolves links that stay inside the workspace (a folder alias, a workspace
    reached through a link): the write lands at the real path, through real folders only."""
    (ws / "real").mkdir()
    (ws / "alias").symlink_to("real")
    assert write(ws, "alias/x.txt", "x\n").ok
    assert (ws / "real" / "x.txt").read_text() == "x\n"
    (tmp_path / "ws-link").symlink_to(ws)
    linked = ToolEnv(roots=[tmp_path / "ws-link"], cwd=tmp_path / "ws-link", cancel=CancelScope())
    res = WriteTool().call(ToolCall(id="t", name="write", input={"path": "y.txt", "content": "y\n"}), linked)
    assert res.ok, res.visible
    assert (ws / "y.txt").read_text() == "y\n"
    res = EditTool().call(ToolCall(id="t", name="edit", input={"path": "alias/x.txt", "old_string": "x",
                                                               "new_string": "z"}), linked)
    assert res.ok, res.visible
    assert (ws / "real" / "x.txt").read_text() == "z\n"
