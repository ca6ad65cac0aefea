"""The line as bash reads it, where tree-sitter-bash reads it differently.

The splitter (:mod:`cox.policy.bash`) judges the commands of a parse tree, so wherever the grammar
and bash part ways the line is first rewritten (byte offsets kept where possible) into the form
bash itself would act on:

- characters outside the BMP are swapped for unused private-use ones (a crash of the grammar);
- backslash-newline is deleted where bash deletes it (``comm\\⏎and`` is ``command``);
- ``time`` or ``!`` before a compound command is blanked out (the grammar reads ``time { …; }``
  as a command named ``time``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

__all__ = ["GROUP_PREFIX", "joined", "parseable", "ungrouped"]

Parse = Callable[[bytes], "Tree"]


# tree-sitter-bash 0.25.1 can crash the process (SIGSEGV) on "{" followed by a character outside
# the BMP, a 4-byte UTF-8 sequence (tree-sitter/tree-sitter-bash#337, open upstream). Such
# characters (and lone surrogates) are swapped for private-use BMP characters the line does not
# use before parsing, and swapped back in every text taken from the tree. Both are plain word
# characters to the grammar, so the split is the same.
_ODD = re.compile("[\U00010000-\U0010ffff\ud800-\udfff]")


def parseable(line: str) -> tuple[str, dict[int, str] | None]:
    if line.isascii():
        return line, None
    odd = sorted(set(_ODD.findall(line)))
    if not odd:
        return line, None
    free = [chr(c) for c in range(0xE000, 0xF900) if chr(c) not in line][:len(odd)]
    if len(free) < len(odd):
        raise ValueError("too many distinct characters outside the BMP")
    return line.translate({ord(o): f for o, f in zip(odd, free, strict=True)}), \
        {ord(f): o for o, f in zip(odd, free, strict=True)}


# --- line continuations -------------------------------------------------------------------------
# bash deletes backslash-newline before it splits words, everywhere but inside single quotes,
# $'…', comments and the body of a here-document whose delimiter is quoted; the grammar takes it
# for a word break, so ``comm\⏎and rm -rf src`` would read as two words. The line is joined the
# way bash joins it and parsed again (until nothing changes: a join can move a quote or a ``#``).

_LITERAL_SPANS = frozenset({"raw_string", "ansi_c_string", "comment"})


def joined(src: bytes, tree: Tree, parse: Parse) -> tuple[bytes, Tree, str | None]:
    """``src`` with its line continuations removed, its tree, and why the line is opaque if the
    join cannot be vouched for."""
    why: str | None = None
    for _ in range(4):
        out, in_heredoc = _join_once(src, tree.root_node)
        if in_heredoc:
            why = "it continues a line inside a here-document"
        if out == src:
            return src, tree, why
        src = out
        tree = parse(src)
        if b"\\\n" not in src:
            return src, tree, why
    return src, tree, "its line continuations could not be followed"


def _join_once(src: bytes, root: Node) -> tuple[bytes, bool]:
    literal: list[tuple[int, int]] = []
    heredocs: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _LITERAL_SPANS:
            literal.append((node.start_byte, node.end_byte))
            continue
        if node.type == "heredoc_redirect":
            start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
            quoted = start is not None and any(q in src[start.start_byte:start.end_byte] for q in (b"'", b'"', b"\\"))
            for c in node.named_children:
                if c.type == "heredoc_body":
                    (literal if quoted else heredocs).append((c.start_byte, c.end_byte))
        stack.extend(node.children)
    literal.sort()
    out = bytearray()
    i, k, n, in_heredoc = 0, 0, len(src), False
    while i < n:
        while k < len(literal) and literal[k][1] <= i:
            k += 1
        if k < len(literal) and literal[k][0] <= i:
            out += src[i:literal[k][1]]
            i = literal[k][1]
            continue
        if src[i] == 0x5C:
            if src[i + 1:i + 2] == b"\n":
                in_heredoc = in_heredoc or any(a <= i < b for a, b in heredocs)
                i += 2
                continue
            out += src[i:i + 2]
            i += 2
            continue
        out.append(src[i])
        i += 1
    return bytes(out), in_heredoc


# --- compound commands the grammar misses -------------------------------------------------------------------
# tree-sitter-bash reads ``time { …; }``, ``time if …`` and ``! { …; }`` as a command named ``time``
# (or ``{``, ``if``) whose words run to the first ``;``, so ``time { if true; then rm x; fi; }``
# would hide ``rm x`` in a command named ``then``. The ``time`` (with ``-p``/``--``) or ``!``
# before such a compound command is blanked out, which changes nothing the classifier judges (``time`` is stripped anyway), and the
# line parsed again.


_COMPOUND_WORDS = frozenset({b"{", b"if", b"while", b"until", b"for", b"case", b"select", b"[[", b"!", b"function",
                             b"coproc"})


GROUP_PREFIX = re.compile(rb"(?:\btime|!)\s+(?:(?:-p|--|time)\s+)*(?:[{!]|\[\[|(?:if|while|until|for|case|select|"
                           rb"function|coproc)\b)")


def _first(text: bytes | None) -> bytes:
    words = (text or b"").split()
    return words[0] if words else b""


def ungrouped(src: bytes, tree: Tree, parse: Parse) -> tuple[bytes, Tree]:
    for _ in range(6):
        spans = _group_prefixes(tree.root_node)
        if not spans:
            break
        out = bytearray(src)
        for a, b in spans:
            out[a:b] = b" " * (b - a)
        src = bytes(out)
        tree = parse(src)
    return src, tree


def _group_prefixes(root: Node) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            kids = node.named_children
            if kids and kids[0].type == "command_name" and kids[0].text == b"time":
                k = 1
                while k < len(kids) and kids[k].text in (b"-p", b"--", b"time"):
                    k += 1
                if k < len(kids) and kids[k].type == "word" and _first(kids[k].text) in _COMPOUND_WORDS:
                    spans.append((node.start_byte, kids[k].start_byte))
        elif node.type == "negated_command" and node.child_count and node.children[0].type == "!":
            body = node.named_children[0] if node.named_children else None
            name = body.named_children[0] if body is not None and body.type == "command" and \
                body.named_children else None
            if name is not None and name.type == "command_name" and _first(name.text) in _COMPOUND_WORDS:
                spans.append((node.children[0].start_byte, node.children[0].end_byte))
        stack.extend(node.children)
    return spans
