"""Images for ``read``: PNG, JPEG, GIF and WebP, recognised by their first bytes.

These are the four formats both Anthropic and OpenAI accept, so a model on either provider can
look at a screenshot or a diagram in the workspace. The extension is not trusted (a ``.png``
that is really text is read as text). One image is capped at 3,750,000 bytes, which is
5,000,000 once base64-encoded: the smallest per-image limit a supported provider documents.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

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


def turn_images(images: list[Any] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """A user turn's images (``UserTurn.images``) as history image blocks, and a sentence for each
    one left out. Accepted: Claude Code's ``source`` objects (``{"type": "base64", "media_type",
    "data"}`` or ``{"type": "url", "url"}``) and cox's ``{"media_type", "data"}``. The bytes are
    checked, not the declared type: a PNG, JPEG, GIF or WebP of at most :data:`MAX_IMAGE_BYTES`,
    the formats and size every supported provider takes. What is left out never stops the turn:
    its text goes, and the model is told an image was dropped."""
    blocks: list[dict[str, Any]] = []
    problems: list[str] = []
    for n, image in enumerate(images or [], 1):
        got = _turn_image(image)
        if isinstance(got, str):
            problems.append(f"image {n} of the message was left out: {got}")
        else:
            blocks.append(got)
    return blocks, problems


def _turn_image(image: Any) -> dict[str, Any] | str:
    if not isinstance(image, dict):
        return "it is not an object (an image source: {\"type\": \"base64\", \"media_type\", \"data\"})"
    inner = image.get("source")
    source: dict[str, Any] = inner if isinstance(inner, dict) else image
    if source.get("type") == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            return "a url image needs an http(s) 'url'"
        return {"type": "image", "url": url}
    declared, data = source.get("media_type"), source.get("data")
    if not isinstance(data, str) or not data:
        return "it has no base64 'data' (or a url source)"
    if len(data) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
        return (f"it is {human_size(len(data) * 3 // 4)} and one image may be at most {MAX_IMAGE_BYTES:,} bytes; "
                "send a smaller copy")
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        return "its 'data' is not valid base64"
    media_type = sniff_image(raw[:SNIFF_BYTES])
    if media_type is None:
        return (f"its bytes are not a PNG, JPEG, GIF or WebP image (it says {str(declared)[:40]!r}); "
                "those are the formats the models take")
    if len(raw) > MAX_IMAGE_BYTES:
        return f"it is {human_size(len(raw))} and one image may be at most {MAX_IMAGE_BYTES:,} bytes; send a smaller copy"
    return {"type": "image", "media_type": media_type, "data": data}
