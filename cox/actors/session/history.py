"""The conversation history as the model sees it, and its normalisation before each request.

Messages are ``{"role": "user"|"assistant", "content": [block, ...]}``. Before every request:
a ``tool_use`` without a result gets an ``aborted`` result, a ``tool_result`` whose call is gone
is dropped, and consecutive messages of one role are merged (the APIs want them alternating).
"""

from __future__ import annotations

from typing import Any

ABORTED = "aborted: this call did not finish (the turn was interrupted or the session stopped)"


def user_text(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def user_images(images: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A user turn's images (``{"media_type", "data"}`` or an API ``source`` of base64) as the
    history's image blocks, in the shape every adapter takes (``{"type": "image", media_type, data}``)."""
    out = []
    for image in images or []:
        inner = image.get("source")
        source: dict[str, Any] = inner if isinstance(inner, dict) else image
        if isinstance(source.get("data"), str) and isinstance(source.get("media_type"), str):
            out.append({"type": "image", "media_type": source["media_type"], "data": source["data"]})
    return out


def tool_results(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": blocks}


def result_block(call_id: str, text: str, is_error: bool, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": is_error}
    if images:
        block["images"] = images
    return block


def normalize(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` that every provider accepts (see the module docstring)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # tool_use ids of the last assistant message still waiting for results

    def close_pending(answered: set[str]) -> list[dict[str, Any]]:
        return [result_block(cid, ABORTED, True) for cid in pending if cid not in answered]

    for msg in messages:
        role = msg["role"]
        content = [_public(b) for b in msg["content"] if not (b.get("type") == "text" and not b.get("text"))]
        if role == "assistant":
            if pending:
                _append(out, "user", close_pending(set()))
                pending = []
            pending = [b["id"] for b in content if b.get("type") == "tool_use"]
            if content:
                _append(out, "assistant", content)
        else:
            ids = set(pending)
            kept = [b for b in content if b.get("type") != "tool_result" or b.get("tool_use_id") in ids]
            answered = {b["tool_use_id"] for b in kept if b.get("type") == "tool_result"}
            missing = close_pending(answered)
            pending = []
            results = [b for b in kept if b.get("type") == "tool_result"]
            others = [b for b in kept if b.get("type") != "tool_result"]
            # Results first, in the order of the calls, then whatever the user said.
            blocks = results + missing + others
            if blocks:
                _append(out, "user", blocks)
    if pending:
        _append(out, "user", close_pending(set()))
    return out


def _public(block: dict[str, Any]) -> dict[str, Any]:
    """The block without cox's own bookkeeping keys (``_archive``, ``_label``…)."""
    if any(k.startswith("_") for k in block):
        return {k: v for k, v in block.items() if not k.startswith("_")}
    return block


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if out and out[-1]["role"] == role:
        out[-1] = {"role": role, "content": out[-1]["content"] + blocks}
    else:
        out.append({"role": role, "content": list(blocks)})
