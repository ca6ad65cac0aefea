"""``lazyre.compile`` compiles on first use and then behaves as the ``re.compile`` it stands for."""

from __future__ import annotations

import copy
import re

import pytest

from cox import lazyre


def test_nothing_is_compiled_until_first_use_and_then_it_is_the_same_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda p, f=0: made.append(p) or real(p, f))
    rx = lazyre.compile(r"(?P<k>[a-z]+)=(\d+)", re.IGNORECASE)
    assert made == [] and not rx.is_compiled()  # type: ignore[attr-defined]
    want = real(r"(?P<k>[a-z]+)=(\d+)", re.IGNORECASE)
    assert rx.fullmatch("AB=12") is not None and rx.fullmatch("AB=12").groups() == ("AB", "12")  # type: ignore[union-attr]
    assert made == [r"(?P<k>[a-z]+)=(\d+)"]
    assert (rx.pattern, rx.flags, rx.groups, rx.groupindex) == (want.pattern, want.flags, want.groups, want.groupindex)
    assert rx.sub("-", "a=1 b=2") == want.sub("-", "a=1 b=2") and rx.findall("x=1 y=2") == [("x", "1"), ("y", "2")]
    assert rx.compiled() is rx.compiled() and isinstance(rx.compiled(), re.Pattern)  # type: ignore[attr-defined]
    assert made == [r"(?P<k>[a-z]+)=(\d+)"]  # once


def test_a_used_attribute_is_kept_so_later_calls_skip_the_stand_in() -> None:
    rx = lazyre.compile("a+")
    assert rx.match("aa") is not None
    assert vars(rx)["match"] == rx.compiled().match  # type: ignore[attr-defined]  # found without __getattr__


def test_copy_and_private_names_do_not_recurse() -> None:
    rx = lazyre.compile("a+")
    with pytest.raises(AttributeError):
        rx._nothing  # type: ignore[attr-defined]  # noqa: B018
    assert copy.copy(rx).match("a") is not None
