"""A small Markdown renderer producing urwid text markup (``[(attr, text), ...]``), without
importing urwid.

Models write Markdown; showing headings, lists, bold and fenced code distinctly makes a reply
readable without a full parser. It runs on every frame of a streaming reply, so it is a single
linear pass; an unclosed fence (mid-stream) simply renders the rest as code.

Fenced code that names its language (```` ```python ````) is coloured with Pygments, imported
only when such a block is first drawn; lexers are cached per language. Token types map to a few
``syn_*`` attributes that the TUI's palette colours per theme (and leaves plain under NO_COLOR).
A long reply is drawn in frozen chunks (see ``app.View``); the fence state carried from one chunk
to the next keeps the block's language and its last lines, which prime the lexer so a string or
comment that spans the cut keeps its colour. A streaming block's complete lines are lexed once
(cached); each frame re-lexes only the partial last line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Markup = list[tuple[str, str]]

_INLINE = re.compile(r"(\*\*[^*\n]+\*\*|`[^`\n]+`)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d+[.)])\s+(.*)$")

_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")

CONTEXT_LINES = 12  # a cut block's last lines kept to prime the lexer for the next chunk
PARTIAL_CONTEXT = 3  # lines before a streaming block's partial last line lexed with it

# Pygments token type (by name) -> attribute; a type not listed takes its nearest listed parent's
SYNTAX: dict[str, str] = {
    "Token": "syn_text",
    "Comment": "syn_comment",
    "Comment.Preproc": "syn_keyword",
    "Keyword": "syn_keyword",
    "Keyword.Constant": "syn_number",
    "Keyword.Type": "syn_type",
    "Operator.Word": "syn_keyword",
    "Name.Builtin": "syn_builtin",
    "Name.Builtin.Pseudo": "syn_builtin",
    "Name.Decorator": "syn_builtin",
    "Name.Function": "syn_function",
    "Name.Function.Magic": "syn_builtin",
    "Name.Class": "syn_type",
    "Name.Exception": "syn_type",
    "Name.Namespace": "syn_type",
    "Name.Tag": "syn_keyword",
    "Name.Attribute": "syn_function",
    "Name.Label": "syn_type",
    "Name.Variable": "syn_builtin",
    "Literal": "syn_number",
    "Literal.String": "syn_string",
    "Literal.String.Escape": "syn_builtin",
    "Literal.String.Interpol": "syn_builtin",
    "Literal.Number": "syn_number",
    "Generic.Inserted": "diff_add",
    "Generic.Deleted": "diff_del",
    "Generic.Heading": "syn_type",
    "Generic.Subheading": "syn_type",
    "Generic.Prompt": "syn_comment",
}


@dataclass(frozen=True)
class Fence:
    """Inside a fenced block: its language ("" for none) and its last lines so far (lexer context)."""

    lang: str = ""
    context: str = ""


State = Fence | None


def inline(text: str, base: str = "assistant") -> Markup:
    """``**bold**`` and `` `code` `` spans inside one line."""
    out: Markup = []
    for part in _INLINE.split(text):
        if not part:
            continue
        if part.startswith("**") and part.endswith("**") and len(part) > 4:
            out.append(("md_bold", part[2:-2]))
        elif part.startswith("`") and part.endswith("`") and len(part) > 2:
            out.append(("md_code", part[1:-1]))
        else:
            out.append((base, part))
    return out


def render(text: str, state: State = None) -> Markup:
    """The whole reply as markup; lines joined by newlines so urwid wraps each one."""
    return render_state(text, state)[0]


def render_state(text: str, state: State = None) -> tuple[Markup, State]:
    """Markup for ``text`` starting inside a code fence (``state``) or not, and the state it ends
    in: a long reply is rendered in frozen chunks, and the fence carries from one to the next."""
    out: Markup = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            if i:
                out.append(("assistant", "\n"))
            if state is None:
                lang = stripped[3:].strip().split(" ", 1)[0].lower()
                state = Fence(lang)
                out.append(("md_fence", "┌─ " + (lang or "code")))
            else:
                state = None
                out.append(("md_fence", "└─"))
            i += 1
            continue
        if state is not None:
            end = i
            while end < len(lines) and not lines[end].lstrip().startswith("```"):
                end += 1
            code = lines[i:end]
            for k, parts in enumerate(_code_lines(state, code)):
                if i + k:
                    out.append(("assistant", "\n"))
                out.append(("md_fence", "│ "))
                out.extend(parts)
            kept = (state.context + "\n".join(code) + "\n").split("\n")[-CONTEXT_LINES - 1:]
            state = Fence(state.lang, "\n".join(kept))
            i = end
            continue
        end = _table_end(lines, i)
        if end > i:
            if i:
                out.append(("assistant", "\n"))
            out.extend(table(lines[i:end]))
            i = end
            continue
        if i:
            out.append(("assistant", "\n"))
        i += 1
        h = _HEADING.match(line)
        if h:
            out.append(("md_h", h.group(2)))
            continue
        b = _BULLET.match(line)
        if b:
            out.append(("assistant", f"{b.group(1)}• "))
            out.extend(inline(b.group(2)))
            continue
        n = _NUMBERED.match(line)
        if n:
            out.append(("assistant", f"{n.group(1)}{n.group(2)} "))
            out.extend(inline(n.group(3)))
            continue
        out.extend(inline(line))
    return out, state


def _table_end(lines: list[str], i: int) -> int:
    """The index past a table starting at ``lines[i]`` (a row with ``|``, then a separator row
    like ``|---|:--:|``, then rows with ``|``); ``i`` when no table starts there."""
    if "|" not in lines[i] or i + 1 >= len(lines) or "|" not in lines[i + 1] or not _TABLE_SEP.match(lines[i + 1]):
        return i
    end = i + 2
    while end < len(lines) and "|" in lines[end] and lines[end].strip() and not lines[end].lstrip().startswith("```"):
        end += 1
    return end


def _cells(line: str) -> list[str]:
    s = line.strip()
    s = s[1:] if s.startswith("|") else s
    s = s[:-1] if s.endswith("|") and not s.endswith("\\|") else s
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(s)]


def width(text: str) -> int:
    """Terminal columns of ``text``: wide (East Asian) characters take two, combining marks none."""
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def table(lines: list[str]) -> Markup:
    """A Markdown table drawn aligned: every column as wide as its widest cell, aligned as the
    separator row says (``:--`` left, ``:-:`` centre, ``--:`` right), the header bold, the cells'
    ``**bold**`` and `` `code` `` rendered (their markers take no room)."""
    seps = _cells(lines[1])
    align = ["c" if x.startswith(":") and x.endswith(":") else "r" if x.endswith(":") else "l" for x in seps]
    rows = [_cells(lines[0])] + [_cells(x) for x in lines[2:]]
    cols = max(len(r) for r in rows)
    align += ["l"] * (cols - len(align))
    cells = [[inline(c, "md_bold" if n == 0 else "assistant") for c in r + [""] * (cols - len(r))]
             for n, r in enumerate(rows)]
    widths = [max(sum(width(t) for _, t in row[k]) for row in cells) for k in range(cols)]
    out: Markup = []
    for n, row in enumerate(cells):
        if n:
            out.append(("assistant", "\n"))
        for k, parts in enumerate(row):
            room = widths[k] - sum(width(t) for _, t in parts)
            left = room // 2 if align[k] == "c" else room if align[k] == "r" else 0
            out.append(("md_fence", " │ " if k else " "))
            out.append(("assistant", " " * left))
            out.extend(parts)
            if k < cols - 1:  # the last column needs no padding after it
                out.append(("assistant", " " * (room - left)))
        if n == 0:
            out.append(("md_fence", "\n" + "─┼─".join("─" * w for w in widths).join("──")))
    return [(a, t) for a, t in out if t]


def scan(text: str, state: State = None) -> State:
    """The state ``render_state(text, state)`` ends in, without rendering: a frozen chunk's
    markup is only made when it is first drawn, but the next chunk needs its fence at once."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        i += 1
        if stripped.startswith("```"):
            state = Fence(stripped[3:].strip().split(" ", 1)[0].lower()) if state is None else None
            continue
        if state is not None:
            end = i - 1
            while end < len(lines) and not lines[end].lstrip().startswith("```"):
                end += 1
            kept = (state.context + "\n".join(lines[i - 1:end]) + "\n").split("\n")[-CONTEXT_LINES - 1:]
            state = Fence(state.lang, "\n".join(kept))
            i = end
    return state


