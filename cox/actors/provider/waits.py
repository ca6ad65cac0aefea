"""Bounded waits of one model request: what counts as a stream showing life, and the sentences
that end a wait which went on too long.

Three bounds (``[provider]`` in the config, ``cox.config.schema.ProviderConfig``) make the worst
case of a request known:

- ``stream_idle_timeout_s``: the longest gap between two *events* of a stream (and before its
  first one). Measured on events, not bytes: keep-alives — SSE comments (``: …``), ``ping`` /
  ``keepalive`` events (Anthropic sends ``event: ping``), events with no data and one-key
  ``{"type": "ping"}`` objects — do not reset it, so a stream that only pings ends like a silent
  one: with a retryable error.
- ``max_retry_after_s``: the longest ``retry-after`` cox obeys; above it the request fails at once
  with the server's value named (the SDKs refuse to retry past their own caps too).
- ``request_timeout_s``: the most a request may spend, over all its attempts and the waits between
  them, before its answer starts; a streaming answer is then bounded by the idle timeout only.
"""

from __future__ import annotations

import json
import time
from typing import Any

from cox.config.schema import ProviderConfig
from cox.protocol.model import ProviderError

KEEPALIVE_EVENTS = frozenset({"ping", "keepalive", "keep-alive", "heartbeat"})
DEFAULT_WAITS = ProviderConfig()
_OWN_CONFIG = "your own config ($COX_HOME/config.toml or COX_PROVIDER_{key})"


def waits_of(provider: Any) -> ProviderConfig:
    """The bounds a provider was built with (``waits``), or the defaults for one that has none."""
    waits = getattr(provider, "waits", None)
    return waits if isinstance(waits, ProviderConfig) else DEFAULT_WAITS


def is_keepalive(event: str, data: str) -> bool:
    """True for an event that only says the connection is open (see the module docstring)."""
    if event in KEEPALIVE_EVENTS or not data or data.isspace():
        return True
    if len(data) < 48 and data.lstrip().startswith("{"):
        try:
            value = json.loads(data)
        except ValueError:
            return False
        return isinstance(value, dict) and len(value) == 1 and value.get("type") in KEEPALIVE_EVENTS
    return False


def seconds(value: float) -> str:
    """A duration for a sentence: ``0.02``, ``2.5``, ``12``, ``3600`` (seconds, no unit)."""
    if value < 10:
        return f"{value:.2g}"
    return f"{value:.0f}"


class IdleClock:
    """When a stream last sent an event. ``left()`` is what a blocking read may still wait;
    ``heard`` says whether any bytes (keep-alives) arrived since, for the error's wording."""

    __slots__ = ("heard", "idle_s", "last")

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self.last = time.monotonic()
        self.heard = False

    def beat(self) -> None:
        """A real event arrived."""
        self.last = time.monotonic()
        self.heard = False

    def left(self) -> float:
        return self.last + self.idle_s - time.monotonic()

    def stalled(self, provider: str, *, responded: bool = True) -> ProviderError:
        """The retryable error of a stream that sent no event for ``idle_s``."""
        if not responded:
            what = f"{provider} sent no response for {seconds(self.idle_s)} s"
        elif self.heard:
            what = f"{provider} sent only keep-alive pings for {seconds(self.idle_s)} s"
        else:
            what = f"{provider} sent nothing for {seconds(self.idle_s)} s"
        return ProviderError(f"{what}: the stream stalled (provider.stream_idle_timeout_s = "
                             f"{seconds(self.idle_s)})", retryable=True)


def over_cap(err: ProviderError, asked: float, cap: float) -> ProviderError:
    """The request's final error when the server asks for a longer wait than cox obeys."""
    return ProviderError(
        f"{err}; the server asked to wait {seconds(asked)} s before retrying, more than "
        f"provider.max_retry_after_s = {seconds(cap)} s, so cox did not wait (to wait that long, "
        f"raise provider.max_retry_after_s in {_OWN_CONFIG.format(key='MAX_RETRY_AFTER_S')})",
        status=err.status)


def past_deadline(err: ProviderError | None, bound: float, attempts: int, wait: float | None = None) -> ProviderError:
    """The request's final error when its attempts (and a wait before the next) pass
    ``request_timeout_s``."""
    head = f"{err}; " if err is not None else ""
    if wait is not None:
        why = f"a retry in {seconds(wait)} s would pass"
    else:
        why = "no answer started within"
    plural = "s" if attempts != 1 else ""
    return ProviderError(
        f"{head}{why} provider.request_timeout_s = {seconds(bound)} s ({attempts} attempt{plural}); "
        f"giving up (raise it in {_OWN_CONFIG.format(key='REQUEST_TIMEOUT_S')})",
        status=err.status if err is not None else None)
