"""``cox apply-patch`` through ``run(args)`` (and a throwaway argparse parser; the lead wires it
into ``cox.surfaces.cli``), and the detection of ``apply_patch <<'EOF'`` shell lines."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from cox.actors.tools.patch import detect_shell_apply_patch, parse_patch
from cox.actors.tools.patch.shell import ShellPatch
from cox.surfaces.patch_cli import add_parser, run

PATCH = "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cox")
    sub = p.add_subparsers(dest="command")
    add_parser(sub)
    return p


def cli(argv: list[str], stdin: str) -> tuple[int, str, str]:
    args = parser().parse_args(argv)
    assert args.command == "apply-patch"
    out, err = io.StringIO(), io.StringIO()
    return run(args, stdin=io.StringIO(stdin), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_cli_applies_in_cwd(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\n")
    code, out, err = cli(["apply-patch", "--cwd", str(tmp_path)], PATCH)
    assert (code, out, err) == (0, "Success. Updated the following files:\nM f.txt\n", "")
    assert (tmp_path / "f.txt").read_text() == "b\n"


def test_cli_defaults_to_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f.txt").write_text("a\n")
    monkeypatch.chdir(tmp_path)
    assert cli(["apply-patch"], PATCH)[0] == 0
    assert (tmp_path / "f.txt").read_text() == "b\n"


def test_cli_bad_patch_exits_1_with_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("zzz\n")
    code, out, err = cli(["apply-patch", "--cwd", str(tmp_path)],
                         PATCH.replace("*** End Patch", "*** Add File: g.txt\n+g\n*** End Patch"))
    assert code == 1 and out == ""
    assert err.startswith("cox: apply-patch: Failed to find expected lines in f.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_cli_malformed_patch(tmp_path: Path) -> None:
    code, _, err = cli(["apply-patch", "--cwd", str(tmp_path)], "hello\n")
    assert code == 1 and err.startswith("cox: apply-patch: Invalid patch: The first line of the patch")


def test_cli_confines_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    code, _, err = cli(["apply-patch", "--cwd", str(tmp_path / "ws")],
                       "*** Begin Patch\n*** Add File: ../out.txt\n+x\n*** End Patch\n")
    assert code == 1 and "outside the workspace" in err and not (tmp_path / "out.txt").exists()


def test_cli_cwd_must_be_a_folder(tmp_path: Path) -> None:
    code, _, err = cli(["apply-patch", "--cwd", str(tmp_path / "nope")], PATCH)
    assert code == 2 and "is not a folder" in err


# -- detect_shell_apply_patch ------------------------------------------------------------------

BODY = "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"


@pytest.mark.parametrize("line", [
    f"apply_patch <<'EOF'\n{BODY}\nEOF",
    f"apply_patch <<EOF\n{BODY}\nEOF\n",
    f'apply_patch <<"EOF"\n{BODY}\nEOF\n\n',
    f"applypatch <<'PATCH'\n{BODY}\nPATCH",
    f"  apply_patch << 'EOF'\n{BODY}\nEOF",
    f"apply_patch <<-'EOF'\n\t{BODY.replace(chr(10), chr(10) + chr(9))}\n\tEOF",
])
def test_heredoc_forms_are_recognised(line: str) -> None:
    found = detect_shell_apply_patch(line)
    assert found == ShellPatch(BODY + "\n", None)
    assert len(parse_patch(found.patch).hunks) == 1


@pytest.mark.parametrize(("line", "workdir"), [
    (f"cd src && apply_patch <<'EOF'\n{BODY}\nEOF", "src"),
    (f"cd 'my dir' && apply_patch <<'EOF'\n{BODY}\nEOF", "my dir"),
    (f'cd "/abs/path" && applypatch <<EOF\n{BODY}\nEOF', "/abs/path"),
])
def test_cd_prefix_gives_the_workdir(line: str, workdir: str) -> None:
    found = detect_shell_apply_patch(line)
    assert found is not None and found.workdir == workdir and found.patch == BODY + "\n"


@pytest.mark.parametrize("line", [
    "ls -la",
    f"cat <<'EOF'\n{BODY}\nEOF",
    f"echo hi; apply_patch <<'EOF'\n{BODY}\nEOF",
    f"apply_patch <<'EOF'\n{BODY}\nEOF\necho done",
    f"apply_patch <<'EOF' && make\n{BODY}\nEOF",
    f"apply_patch <<'EOF'\n{BODY}\nEOF\nrm -rf x\nEOF",
    f"cd src || apply_patch <<'EOF'\n{BODY}\nEOF",
    f'cd "$HOME" && apply_patch <<EOF\n{BODY}\nEOF',
    f"apply_patch <<'EOF'\n{BODY}",
    "apply_patch",
])
def test_other_lines_are_not_rerouted(line: str) -> None:
    assert detect_shell_apply_patch(line) is None


def test_unquoted_heredoc_body_is_taken_literally() -> None:
    body = "*** Begin Patch\n*** Add File: x.sh\n+echo $HOME `id`\n*** End Patch"
    found = detect_shell_apply_patch(f"apply_patch <<EOF\n{body}\nEOF")
    assert found is not None and "$HOME `id`" in found.patch
