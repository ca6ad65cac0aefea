"""edit: exact replacement against real files, and the refusals that keep it from guessing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.actors.tools.edit import EditTool, near_matches
from cox.policy.paths import PathEscape
from cox.protocol.types import Risk, ToolCall, ToolResult
from cox.supervisors import CancelScope


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    p = tmp_path / "ws"
    p.mkdir()
    return p.resolve()


def run(ws: Path, **inp: object) -> ToolResult:
    env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())
    return EditTool().call(ToolCall(id="t", name="edit", input=inp), env)


def test_replaces_one_match_and_shows_a_diff(ws: Path) -> None:
    f = ws / "a.py"
    f.write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    res = run(ws, path="a.py", old_string="    return 1\n", new_string="    return 10\n")
    assert res.ok, res.visible
    assert f.read_text() == "def f():\n    return 10\n\n\ndef g():\n    return 2\n"
    assert res.visible.startswith("edited a.py: 1 replacement (+1 −1)")
    assert "--- a/a.py" in res.visible and "+++ b/a.py" in res.visible
    assert "-    return 1" in res.visible and "+    return 10" in res.visible
    assert res.meta == {"replacements": 1, "added": 1, "removed": 1}


def test_missing_match_shows_nearest_candidates_with_line_numbers(ws: Path) -> None:
    f = ws / "m.py"
    body = "".join(f"line {i}\n" for i in range(1, 30)) + "def compute(total, count):\n    return total / count\n"
    f.write_text(body)
    res = run(ws, path="m.py", old_string="def compute(total, n):\n    return total / n\n", new_string="x")
    assert not res.ok
    assert "not found" in res.visible and "nothing was changed" in res.visible
    assert "lines 30–31" in res.visible
    assert "30\tdef compute(total, count):" in res.visible
    assert f.read_text() == body


def test_missing_match_that_differs_in_indentation_says_so(ws: Path) -> None:
    (ws / "i.py").write_text("if x:\n    do()\n")
    res = run(ws, path="i.py", old_string="if x:\n  do()", new_string="if y:\n  do()")
    assert not res.ok
    assert "different whitespace" in res.visible
    assert "lines 1–2" in res.visible


def test_old_string_with_read_line_numbers_is_explained(ws: Path) -> None:
    (ws / "n.py").write_text("alpha\nbeta\n")
    res = run(ws, path="n.py", old_string="1\talpha\n2\tbeta", new_string="gamma")
    assert not res.ok
    assert "line-number prefixes" in res.visible


def test_nothing_similar_says_to_read_again(ws: Path) -> None:
    (ws / "z.txt").write_text("aaaa\nbbbb\n")
    res = run(ws, path="z.txt", old_string="completely unrelated text here", new_string="x")
    assert not res.ok and "read the file again" in res.visible


def test_ambiguous_match_lists_count_and_lines(ws: Path) -> None:
    f = ws / "dup.txt"
    f.write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    res = run(ws, path="dup.txt", old_string="x = 1", new_string="x = 2")
    assert not res.ok
    assert "occurs 3 times" in res.visible
    assert "lines 1, 3, 5" in res.visible
    assert "replace_all" in res.visible
    assert f.read_text() == "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"


def test_replace_all_changes_every_match(ws: Path) -> None:
    f = ws / "dup.txt"
    f.write_text("x = 1\ny = 2\nx = 1\n")
    res = run(ws, path="dup.txt", old_string="x = 1", new_string="x = 9", replace_all=True)
    assert res.ok
    assert f.read_text() == "x = 9\ny = 2\nx = 9\n"
    assert res.meta["replacements"] == 2
    assert "2 replacements" in res.visible


def test_same_old_and_new_is_an_error(ws: Path) -> None:
    (ws / "s.txt").write_text("hello\n")
    res = run(ws, path="s.txt", old_string="hello", new_string="hello")
    assert not res.ok and "the same" in res.visible


def test_empty_old_string_and_missing_file_point_to_write(ws: Path) -> None:
    (ws / "e.txt").write_text("x\n")
    assert "use write" in run(ws, path="e.txt", old_string="", new_string="y").visible
    res = run(ws, path="nope.txt", old_string="a", new_string="b")
    assert not res.ok and "does not exist" in res.visible and "write" in res.visible


def test_folder_and_binary_are_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    assert "folder" in run(ws, path="d", old_string="a", new_string="b").visible
    (ws / "b.bin").write_bytes(b"ab\0cd")
    res = run(ws, path="b.bin", old_string="ab", new_string="xy")
    assert not res.ok and "binary" in res.visible
    assert (ws / "b.bin").read_bytes() == b"ab\0cd"


def test_crlf_file_stays_crlf(ws: Path) -> None:
    f = ws / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    res = run(ws, path="w.txt", old_string="one\ntwo\n", new_string="uno\ndos\nmas\n")
    assert res.ok, res.visible
    assert f.read_bytes() == b"uno\r\ndos\r\nmas\r\nthree\r\n"


def test_mixed_line_endings_outside_the_edit_are_kept_byte_for_byte(ws: Path) -> None:
    f = ws / "mix.txt"
    f.write_bytes(b"a\r\nb\nc\r\nd\r\n")
    res = run(ws, path="mix.txt", old_string="c", new_string="C")
    assert res.ok
    assert f.read_bytes() == b"a\r\nb\nC\r\nd\r\n"


def test_model_sending_crlf_matches_an_lf_file(ws: Path) -> None:
    f = ws / "lf.txt"
    f.write_text("a\nb\n")
    res = run(ws, path="lf.txt", old_string="a\r\nb", new_string="a\r\nB")
    assert res.ok
    assert f.read_bytes() == b"a\nB\n"


def test_encodings_are_kept(ws: Path) -> None:
    bom = ws / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9\n")
    assert run(ws, path="bom.txt", old_string="café", new_string="thé").ok
    assert bom.read_bytes() == b"\xef\xbb\xbfth\xc3\xa9\n"
    u16 = ws / "u16.txt"
    u16.write_bytes(b"\xff\xfe" + "hello world\n".encode("utf-16-le"))
    assert run(ws, path="u16.txt", old_string="world", new_string="there").ok
    assert u16.read_bytes() == b"\xff\xfe" + "hello there\n".encode("utf-16-le")
    latin = ws / "latin.txt"
    latin.write_bytes(b"na\xefve caf\xe9\n")  # Latin-1, not valid UTF-8
    assert run(ws, path="latin.txt", old_string="caf", new_string="CAF").ok
    assert latin.read_bytes() == b"na\xefve CAF\xe9\n"
    res = run(ws, path="latin.txt", old_string="CAF", new_string="日本")
    assert not res.ok and "encoding" in res.visible


def test_mode_is_kept_and_no_temp_file_is_left(ws: Path) -> None:
    f = ws / "run.sh"
    f.write_text("echo hi\n")
    os.chmod(f, 0o755)
    assert run(ws, path="run.sh", old_string="hi", new_string="there").ok
    assert f.stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in ws.iterdir()) == ["run.sh"]


def test_edit_through_a_symlink_changes_the_target(ws: Path) -> None:
    (ws / "real.txt").write_text("v1\n")
    (ws / "link.txt").symlink_to(ws / "real.txt")
    assert run(ws, path="link.txt", old_string="v1", new_string="v2").ok
    assert (ws / "link.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "v2\n"


def test_path_outside_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    with pytest.raises(PathEscape):
        run(ws, path=str(outside), old_string="secret", new_string="x")
    assert outside.read_text() == "secret\n"


def test_bad_input_types_raise_input_errors(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    with pytest.raises(ToolInputError):
        run(ws, path="a.txt", old_string=1, new_string="b")
    with pytest.raises(ToolInputError):
        run(ws, path="a.txt", old_string="a", new_string="b", replace_all="yes")


def test_contract_risk_subject_writes(ws: Path) -> None:
    env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())
    tool = EditTool()
    call = ToolCall(id="t", name="edit", input={"path": "x/y.py", "old_string": "a", "new_string": "b"})
    described = tool.describe(call, env)
    assert described.risk is Risk.WRITE
    assert described.subject == str(ws / "x" / "y.py")
    assert tool.writes(call, env) == [ws / "x" / "y.py"]
    assert tool.parallel is False


def test_near_matches_picks_the_best_non_overlapping_windows() -> None:
    text = "alpha = 1\nbeta = 2\ngamma = 3\nalpha = 11\n"
    found = near_matches(text, "alpha = 111")
    assert [f[0] for f in found][:2] == [4, 1]
    assert all(0.5 <= f[2] <= 1 for f in found)


# -- several edits in one call (Claude Code's MultiEdit) ---------------------------------------------


def test_edits_apply_in_order_each_to_the_result_of_the_one_before(ws: Path) -> None:
    f = ws / "a.py"
    f.write_text("alpha\r\nbeta\r\ngamma\r\n")
    res = run(ws, path="a.py", edits=[{"old_string": "alpha", "new_string": "ALPHA\nnew"},
                                      {"old_string": "ALPHA\nnew\nbeta", "new_string": "joined"},
                                      {"old_string": "a", "new_string": "A", "replace_all": True}])
    assert res.ok, res.visible
    assert f.read_bytes() == b"joined\r\ngAmmA\r\n"  # the second saw the first's text; CRLF kept
    assert res.visible.startswith("edited a.py: 4 replacements in 3 edits (+")
    assert res.meta["edits"] == 3 and res.meta["replacements"] == 4


def test_one_failed_edit_changes_nothing_and_names_which_and_why(ws: Path) -> None:
    f = ws / "a.py"
    f.write_text("x = 1\ny = 2\ny = 2\n")
    before = f.read_bytes()
    res = run(ws, path="a.py", edits=[{"old_string": "x = 1", "new_string": "x = 10"},
                                      {"old_string": "y = 2", "new_string": "y = 20"}])
    assert res.status.value == "error"
    assert res.visible.startswith("edit 2 of 2 failed (in the file as the edits before it left it): "
                                  "old_string occurs 2 times in a.py (at lines 2, 3)")
    assert "None of the 2 edits was applied; a.py is unchanged." in res.visible
    assert f.read_bytes() == before
    missing = run(ws, path="a.py", edits=[{"old_string": "nope", "new_string": "z"},
                                          {"old_string": "x = 1", "new_string": "x = 10"}])
    assert missing.visible.startswith("edit 1 of 2 failed: old_string was not found in a.py")
    assert f.read_bytes() == before


def test_edits_input_is_checked_before_the_file_is_read(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    for bad, said in [({"edits": []}, "non-empty list"),
                      ({"edits": [{"old_string": "a"}]}, "edits[1] takes old_string, new_string and replace_all"),
                      ({"edits": [{"old_string": "a", "new_string": "b", "oops": 1}]}, "not 'oops'"),
                      ({"edits": [{"old_string": "a", "new_string": 2}]}, "edits[1]: 'old_string' and 'new_string'"),
                      ({"edits": [{"old_string": "a", "new_string": "b"}], "old_string": "a", "new_string": "b"},
                       "not both"),
                      ({}, "give old_string and new_string, or an edits list")]:
        with pytest.raises(ToolInputError, match=said.replace("[", r"\[").replace("]", r"\]")):
            run(ws, path="a.txt", **bad)
    assert (ws / "a.txt").read_text() == "a\n"


def test_the_schema_describes_edits() -> None:
    schema = EditTool.input_schema
    assert schema["required"] == ["path"]
    item = schema["properties"]["edits"]["items"]
    assert set(item["properties"]) == {"old_string", "new_string", "replace_all"}
    assert "edits" in EditTool.description and "all or nothing" in EditTool.description
