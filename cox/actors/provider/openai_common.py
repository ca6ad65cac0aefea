"""What the two OpenAI adapters (Responses and Chat Completions) share: keys, headers, error
classification of in-stream failures, and the pieces of history translation that do not depend on
the wire format.

Neither ``openai`` nor ``httpx`` is imported here: cox speaks both APIs through
``transport.post_sse`` so its first request leaves within the 150 ms start-up budget (importing
the SDK alone costs ~0.45 s). The SDK stays the test oracle: the tests feed the same bytes to it
and to these adapters and compare what each assembles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from cox import __version__
from cox.actors.provider.transport import OVERFLOW_MARKERS
from cox.protocol.model import ProviderError, UsageDelta

PROVIDER = "OpenAI"
KEY_VAR = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"

# In-stream error codes that a retry cannot fix (everything else a failed response reports is
# treated as transient, as Codex does: server_error, rate_limit_exceeded, server_is_overloaded…).
FATAL_CODES = frozenset({
    "insufficient_quota", "usage_not_included", "invalid_prompt", "invalid_request_error",
    "invalid_api_key", "model_not_found", "unsupported_parameter", "invalid_value",
})

_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?)\b", re.IGNORECASE)


def is_openai(base_url: str) -> bool:
    """True for OpenAI's own API (where a key is mandatory and OpenAI-only fields are known)."""
    host = (urlparse(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(".api.openai.com")


def check_key(api_key: str | None, base_url: str) -> None:
    """Fail before any request when OpenAI itself is the target and no key is set. Local servers
    (vLLM, Ollama) and many gateways need none, so an empty key is allowed for them."""
    if not api_key and is_openai(base_url):
        raise ProviderError(f"no OpenAI key: set {KEY_VAR}")


def request_headers(api_key: str | None, *, organization: str | None = None,
                    project: str | None = None) -> dict[str, str]:
    """The headers the SDK would send that matter to the server (auth, org/project routing)."""
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "user-agent": f"cox/{__version__}",
    }
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    if organization:
        headers["openai-organization"] = organization
    if project:
        headers["openai-project"] = project
    return headers


def retry_hint(message: str) -> float | None:
    """Seconds from a "Please try again in 11.054s" / "in 20ms" phrase, as Codex reads them
    (OpenAI puts the rate-limit delay in the message of an in-stream failure, not in a header)."""
    match = _TRY_AGAIN.search(message or "")
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000 if match.group(2).lower() == "ms" else value


def stream_error(err: Any, *, where: str) -> ProviderError:
    """An error reported inside a 200 stream (``response.failed``, an ``error`` event, a chat
    chunk with ``error``) as the error the stream actor knows how to treat: context overflow →
    compaction, fatal codes → the turn ends, anything else → retried (honouring "try again in")."""
    if not isinstance(err, dict):
        err = {"message": str(err)}
    nested = err.get("error")
    if isinstance(nested, dict):
        err = nested
    raw_code = err.get("code")
    code = str(raw_code or err.get("type") or "").strip()
    message = str(err.get("message") or code or "unknown error")
    low = f"{code} {message}".lower()
    label = f"{PROVIDER} {where}" + (f" ({code})" if code else "")
    if code == "context_length_exceeded" or any(m in low for m in OVERFLOW_MARKERS):
        return ProviderError(f"{label}: {message}", context_overflow=True)
    status = raw_code if isinstance(raw_code, int) else None
    if code in FATAL_CODES or (status is not None and 400 <= status < 500 and status not in (408, 409, 429)):
        return ProviderError(f"{label}: {message}", status=status)
    return ProviderError(f"{label}: {message}", retryable=True, retry_after=retry_hint(message), status=status)


def refine_http_error(err: ProviderError) -> ProviderError:
    """``transport.http_error`` knows every provider; OpenAI adds two rules. A 429 for an
    exhausted quota will not pass on retry, and a 429 without a ``retry-after`` header often
    says "try again in Xs" in its message."""
    if err.status == 429:
        text = str(err).lower()
        if "insufficient_quota" in text or "exceeded your current quota" in text:
            err.retryable = False
            err.retry_after = None
        elif err.retry_after is None:
            err.retry_after = retry_hint(str(err))
    return err


def close_events(events: Iterator[Any]) -> None:
    """Close the transport's generator now (it closes the response) rather than whenever it is
    collected: a consumer that stops early, or an error, must not leave the socket open."""
    close = getattr(events, "close", None)
    if close is not None:
        close()


def parse_json(data: str) -> dict[str, Any]:
    """One event's JSON; a garbled event is a transport fault, so it is retryable."""
    try:
        value = json.loads(data)
    except ValueError:
        raise ProviderError(f"{PROVIDER} sent an event that is not JSON: {data[:200]!r}", retryable=True) from None
    if not isinstance(value, dict):
        raise ProviderError(f"{PROVIDER} sent an event that is not an object: {data[:200]!r}", retryable=True)
    return value


def usage_delta(input_tokens: Any, output_tokens: Any, cached_tokens: Any) -> UsageDelta:
    """OpenAI counts cached tokens inside ``input_tokens``; cox (like Anthropic) keeps them apart
    so the ledger prices each token once: uncached input at the input price, reads at the read
    price."""
    total = int(input_tokens or 0)
    cached = min(int(cached_tokens or 0), total)
    return UsageDelta(input_tokens=total - cached, output_tokens=int(output_tokens or 0), cache_read_tokens=cached)


def tool_arguments(block: dict[str, Any]) -> str:
    """A ``tool_use`` block's arguments as the JSON string the APIs want back. What the model
    sent and cox could not parse goes back as it was, so the model sees its own mistake. The
    serialisation is deterministic, so the echo is byte-identical on every later request."""
    raw = block.get("input_error")
    if isinstance(raw, str) and raw:
        return raw
    return json.dumps(block.get("input") or {}, ensure_ascii=False)


def result_text(block: dict[str, Any]) -> str:
    """A ``tool_result`` block's text (a string, or a list of text blocks)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def data_url(image: dict[str, Any]) -> str:
    """An image (``{"media_type", "data"}``, base64) as a data URL; one given by ``url``, that URL."""
    if isinstance(image.get("url"), str):
        return str(image["url"])
    return f"data:{image.get('media_type', 'image/png')};base64,{image.get('data', '')}"


def image_note(call_id: str, count: int) -> str:
    """The text that introduces a tool call's images in the user message that carries them."""
    return f"Image{'s' if count > 1 else ''} returned by tool call {call_id}:"
