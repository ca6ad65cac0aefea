"""Property: a patch made from (old, new) by a simple diff of our own turns old into new.

The diff here is written for the test (difflib's opcodes grouped with 3 lines of context, each
group one ``@@`` chunk), not taken from the applier, so the two check each other. Old lines are
unique so that every chunk's lines occur once in the file: with repeats a context-located
format can legitimately pick an earlier copy (that is what ``@@ header`` lines are for).
"""

from __future__ import annotations

import difflib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cox.actors.tools.patch import apply_patch, parse_patch
from cox.policy.paths import confine

LINE = st.text(alphabet="ab -*@+#\t\u2013\u201c", max_size=6)


def make_patch(path: str, old: list[str], new: list[str]) -> str:
    out = ["*** Begin Patch", f"*** Update File: {path}"]
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        out.append("@@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + x for x in old[i1:i2])
                continue
            out.extend("-" + x for x in old[i1:i2])
            out.extend("+" + x for x in new[j1:j2])
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def text_of(lines: list[str]) -> str:
    return "".join(x + "\n" for x in lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.lists(LINE, max_size=25, unique=True), new=st.lists(LINE, max_size=25))
def test_generated_patch_turns_old_into_new(old: list[str], new: list[str]) -> None:
    assume(old != new)
    text = make_patch("f.txt", old, new)
    parse_patch(text)  # a generated patch always parses
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "f.txt").write_text(text_of(old), encoding="utf-8")
        apply_patch(text, lambda raw: confine(raw, [root], cwd=root))
        assert (root / "f.txt").read_text(encoding="utf-8") == text_of(new)


@settings(max_examples=100, deadline=None)
@given(old=st.lists(LINE, min_size=1, max_size=15, unique=True), new=st.lists(LINE, max_size=15))
def test_crlf_files_round_trip_as_crlf(old: list[str], new: list[str]) -> None:
    assume(old != new and not any("\r" in x for x in old + new))
    text = make_patch("w.txt", old, new)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "w.txt").write_bytes("".join(x + "\r\n" for x in old).encode("utf-8"))
        apply_patch(text, lambda raw: confine(raw, [root], cwd=root))
        assert (root / "w.txt").read_bytes() == "".join(x + "\r\n" for x in new).encode("utf-8")
