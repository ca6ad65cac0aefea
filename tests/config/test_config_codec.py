"""The config loader has no type checker of its own: every value a config key is given is
checked by the protocol's record codec (cox.protocol.record.decode), and the loader only says
the codec's verdict in TOML's words. So the two can never disagree about what a key accepts."""

from __future__ import annotations

from typing import Any

import pytest

from cox.config import loader
from cox.protocol.record import DecodeError, decode, out_of_bounds

SAMPLES: list[Any] = [None, "x", "default", "bypass", 0, 1, -1, 2.5, True, [], ["a"], ["a", 1], [["a"]],
                      {}, {"A": "b"}, {"A": 1}, "on-request", "read-only"]


def _leaves(table: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, node in table.fields.items():
        if isinstance(node, loader._Leaf):
            out.append((prefix + key, node))
        elif isinstance(node, loader._Table):
            out.extend(_leaves(node, prefix + key + "."))
        elif isinstance(node, loader._Map):
            out.extend(_leaves(node.entry, prefix + key + ".*."))
    return out


@pytest.mark.parametrize(("key", "leaf"), _leaves(loader._schema()), ids=lambda x: x if isinstance(x, str) else "")
def test_a_key_accepts_exactly_what_the_codec_accepts(key: str, leaf: Any) -> None:
    for value in SAMPLES:
        try:
            decoded = decode(leaf.annotation, value)
            codec_ok = leaf.bounds is None or decoded is None or out_of_bounds(leaf.bounds, decoded) is None
        except DecodeError:
            codec_ok = False
        try:
            loader._check(value, leaf)
            loader_ok = True
        except loader._Bad as bad:
            loader_ok = False
            assert str(bad).startswith("expected "), (key, value, str(bad))
        assert loader_ok == codec_ok, (key, value)


def test_the_codec_speaks_toml_for_config_and_json_elsewhere() -> None:
    from cox.protocol.record import describe

    assert describe(dict[str, str]) == "an object of strings"
    assert describe(dict[str, str], objects=("a table", "tables")) == "a table of strings"
    assert describe(list[dict[str, int]], objects=("a table", "tables")) == "a list of tables of integers"
