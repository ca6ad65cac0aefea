"""Cap what the model sees of a big output: head lines, a pointer to the archive, tail lines.

The full text is archived first (losslessly); the pointer names the archive id and the hidden
line range so ``cox expand <id> --lines a-b`` can show exactly what was left out.
"""

from __future__ import annotations


def needs_cap(text: str, max_bytes: int) -> bool:
    return len(text) > max_bytes // 4 and len(text.encode("utf-8", "replace")) > max_bytes


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n // 1024} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def cap(text: str, archive_id: str, *, head: int = 40, tail: int = 40, max_bytes: int = 16384) -> str:
    """Head + pointer + tail. Lines themselves are cut when a few giant lines exceed the cap."""
    lines = text.split("\n")
    total = len(text.encode("utf-8", "replace"))
    if len(lines) <= head + tail:
        # Few but very long lines: cut by characters instead.
        keep = max_bytes // 2
        return (f"{text[:keep]}\n[… {human_size(total)} archived; expand #{archive_id} "
                f"chars {keep + 1}–{len(text) - keep}]\n{text[-keep:]}")
    shown_head = [_clip(x, max_bytes // (2 * head)) for x in lines[:head]]
    shown_tail = [_clip(x, max_bytes // (2 * tail)) for x in lines[len(lines) - tail :]]
    pointer = f"[… {human_size(total)} archived; expand #{archive_id} lines {head + 1}–{len(lines) - tail}]"
    return "\n".join([*shown_head, pointer, *shown_tail])


def _clip(line: str, limit: int) -> str:
    limit = max(limit, 80)
    return line if len(line) <= limit else line[:limit] + " …"
