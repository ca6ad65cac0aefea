"""The agent files' front-matter reader: what real files use, and garbage that must only ever be
a FrontMatterError naming its line (never another exception, never a hang)."""

from __future__ import annotations

import random

import pytest

from cox.agents.frontmatter import Block, FrontMatterError, split


def fm(body: str) -> dict[str, object]:
    fields, _ = split("---\n" + body + "---\nprompt\n")
    return {k: v for k, (_, v) in fields.items()}


def test_plain_values_comments_and_folded_continuations() -> None:
    got = fm("name: a\ntools: Read, Grep  # Optional - inherits all tools if omitted\n"
             "description: Use for C# code: it knows\n  the idioms\nmodel:\n")
    assert got == {"name": "a", "tools": "Read, Grep", "description": "Use for C# code: it knows the idioms",
                   "model": None}


def test_quoted_values_with_escapes() -> None:
    got = fm('description: "Use this agent when...\\n\\nExamples: <example>a: b</example>"\n'
             "name: 'it''s'\nx: \"\\u00e9\\t\\\"q\\\"\"\n")
    assert got["description"] == "Use this agent when...\n\nExamples: <example>a: b</example>"
    assert got["name"] == "it's"
    assert got["x"] == 'é\t"q"'


def test_lists_block_scalars_and_nested_blocks() -> None:
    got = fm("tools:\n  - Read\n  - \"Bash\"\nflow: [Read, 'Grep', Bash(git diff:*, git log:*)]\n"
             "same:\n- a\n- b\nlit: |\n  one\n    two\nfold: >-\n  a\n  b\n\n  c\n"
             "hooks:\n  PreToolUse:\n    - matcher: \"Bash\"\n")
    assert got["tools"] == ["Read", "Bash"]
    assert got["flow"] == ["Read", "Grep", "Bash(git diff:*, git log:*)"]
    assert got["same"] == ["a", "b"]
    assert got["lit"] == "one\n  two"
    assert got["fold"] == "a b\nc"
    assert isinstance(got["hooks"], Block) and got["hooks"].line == 17


def test_body_is_what_follows_the_closing_line_and_crlf_and_bom_are_fine() -> None:
    fields, body = split("\ufeff---\r\nname: a\r\n---\r\n\r\nYou are a.\r\nSecond line.\r\n")
    assert fields == {"name": (2, "a")} and body == "You are a.\nSecond line."


@pytest.mark.parametrize(("text", "line", "why"), [
    ("no front matter\n", 1, "no front matter"),
    ("", 1, "no front matter"),
    ("---\nname: a\n", 1, "never closed"),
    ("---\nname: a\nname: b\n---\n", 3, "given twice"),
    ("---\nname: a\njust words\n---\n", 3, "expected 'key: value'"),
    ("---\n  indented: x\n---\n", 2, "continues no field"),
    ('---\ndescription: "open\n---\n', 2, "never closed"),
    ('---\ndescription: "a" b\n---\n', 2, "after the closing quote"),
    ('---\ndescription: "\\q"\n---\n', 2, "unknown escape"),
    ('---\ndescription: "\\uZZZZ"\n---\n', 2, "bad \\u escape"),
    ("---\ntools: [Read, Grep\n---\n", 2, "never closed"),
    ("---\ntools: [Read] x\n---\n", 2, "after the closing"),
])
def test_garbage_is_an_error_naming_the_line(text: str, line: int, why: str) -> None:
    with pytest.raises(FrontMatterError) as err:
        split(text)
    assert err.value.line == line and why in err.value.reason


def test_random_garbage_never_raises_anything_else() -> None:
    rng = random.Random(14)
    alphabet = "---\n :#'\"[]{}(),|>-\\ux\t&*!abc"
    for _ in range(3000):
        text = "---\n" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) + "\n---\n"
        try:
            split(text)
        except FrontMatterError:
            pass