def _code_lines(fence: Fence, code: list[str]) -> list[Markup]:
    """One markup list per code line: coloured when the fence names a language Pygments knows,
    else plain ``md_code``. The complete lines are lexed once (cached), the last line (which may
    still be growing) with only a few lines before it."""
    if not fence.lang or _lexer(fence.lang) is None or not code:
        return [[("md_code", line)] if line else [] for line in code]
    head = "\n".join(code[:-1])
    out: list[Markup] = [list(parts) for parts in _highlight(fence.lang, fence.context, head)] if len(code) > 1 else []
    before = (fence.context + head + "\n" if len(code) > 1 else fence.context).split("\n")
    near = "\n".join(before[-PARTIAL_CONTEXT - 1:])
    out.append(_highlight_uncached(fence.lang, near, code[-1])[0])
    return out


@lru_cache(maxsize=16)
def _highlight(lang: str, context: str, code: str) -> tuple[tuple[tuple[str, str], ...], ...]:
    return tuple(tuple(parts) for parts in _highlight_uncached(lang, context, code))


def _highlight_uncached(lang: str, context: str, code: str) -> list[Markup]:
    """Lex ``context + code`` and return the markup of ``code``'s lines only (a newline is added:
    some lexers, diff's for one, only know a line once it ends)."""
    lexer = _lexer(lang)
    assert lexer is not None
    skip = context.count("\n")
    lines: list[Markup] = [[] for _ in range(code.count("\n") + 1)]
    row = -skip
    for ttype, value in lexer.get_tokens(context + code + "\n"):
        attr = _attr(ttype)
        for n, piece in enumerate(value.split("\n")):
            if n:
                row += 1
            if piece and 0 <= row < len(lines):
                line = lines[row]
                if line and line[-1][0] == attr:
                    line[-1] = (attr, line[-1][1] + piece)
                else:
                    line.append((attr, piece))
    return lines


_LEXERS: dict[str, Any] = {}
_ATTRS: dict[Any, str] = {}
_TABLE: dict[Any, str] = {}


def _lexer(lang: str) -> Any:
    """The Pygments lexer for ``lang`` (None when Pygments or the language is unknown), cached."""
    if lang in _LEXERS:
        return _LEXERS[lang]
    lexer = None
    try:
        from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped,unused-ignore]
        from pygments.token import string_to_tokentype  # type: ignore[import-untyped,unused-ignore]
        from pygments.util import ClassNotFound  # type: ignore[import-untyped,unused-ignore]

        if not _TABLE:
            _TABLE.update({string_to_tokentype(name): attr for name, attr in SYNTAX.items()})
        try:
            lexer = get_lexer_by_name(lang, stripnl=False, ensurenl=False)
        except ClassNotFound:
            lexer = None
    except ImportError:
        lexer = None
    _LEXERS[lang] = lexer
    return lexer


def _attr(ttype: Any) -> str:
    found = _ATTRS.get(ttype)
    if found is None:
        t = ttype
        while t not in _TABLE and t.parent is not None:
            t = t.parent
        found = _ATTRS[ttype] = _TABLE.get(t, "syn_text")
    return found
