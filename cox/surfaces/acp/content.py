"""A ``session/prompt``'s content blocks as cox's ``UserTurn``.

Text blocks are the turn's text; an image block is one of its images (the base64 source the
model adapters take); an embedded resource (a file the editor attached, ``@file``) joins the
text as a tagged block naming its URI, and a resource link as a line naming it, so the model
can read it with its tools. Audio is not advertised, and refused with a sentence if sent.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from cox.protocol import messages as m

__all__ = ["user_turn"]


def user_turn(blocks: list[Any]) -> m.UserTurn:
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            images.append({"type": "base64", "media_type": block.mime_type, "data": block.data})
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            if text is None:
                texts.append(f"(attached: {res.uri}, binary, not shown)")
            else:
                texts.append(f'<context uri="{res.uri}">\n{text}\n</context>')
        elif kind == "resource_link":
            texts.append(f"(see {block.uri})")
        else:
            raise RequestError.invalid_params({"message": f"cox cannot take a {kind} block in a prompt; "
                                               "send text, images or resources"})
    text = "\n\n".join(t for t in texts if t)
    if not text.strip() and not images:
        raise RequestError.invalid_params({"message": "the prompt is empty; send at least one text block"})
    return m.UserTurn(text=text, images=images or None)
