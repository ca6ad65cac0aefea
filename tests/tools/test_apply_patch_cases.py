"""cox's own apply_patch cases, on real files in temp folders: every kind of hunk, the four
seek passes, all-or-nothing refusals, confinement, line endings and parse errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.tools.patch import (
    PatchApplyError,
    PatchError,
    PatchOutcome,
    PatchParseError,
    apply_patch,
    commit,
    parse_patch,
    seek_sequence,
    writer,
)
from cox.atomic import Folder
from cox.policy.paths import confine


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def put(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def apply(root: Path, text: str, dry_run: bool = False) -> PatchOutcome:
    return apply_patch(text, lambda raw: confine(raw, [root], cwd=root), dry_run=dry_run)


def refused(root: Path, text: str, *needles: str) -> str:
    before = tree(root)
    with pytest.raises(PatchError) as info:
        apply(root, text)
    assert tree(root) == before, "a refused patch must leave every file as it was"
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


# -- adds and deletes -----------------------------------------------------------------------------

def test_add_creates_parent_folders(ws: Path) -> None:
    out = apply(ws, patch("*** Add File: a/b/c.txt", "+one", "+two"))
    assert (ws / "a/b/c.txt").read_text() == "one\ntwo\n"
    assert out.summary == "Success. Updated the following files:\nA a/b/c.txt\n"


def test_blank_lines_inside_an_added_file_are_empty_lines(ws: Path) -> None:
    apply(ws, patch("*** Add File: a.md", "+# title", "", "+body", "", "*** Delete File: a.md", "*** Add File: a.md",
                    "+# title", "", "", "+body"))
    assert (ws / "a.md").read_text() == "# title\n\n\nbody\n"


def test_add_with_no_lines_makes_an_empty_file(ws: Path) -> None:
    apply(ws, patch("*** Add File: empty.txt"))
    assert (ws / "empty.txt").read_bytes() == b""


def test_delete_file(ws: Path) -> None:
    put(ws, "gone.txt", "bye\n")
    put(ws, "keep.txt", "stay\n")
    out = apply(ws, patch("*** Delete File: gone.txt"))
    assert tree(ws) == {"keep.txt": b"stay\n"}
    assert out.summary.endswith("D gone.txt\n")
    assert "(file deleted, 1 line)" in out.diff()


def test_delete_missing_file_is_refused(ws: Path) -> None:
    put(ws, "a.txt", "a\n")
    refused(ws, patch("*** Delete File: nope.txt"), "Failed to delete file nope.txt", "no such file")


# -- moves ------------------------------------------------------------------------------------

def test_move_with_edit(ws: Path) -> None:
    put(ws, "src/old.py", "x = 1\ny = 2\n")
    out = apply(ws, patch("*** Update File: src/old.py", "*** Move to: lib/new.py", "@@", " x = 1", "-y = 2",
                          "+y = 3"))
    assert tree(ws) == {"lib/new.py": b"x = 1\ny = 3\n"}
    assert out.summary == "Success. Updated the following files:\nM lib/new.py\n"
    assert "--- a/src/old.py" in out.diff() and "+++ b/lib/new.py" in out.diff()


def test_move_without_edit_is_a_rename(ws: Path) -> None:
    put(ws, "a.txt", "same\n")
    out = apply(ws, patch("*** Update File: a.txt", "*** Move to: b/a.txt"))
    assert tree(ws) == {"b/a.txt": b"same\n"}
    assert "(moved, content unchanged)" in out.diff()


def test_move_keeps_permission_bits(ws: Path) -> None:
    src = put(ws, "run.sh", "echo hi\n")
    src.chmod(0o755)
    apply(ws, patch("*** Update File: run.sh", "*** Move to: bin/run.sh", "@@", "-echo hi", "+echo ho"))
    assert (ws / "bin/run.sh").stat().st_mode & 0o777 == 0o755


def test_update_keeps_permission_bits(ws: Path) -> None:
    f = put(ws, "tool", "a\n")
    f.chmod(0o750)
    apply(ws, patch("*** Update File: tool", "@@", "-a", "+b"))
    assert f.stat().st_mode & 0o777 == 0o750


# -- hunks -------------------------------------------------------------------------------------

def test_several_hunks_in_one_file(ws: Path) -> None:
    put(ws, "f.txt", "".join(f"line{i}\n" for i in range(1, 21)))
    apply(ws, patch("*** Update File: f.txt", "@@", " line2", "-line3", "+LINE3", " line4",
                    "@@", " line10", "-line11", "+LINE11", "@@", "-line20", "+LINE20"))
    text = (ws / "f.txt").read_text().splitlines()
    assert text[2] == "LINE3" and text[10] == "LINE11" and text[19] == "LINE20" and len(text) == 20


def test_several_files_in_one_patch(ws: Path) -> None:
    put(ws, "a.txt", "a1\na2\n")
    put(ws, "b.txt", "b1\n")
    out = apply(ws, patch("*** Add File: c.txt", "+c1", "*** Update File: a.txt", "@@", "-a2", "+A2",
                          "*** Delete File: b.txt"))
    assert tree(ws) == {"a.txt": b"a1\nA2\n", "c.txt": b"c1\n"}
    assert out.summary == "Success. Updated the following files:\nA c.txt\nM a.txt\nD b.txt\n"


def test_first_chunk_may_omit_its_at_at(ws: Path) -> None:
    put(ws, "f.py", "import os\n")
    apply(ws, patch("*** Update File: f.py", " import os", "+import sys"))
    assert (ws / "f.py").read_text() == "import os\nimport sys\n"


def test_end_of_file_marker_anchors_to_the_end(ws: Path) -> None:
    put(ws, "f.txt", "end\nmiddle\nend\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "-end", "+END", "*** End of File"))
    assert (ws / "f.txt").read_text() == "end\nmiddle\nEND\n"


def test_end_of_file_marker_refuses_lines_not_at_the_end(ws: Path) -> None:
    put(ws, "f.txt", "a\nb\nc\n")
    refused(ws, patch("*** Update File: f.txt", "@@", "-a", "+A", "*** End of File"),
            "Failed to find expected lines in f.txt", "End of File")


def test_context_header_selects_the_function(ws: Path) -> None:
    put(ws, "m.py", "def foo():\n    return 1\n\ndef bar():\n    return 1\n")
    apply(ws, patch("*** Update File: m.py", "@@ def bar():", "-    return 1", "+    return 2"))
    assert (ws / "m.py").read_text() == "def foo():\n    return 1\n\ndef bar():\n    return 2\n"


def test_context_header_not_found(ws: Path) -> None:
    put(ws, "m.py", "def foo():\n    return 1\n")
    refused(ws, patch("*** Update File: m.py", "@@ def fooo():", "-    return 1", "+    return 2"),
            "Failed to find context '@@ def fooo():' in m.py", "1: 'def foo():'")


def test_git_style_range_header_is_read_as_context(ws: Path) -> None:
    put(ws, "m.py", "class A:\n    x = 1\nclass B:\n    x = 1\n")
    apply(ws, patch("*** Update File: m.py", "@@ -3,2 +3,2 @@ class B:", "-    x = 1", "+    x = 2"))
    assert (ws / "m.py").read_text() == "class A:\n    x = 1\nclass B:\n    x = 2\n"


def test_pure_addition_after_context_header_goes_right_after_it(ws: Path) -> None:
    put(ws, "m.py", "def f():\n    pass\n")
    apply(ws, patch("*** Update File: m.py", "@@ def f():", "+    '''doc'''"))
    assert (ws / "m.py").read_text() == "def f():\n    '''doc'''\n    pass\n"


def test_pure_addition_without_context_appends(ws: Path) -> None:
    put(ws, "f.txt", "a\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "+b"))
    assert (ws / "f.txt").read_text() == "a\nb\n"


def test_deleting_every_line_leaves_an_empty_file(ws: Path) -> None:
    put(ws, "f.txt", "a\nb\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "-a", "-b"))
    assert (ws / "f.txt").read_bytes() == b""


def test_blank_lines_between_chunks_are_separators(ws: Path) -> None:
    put(ws, "f.txt", "a\nb\nc\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "-a", "+A", "", "", "@@", "-c", "+C"))
    assert (ws / "f.txt").read_text() == "A\nb\nC\n"


def test_trailing_empty_context_line_stands_for_the_final_newline(ws: Path) -> None:
    put(ws, "f.txt", "x\ny\n")
    apply(ws, patch("*** Update File: f.txt", "@@", " x", "-y", "+z", " "))
    assert (ws / "f.txt").read_text() == "x\nz\n"


def test_add_then_update_in_one_patch(ws: Path) -> None:
    apply(ws, patch("*** Add File: n.txt", "+one", "*** Update File: n.txt", "@@", "-one", "+two"))
    assert (ws / "n.txt").read_text() == "two\n"


def test_delete_then_add_same_path(ws: Path) -> None:
    put(ws, "r.txt", "old\n")
    apply(ws, patch("*** Delete File: r.txt", "*** Add File: r.txt", "+new"))
    assert (ws / "r.txt").read_text() == "new\n"


def test_unicode_content(ws: Path) -> None:
    put(ws, "u.txt", "héllo wörld\n日本\n")
    apply(ws, patch("*** Update File: u.txt", "@@", "-日本", "+日本語 ✅"))
    assert (ws / "u.txt").read_text(encoding="utf-8") == "héllo wörld\n日本語 ✅\n"


# -- the fuzzy passes --------------------------------------------------------------------------

def test_pass_2_ignores_trailing_whitespace(ws: Path) -> None:
    put(ws, "f.txt", "alpha   \nbeta\t\n")
    out = apply(ws, patch("*** Update File: f.txt", "@@", " alpha", "-beta", "+gamma"))
    assert (ws / "f.txt").read_text() == "alpha\ngamma\n"  # context lines come from the patch, like Codex
    assert out.plan.fuzz == ["f.txt patch line 3: lines found ignoring trailing whitespace"]


def test_pass_3_ignores_surrounding_whitespace(ws: Path) -> None:
    put(ws, "f.py", "if x:\n        call()\n")
    out = apply(ws, patch("*** Update File: f.py", "@@", "-    call()", "+    other()"))
    assert (ws / "f.py").read_text() == "if x:\n    other()\n"
    assert "ignoring surrounding whitespace" in out.plan.fuzz[0]


def test_pass_4_reads_typographic_punctuation_as_ascii(ws: Path) -> None:
    put(ws, "doc.md", "It\u2019s a \u201cquote\u201d \u2014 and\u00a0more\n")
    out = apply(ws, patch("*** Update File: doc.md", "@@", "-It's a \"quote\" - and more", "+plain"))
    assert (ws / "doc.md").read_text() == "plain\n"
    assert "typographic" in out.plan.fuzz[0]


def test_exact_match_wins_over_an_earlier_fuzzy_one(ws: Path) -> None:
    put(ws, "f.txt", "x  \ny\nx\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "-x", "+X"))
    assert (ws / "f.txt").read_text() == "x  \ny\nX\n"


@pytest.mark.parametrize(("lines", "pattern", "start", "eof", "expected"), [
    (["a", "b", "c"], ["b", "c"], 0, False, (1, 0)),
    (["a ", "b"], ["a", "b"], 0, False, (0, 1)),
    ([" a", "b "], ["a", "b"], 0, False, (0, 2)),
    (["\u2013x\u201d"], ['-x"'], 0, False, (0, 3)),
    (["a", "b", "a"], ["a"], 1, False, (2, 0)),
    (["a", "b", "a"], ["a"], 0, True, (2, 0)),
    (["a"], [], 0, False, (0, 0)),
])
def test_seek_sequence(lines: list[str], pattern: list[str], start: int, eof: bool,
                       expected: tuple[int, int]) -> None:
    found = seek_sequence(lines, pattern, start, eof)
    assert found is not None and (found.index, found.pass_) == expected


def test_seek_sequence_longer_pattern_and_miss() -> None:
    assert seek_sequence(["a"], ["a", "b"]) is None
    assert seek_sequence(["a", "b"], ["c"]) is None


# -- refusals: whole patch, clear messages -----------------------------------------------------

def test_patch_refused_whole_when_second_file_does_not_match(ws: Path) -> None:
    first = put(ws, "one.txt", "keep me\n")
    put(ws, "two.txt", "real line\n")
    mtime = first.stat().st_mtime_ns
    refused(ws, patch("*** Update File: one.txt", "@@", "-keep me", "+changed",
                      "*** Update File: two.txt", "@@", "-imagined line", "+x"),
            "Failed to find expected lines in two.txt", "imagined line")
    assert first.read_text() == "keep me\n" and first.stat().st_mtime_ns == mtime


def test_add_is_not_written_when_a_later_hunk_fails(ws: Path) -> None:
    refused(ws, patch("*** Add File: created.txt", "+hello", "*** Update File: missing.txt", "@@", "-a", "+b"),
            "Failed to read file to update missing.txt")
    assert not (ws / "created.txt").exists()


def test_mismatch_shows_closest_match_and_first_differing_line(ws: Path) -> None:
    put(ws, "f.py", "def f():\n    a = 1\n    b = 2\n    return a + b\n")
    message = refused(ws, patch("*** Update File: f.py", "@@", " def f():", "     a = 1", "-    b = 3",
                                "+    b = 4"))
    assert "Closest match: lines 1-2 match the first 2 of 3 hunk lines" in message
    assert "expected: '    b = 3'" in message and "found:    '    b = 2'  (line 3)" in message


def test_mismatch_without_partial_run_lists_nearest_lines(ws: Path) -> None:
    put(ws, "f.py", "alpha = compute(1)\nbeta = 2\n")
    message = refused(ws, patch("*** Update File: f.py", "@@", "-alpha = compute(2)", "+x"))
    assert "nearest lines" in message and "1: 'alpha = compute(1)'" in message


def test_hunks_out_of_order_are_explained(ws: Path) -> None:
    put(ws, "f.txt", "a\nb\nc\n")
    refused(ws, patch("*** Update File: f.txt", "@@", "-c", "+C", "@@", "-a", "+A"), "hunk 2 of 2",
            "must be in file order")


def test_path_escape_is_refused(ws: Path) -> None:
    refused(ws, patch("*** Add File: ../outside.txt", "+x"), "Refused path '../outside.txt'", "outside the workspace")
    assert not (ws.parent / "outside.txt").exists()


def test_absolute_path_outside_and_move_outside_are_refused(ws: Path, tmp_path: Path) -> None:
    put(ws, "a.txt", "a\n")
    refused(ws, patch("*** Delete File: /etc/hostname"), "outside the workspace")
    refused(ws, patch("*** Update File: a.txt", f"*** Move to: {tmp_path}/stolen.txt", "@@", "-a", "+b"),
            "outside the workspace")
    assert not (tmp_path / "stolen.txt").exists()


def test_symlink_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    secret = put(tmp_path, "secret.txt", "s\n")
    (ws / "link.txt").symlink_to(secret)
    refused(ws, patch("*** Update File: link.txt", "@@", "-s", "+pwned"), "through a symlink")
    assert secret.read_text() == "s\n"


def test_binary_file_update_is_refused(ws: Path) -> None:
    put(ws, "img.bin", b"\x89PNG\x00\x01\x02")
    refused(ws, patch("*** Update File: img.bin", "@@", "-x", "+y"), "binary file", "text files only")


def test_binary_file_can_be_deleted(ws: Path) -> None:
    put(ws, "img.bin", b"\x00\xff")
    out = apply(ws, patch("*** Delete File: img.bin"))
    assert tree(ws) == {} and "(binary file deleted)" in out.diff()


def test_update_of_a_folder_is_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    refused(ws, patch("*** Update File: d", "@@", "-a", "+b"), "Failed to read file to update d", "folder")


def test_add_under_a_file_is_refused(ws: Path) -> None:
    put(ws, "f", "x\n")
    refused(ws, patch("*** Add File: f/child.txt", "+x"), "is a file, not a folder")


# -- line endings ------------------------------------------------------------------------------

def test_crlf_file_keeps_crlf(ws: Path) -> None:
    put(ws, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    apply(ws, patch("*** Update File: w.txt", "@@", " one", "-two", "+TWO", "+2.5"))
    assert (ws / "w.txt").read_bytes() == b"one\r\nTWO\r\n2.5\r\nthree\r\n"


def test_crlf_patch_text_applies_to_lf_file(ws: Path) -> None:
    put(ws, "f.txt", "a\nb\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "-a", "+A").replace("\n", "\r\n"))
    assert (ws / "f.txt").read_bytes() == b"A\nb\n"


def test_file_without_trailing_newline_keeps_lacking_it(ws: Path) -> None:
    put(ws, "n.txt", "first\nlast")
    apply(ws, patch("*** Update File: n.txt", "@@", "-first", "+FIRST"))
    assert (ws / "n.txt").read_bytes() == b"FIRST\nlast"


def test_file_without_trailing_newline_edited_at_its_end(ws: Path) -> None:
    put(ws, "n.txt", "a\nb")
    apply(ws, patch("*** Update File: n.txt", "@@", " a", "-b", "+B", "+c", "*** End of File"))
    assert (ws / "n.txt").read_bytes() == b"a\nB\nc"


# -- parse errors ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "needle"), [
    ("", "The first line of the patch must be '*** Begin Patch'"),
    ("*** Update File: a\n@@\n-a\n+b\n*** End Patch", "The first line of the patch must be '*** Begin Patch'"),
    ("*** Begin Patch\n*** Add File: a\n+x\n", "The last line of the patch must be '*** End Patch'"),
    (patch("*** Frobnicate File: a"), "line 2: '*** Frobnicate File: a' is not a valid hunk header"),
    (patch("*** Add File:"), "'*** Add File:' needs a path"),
    (patch("*** Update File: a"), "Update file hunk for path 'a' is empty"),
    (patch("*** Update File: a", "@@", "x"), "line 4: Unexpected line found in update hunk: 'x'"),
    (patch("*** Update File: a", "@@", "-a", "*** End of File", "junk"), "Expected update hunk to start with a @@ context marker, got: 'junk'"),
    (patch("*** Update File: a", "*** Move to:", "@@", "-a"), "'*** Move to:' needs a path"),
    (patch("*** Add File: a", "+x", "-y"), "line 4: '-y' is outside any hunk"),
])
def test_malformed_patches_have_clear_messages(text: str, needle: str) -> None:
    with pytest.raises(PatchParseError) as info:
        parse_patch(text)
    assert needle in str(info.value)


def test_empty_patch_is_refused(ws: Path) -> None:
    put(ws, "a.txt", "a\n")
    refused(ws, patch(), "No files were modified.")


def test_heredoc_wrapped_patch_is_accepted(ws: Path) -> None:
    put(ws, "f.txt", "a\n")
    apply(ws, "<<'EOF'\n" + patch("*** Update File: f.txt", "@@", "-a", "+b") + "EOF\n")
    assert (ws / "f.txt").read_text() == "b\n"


def test_padded_markers_are_accepted(ws: Path) -> None:
    put(ws, "f.txt", "a\n")
    apply(ws, "  *** Begin Patch \n *** Update File: f.txt  \n@@\n-a\n+b\n *** End Patch  \n")
    assert (ws / "f.txt").read_text() == "b\n"


# -- all-or-nothing writing --------------------------------------------------------------------

def test_dry_run_writes_nothing(ws: Path) -> None:
    put(ws, "f.txt", "a\n")
    out = apply(ws, patch("*** Update File: f.txt", "@@", "-a", "+b", "*** Add File: g.txt", "+g"), dry_run=True)
    assert tree(ws) == {"f.txt": b"a\n"}
    assert out.plan.writes == {ws / "f.txt": b"b\n", ws / "g.txt": b"g\n"}


def test_no_temp_files_are_left_behind(ws: Path) -> None:
    put(ws, "f.txt", "a\n")
    put(ws, "d.txt", "d\n")
    apply(ws, patch("*** Update File: f.txt", "@@", "-a", "+b", "*** Delete File: d.txt", "*** Add File: n/x", "+x"))
    assert sorted(p.name for p in ws.rglob("*")) == ["f.txt", "n", "x"]


def test_failed_replace_puts_back_files_already_replaced(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put(ws, "a.txt", "a\n")
    put(ws, "b.txt", "b\n")
    put(ws, "c.txt", "c\n")
    text = patch("*** Update File: a.txt", "@@", "-a", "+A", "*** Add File: new/n.txt", "+n",
                 "*** Update File: b.txt", "@@", "-b", "+B", "*** Delete File: c.txt")
    real_replace = Folder.replace
    calls = {"n": 0}

    def flaky(self: Folder, src: str, dst: str) -> None:
        if src.endswith(".cox-new"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError(28, "No space left on device")
        real_replace(self, src, dst)

    monkeypatch.setattr(Folder, "replace", flaky)
    before = tree(ws)
    with pytest.raises(PatchApplyError, match="every file was put back"):
        apply(ws, text)
    monkeypatch.undo()
    assert tree(ws) == before
    assert sorted(p.name for p in ws.rglob("*")) == ["a.txt", "b.txt", "c.txt"]  # no temp, no new/


def test_failed_staging_changes_nothing(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put(ws, "a.txt", "a\n")
    real_stage = writer._stage

    def flaky(folder: Folder, name: str, data: bytes, mode: int | None) -> str:
        if name == "z.txt":
            raise OSError(13, "Permission denied")
        return real_stage(folder, name, data, mode)

    monkeypatch.setattr(writer, "_stage", flaky)
    with pytest.raises(PatchApplyError, match="no file was changed"):
        apply(ws, patch("*** Update File: a.txt", "@@", "-a", "+A", "*** Add File: sub/z.txt", "+z"))
    assert sorted(p.name for p in ws.rglob("*")) == ["a.txt"]
    assert (ws / "a.txt").read_text() == "a\n"


def test_commit_is_reusable_for_a_checked_plan(ws: Path) -> None:
    put(ws, "f.txt", "a\n")
    out = apply(ws, patch("*** Update File: f.txt", "@@", "-a", "+b"), dry_run=True)
    commit(out.plan)
    assert (ws / "f.txt").read_text() == "b\n"
