"""Images for ``read``: PNG, JPEG, GIF and WebP, recognised by their first bytes.

These are the four formats both Anthropic and OpenAI accept, so a model on either provider can
look at a screenshot or a diagram in the workspace. The extension is not trusted (a ``.png``
that is really text is read as text). One image is capped at 3,750,000 bytes, which is
5,000,000 once base64-encoded: the smallest per-image limit a supported provider documents.
"""

from __future__ import annotations

import base64
from pathlib import Path

from cox.protocol.types import ToolResult

from .visible import human_size

MAX_IMAGE_BYTES = 3_750_000
SNIFF_BYTES = 16


def sniff_image(head: bytes) -> str | None:
    """The media type of an image starting with ``head`` (its first 12 bytes or more), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_image(path: Path) -> ToolResult | None:
    """``path`` as an image block for ``read``, or None when it is not one of the four formats
    (then ``read`` goes on as for any file). Too big: an error whose text starts ``too_large:``."""
    if not path.is_file():
        return None  # a folder, a FIFO (opening it would block) or nothing: read decides
    try:
        with open(path, "rb") as f:
            media_type = sniff_image(f.read(SNIFF_BYTES))
            if media_type is None:
                return None
            f.seek(0)
            data = f.read(MAX_IMAGE_BYTES + 1)  # never more than the cap, even if the file grows
            size = max(len(data), path.stat().st_size)
    except OSError:
        return None  # read reports the error on its own path
    if size > MAX_IMAGE_BYTES:
        return ToolResult.error(
            f"too_large: {media_type}, {human_size(size)} ({size:,} bytes); one image may be at most "
            f"{MAX_IMAGE_BYTES:,} bytes. Make a smaller copy (e.g. scale it down with an image tool) and read that.",
            media_type=media_type, bytes=size)
    return ToolResult(
        visible=f"{media_type}, {human_size(len(data))}",
        images=[{"media_type": media_type, "data": base64.b64encode(data).decode("ascii")}],
        meta={"media_type": media_type, "bytes": len(data)},
    )
