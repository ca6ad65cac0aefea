"""What a request cost, from a small price table (USD per million tokens).

The providers issue replaces this with the full model catalog and user overrides; until then a
model missing here costs 0 and the usage rows still record its tokens.
"""

from __future__ import annotations

from cox.protocol.types import Usage

# model prefix -> (input, output, cache write, cache read) per MTok
PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4": (15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4": (1.0, 5.0, 1.25, 0.10),
    "gpt-5-mini": (0.25, 2.0, 0.0, 0.025),
    "gpt-5": (1.25, 10.0, 0.0, 0.125),
}


def price_for(model: str) -> tuple[float, float, float, float] | None:
    best = None
    for prefix, price in PRICES.items():
        if model.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, price)
    return best[1] if best else None


def cost_usd(model: str, usage: Usage) -> float:
    price = price_for(model)
    if price is None:
        return 0.0
    inp, out, write, read = price
    return (usage.input_tokens * inp + usage.output_tokens * out + usage.cache_write_tokens * write
            + usage.cache_read_tokens * read) / 1_000_000
