"""The line scanner that gives tomllib's values their line numbers."""

from __future__ import annotations

import tomllib

from cox.config.lines import key_lines, line_of


def test_tables_keys_dotted_keys_and_quoted_keys() -> None:
    text = (
        "top = 1\n"                       # 1
        "a.b.c = 2\n"                     # 2
        "\n"                              # 3
        "[sec]  # [not.a.table]\n"        # 4
        'k = "v # not a comment"\n'       # 5
        '"quoted.key" = 1\n'              # 6
        "'lit' = 2\n"                     # 7
        "[ sec . sub ]\n"                 # 8
        "x = 3\n"                         # 9
        "[[aot]]\n"                       # 10
        "y = 4\n"                         # 11
    )
    tomllib.loads(text)
    lines = key_lines(text)
    assert lines[("top",)] == 1
    assert lines[("a",)] == 2 and lines[("a", "b")] == 2 and lines[("a", "b", "c")] == 2
    assert lines[("sec",)] == 4 and lines[("sec", "k")] == 5
    assert lines[("sec", "quoted.key")] == 6 and lines[("sec", "lit")] == 7
    assert lines[("sec", "sub")] == 8 and lines[("sec", "sub", "x")] == 9
    assert lines[("aot",)] == 10 and lines[("aot", "y")] == 11
    assert ("not", "a", "table") not in lines


def test_arrays_inline_tables_and_multiline_strings() -> None:
    text = (
        "rules = [\n"                     # 1
        '  "a", # first\n'                # 2
        "  # a comment, with [brackets]\n"  # 3
        "  'b',\n"                        # 4
        '  """c\n'                        # 5
        'still = c"""]\n'                 # 6
        "nested = [[1, 2],\n"             # 7
        "  [3]]\n"                        # 8
        "t = { a = 1, b = { c = [\n"      # 9
        "  2] } }\n"                      # 10
        "s = '''\n"                       # 11
        "fake = 1\n"                      # 12
        "[fake]\n"                        # 13
        "'''\n"                           # 14
        'e = "esc \\" q = 1"\n'           # 15
        "after = 1\n"                     # 16
    )
    data = tomllib.loads(text)
    assert data["rules"] == ["a", "b", "c\nstill = c"]
    lines = key_lines(text)
    assert [lines[("rules", i)] for i in range(3)] == [2, 4, 5]
    assert lines[("nested", 0)] == 7 and lines[("nested", 1)] == 8 and lines[("nested", 0, 1)] == 7
    assert lines[("t", "a")] == 9 and lines[("t", "b", "c")] == 9 and lines[("t", "b", "c", 0)] == 10
    assert lines[("s",)] == 11 and ("fake",) not in lines
    assert lines[("e",)] == 15 and lines[("after",)] == 16


def test_crlf_and_values_of_every_kind() -> None:
    text = "[x]\r\nd = 1979-05-27 07:32:00Z\r\nf = -1.5e3\r\nb = true\r\ni = 0x1F\r\nz = 1\r\n"
    tomllib.loads(text)
    lines = key_lines(text)
    assert [lines[("x", k)] for k in "dfbiz"] == [2, 3, 4, 5, 6]


def test_line_of_falls_back_to_the_enclosing_key() -> None:
    lines = key_lines("[a]\nb = { c = 1 }\n")
    assert line_of(lines, ("a", "b", "c")) == 2
    assert line_of(lines, ("a", "zzz")) == 1
    assert line_of(lines, ("nope",)) is None


def test_scanner_never_raises_on_text_it_does_not_understand() -> None:
    assert key_lines("[ok]\nx = 1\n[unclosed\ny = ") == {("ok",): 1, ("ok", "x"): 2}
    assert key_lines("= 1") == {}
