"""The model catalog: lookups, prefixes, overrides, tiers and costs."""

from __future__ import annotations

import pytest

from cox.actors.provider.catalog import describe, lookup, tier_model
from cox.protocol.types import Usage


def test_exact_and_dated_names():
    assert lookup("claude-sonnet-4-5").provider == "anthropic"
    dated = lookup("claude-sonnet-4-5-20250929")
    assert dated is not None and dated.name == "claude-sonnet-4-5-20250929" and dated.input == 3.0
    assert lookup("gpt-5-mini").input == 0.25  # not gpt-5's price: the longest prefix wins
    assert lookup("no-such-model") is None


def test_cost_uses_each_price():
    info = lookup("claude-sonnet-4-5")
    u = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_write_tokens=1_000_000,
              cache_read_tokens=1_000_000)
    assert info.cost(u) == pytest.approx(3.0 + 15.0 + 3.75 + 0.30)


def test_user_overrides_change_prices_and_add_models():
    over = {"claude-sonnet-4-5": {"input": 1.0, "output": None}, "my-local": {"context_window": 32768, "input": 0.0,
                                                                             "output": 0.0}}
    assert lookup("claude-sonnet-4-5", over).input == 1.0 and lookup("claude-sonnet-4-5", over).output == 15.0
    local = lookup("my-local", over)
    assert local is not None and local.context_window == 32768 and local.priced and local.provider == "openai-chat"


def test_unknown_model_is_described_without_a_price():
    info = describe("mystery-7b")
    assert not info.priced and info.cost(Usage(input_tokens=10)) == 0.0


def test_tiers():
    assert tier_model("anthropic", "cheap") == "claude-haiku-4-5"
    assert tier_model("openai", "code") == "gpt-5"
    assert tier_model("anthropic", "think", "claude-opus-4-8") == "claude-opus-4-8"
