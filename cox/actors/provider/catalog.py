"""The model catalog: which provider serves a model, its window, and what it costs.

Prices are USD per million tokens (input, output, cache write, cache read), from the providers'
public price pages as of 2026-11; ``[models.<name>]`` in the user config overrides any field
(and adds models cox does not know). A model is found by its exact name, then by the longest
catalog prefix (``claude-sonnet-4-5-20250929`` is ``claude-sonnet-4-5``). A model with no price
costs $0 in the ledger and ``cox doctor`` says so.

Tiers: ``cheap`` (summaries, compaction), ``code`` (main turns), ``think`` (architect mode) —
per provider, overridable with ``core.cheap_model`` / ``core.think_model``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cox.protocol.types import Usage
from cox.slim import dataclass


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    provider: str  # anthropic | openai | openai-chat | scripted
    context_window: int
    max_output: int
    input: float | None = None
    output: float | None = None
    cache_write: float | None = None
    cache_read: float | None = None

    @property
    def priced(self) -> bool:
        return self.input is not None and self.output is not None

    def cost(self, usage: Usage) -> float:
        if not self.priced:
            return 0.0
        assert self.input is not None and self.output is not None
        write = self.cache_write if self.cache_write is not None else self.input
        read = self.cache_read if self.cache_read is not None else self.input
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_write_tokens * write + usage.cache_read_tokens * read) / 1_000_000


def _a(name: str, window: int, out: int, i: float, o: float) -> ModelInfo:
    """Anthropic: 5-minute cache writes cost 1.25× input, cache reads 0.1×."""
    return ModelInfo(name, "anthropic", window, out, i, o, round(i * 1.25, 4), round(i * 0.1, 4))


def _o(name: str, window: int, out: int, i: float, o: float, read: float) -> ModelInfo:
    """OpenAI: caching is automatic; writes cost the input price, reads are discounted."""
    return ModelInfo(name, "openai", window, out, i, o, i, read)


CATALOG: dict[str, ModelInfo] = {m.name: m for m in (
    _a("claude-opus-4-8", 200_000, 64_000, 5.0, 25.0),
    _a("claude-opus-4-7", 200_000, 64_000, 5.0, 25.0),
    _a("claude-opus-4-6", 200_000, 64_000, 5.0, 25.0),
    _a("claude-opus-4-5", 200_000, 64_000, 5.0, 25.0),
    _a("claude-opus-4-1", 200_000, 32_000, 15.0, 75.0),
    _a("claude-opus-4", 200_000, 32_000, 15.0, 75.0),
    _a("claude-opus-5", 200_000, 64_000, 5.0, 25.0),
    _a("claude-sonnet-5", 200_000, 64_000, 2.0, 10.0),
    _a("claude-sonnet-4-5", 200_000, 64_000, 3.0, 15.0),
    _a("claude-sonnet-4", 200_000, 64_000, 3.0, 15.0),
    _a("claude-3-7-sonnet", 200_000, 64_000, 3.0, 15.0),
    _a("claude-haiku-4-5", 200_000, 64_000, 1.0, 5.0),
    _a("claude-3-5-haiku", 200_000, 8_192, 0.8, 4.0),
    _o("gpt-5", 400_000, 128_000, 1.25, 10.0, 0.125),
    _o("gpt-5-codex", 400_000, 128_000, 1.25, 10.0, 0.125),
    _o("gpt-5-mini", 400_000, 128_000, 0.25, 2.0, 0.025),
    _o("gpt-5-nano", 400_000, 128_000, 0.05, 0.40, 0.005),
    _o("gpt-4.1", 1_047_576, 32_768, 2.0, 8.0, 0.5),
    _o("gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.1),
    _o("o4-mini", 200_000, 100_000, 1.1, 4.4, 0.275),
    _o("o3", 200_000, 100_000, 2.0, 8.0, 0.5),
)}

TIERS: dict[str, dict[str, str]] = {
    "anthropic": {"cheap": "claude-haiku-4-5", "code": "claude-sonnet-4-5", "think": "claude-opus-4-5"},
    "openai": {"cheap": "gpt-5-mini", "code": "gpt-5", "think": "gpt-5"},
}

UNKNOWN_WINDOW = 128_000


def lookup(name: str, overrides: dict[str, Any] | None = None) -> ModelInfo | None:
    """The catalog entry for ``name`` with the user's overrides applied (None when unknown
    and not described by the overrides)."""
    info = CATALOG.get(name)
    if info is None:
        best = max((k for k in CATALOG if name.startswith(k + "-") or name.startswith(k + "@")), key=len, default=None)
        info = CATALOG[best] if best else None
        if info is not None:
            info = replace(info, name=name)
    over = (overrides or {}).get(name)
    if over:
        fields = {k: v for k, v in _plain(over).items() if v is not None}
        if info is None:
            provider = fields.pop("provider", None) or guess_provider(name)
            info = ModelInfo(name, provider, int(fields.pop("context_window", UNKNOWN_WINDOW)),
                             int(fields.pop("max_output", 8192)))
        info = replace(info, **fields)
    return info


def _plain(over: Any) -> dict[str, Any]:
    """One ``[models.<name>]`` entry as a dict: the config's ``ModelConfig`` record (what
    ``config.models`` holds) or an already plain dict (what ``SessionSettings`` carries)."""
    if isinstance(over, dict):
        return over
    from cox.protocol.record import is_record, to_plain

    if is_record(over):
        plain = to_plain(over)
        assert isinstance(plain, dict)
        return plain
    raise TypeError(f"a model override must be a table, not {type(over).__name__}")


def guess_provider(name: str) -> str:
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith(("gpt-", "o1", "o3", "o4", "codex")):
        return "openai"
    return "openai-chat"


def describe(name: str, overrides: dict[str, Any] | None = None) -> ModelInfo:
    """Like ``lookup`` but never None: an unknown model gets a conservative window and no price."""
    return lookup(name, overrides) or ModelInfo(name, guess_provider(name), UNKNOWN_WINDOW, 8192)


def tier_model(provider: str, tier: str, configured: str = "") -> str:
    if configured:
        return configured
    family = "anthropic" if provider == "anthropic" else "openai"
    return TIERS[family][tier]


ALIASES: dict[str, str] = {"haiku": "cheap", "sonnet": "code", "opus": "think"}
"""Claude Code's model aliases, as cox's tiers: ``--model sonnet`` is the code tier of the provider
that has a key (``claude-sonnet-4-5`` with an Anthropic key, ``gpt-5`` with only an OpenAI one)."""


def resolve_alias(name: str, provider: str, overrides: dict[str, Any] | None = None) -> str:
    """The concrete model ``name`` stands for on ``provider`` (anthropic | openai): an alias
    (:data:`ALIASES`) is that provider's tier; a family name without its vendor's prefix
    (``opus-4-1``, ``sonnet-4-5``) is the catalog's ``claude-…`` model; anything else — a model the
    user describes in ``[models.<name>]`` included — is itself."""
    if name in (overrides or {}) or name in CATALOG:
        return name
    tier = ALIASES.get(name.lower())
    if tier is not None:
        return tier_model(provider, tier)
    prefixed = f"claude-{name.lower()}"
    return prefixed if prefixed in CATALOG else name
