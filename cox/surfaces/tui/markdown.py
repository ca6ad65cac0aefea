"""A small Markdown renderer producing urwid text markup (``[(attr, text), ...]``), without
importing urwid.

Models write Markdown; showing headings, lists, bold and fenced code distinctly makes a reply
readable without a full parser. It runs on every frame of a streaming reply, so it is a single
linear pass; an unclosed fence (mid-stream) simply renders the rest as code.
"""

from __future__ import annotations

import re

Markup = list[tuple[str, str]]

_INLINE = re.compile(r"(\*\*[^*\n]+\*\*|`[^`\n]+`)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d+[.)])\s+(.*)$")


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


def render(text: str, in_code: bool = False) -> Markup:
    """The whole reply as markup; lines joined by newlines so urwid wraps each one."""
    return render_state(text, in_code)[0]


def render_state(text: str, in_code: bool = False) -> tuple[Markup, bool]:
    """Markup for ``text`` starting inside a code fence or not, and whether it ends inside one:
    a long reply is rendered in frozen chunks, and the fence state carries from one to the next."""
    out: Markup = []
    for i, line in enumerate(text.split("\n")):
        if i:
            out.append(("assistant", "\n"))
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            lang = stripped[3:].strip()
            out.append(("md_fence", "┌─ " + (lang or "code") if in_code else "└─"))
            continue
        if in_code:
            out.append(("md_fence", "│ "))
            out.append(("md_code", line))
            continue
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
    return out, in_code
