"""A text layout that repeats a line's gutter on its wrapped rows.

Fenced code is drawn as ``│ code``, an expanded tool's output as ``    │ line`` and thinking as
``  ┆ line``. urwid wraps a long line to the left edge, so at 60 columns a long code line's second
row lost the gutter and read as prose. This layout wraps such a line's text in the width left
after its gutter and puts the gutter (in the gutter's own colour) at the start of every row.
Lines without a gutter are laid out as urwid always does.
"""

from __future__ import annotations

from typing import Any

import urwid
from urwid.str_util import calc_width

GUTTERS = ("    │ ", "  ┆ ", "│ ")  # longest first: "    │ " also ends in "│ "
MIN_BODY = 8  # narrower than this after the gutter, a line wraps as urwid would


def _shift(row: list[Any], by: int) -> list[Any]:
    out: list[Any] = []
    for seg in row:
        if len(seg) == 3 and isinstance(seg[2], int):
            out.append((seg[0], seg[1] + by, seg[2] + by))
        elif len(seg) == 3:
            out.append((seg[0], seg[1] + by, seg[2]))
        else:
            out.append((seg[0], None if seg[1] is None else seg[1] + by))
    return out


class GutterLayout(urwid.StandardTextLayout):
    def layout(self, text: str | bytes, width: int, align: Any, wrap: Any) -> Any:
        if isinstance(text, bytes) or wrap not in ("space", "any") or not any(g in text for g in GUTTERS):
            return super().layout(text, width, align, wrap)
        out: list[Any] = []
        pos = 0
        for line in text.split("\n"):
            gutter = next((g for g in GUTTERS if line.startswith(g)), None)
            gw = calc_width(gutter, 0, len(gutter)) if gutter else 0
            if gutter is None or width - gw < MIN_BODY or calc_width(line, 0, len(line)) <= width:
                out.extend(_shift(row, pos) for row in super().layout(line, width, align, wrap))
            else:
                body = pos + len(gutter)
                rows = super().layout(line[len(gutter):], width - gw, align, wrap)
                for n, row in enumerate(rows):
                    head = (gw, pos, pos + len(gutter)) if n == 0 else (gw, pos, gutter.encode("utf-8"))
                    out.append([head, *_shift(row, body)])
            pos += len(line) + 1
        return out


LAYOUT = GutterLayout()
