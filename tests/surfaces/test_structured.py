"""``cox.surfaces.structured``: the one judge of a ``--json-schema`` answer, which ``cox run`` and
the Claude Code dialect's driver both call."""

from __future__ import annotations

import pytest

from cox.surfaces.structured import RETRIES, SchemaError, StructuredAnswer

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_a_valid_answer_whole_or_fenced() -> None:
    judge = StructuredAnswer(SCHEMA)
    assert judge.check('{"n": 1}').value == {"n": 1}
    assert judge.check('  ```json\n{"n": 2}\n```\n').value == {"n": 2}
    assert judge.check("```\n{\"n\": 3}\n```").ok


def test_one_retry_then_an_error_and_the_count_starts_again() -> None:
    judge = StructuredAnswer(SCHEMA)
    first = judge.check("three")
    assert not first.ok and first.retry is not None and "not JSON" in first.retry and first.error is None
    second = judge.check('{"n": "3"}')
    assert not second.ok and second.retry is None and second.error is not None
    assert f"after {RETRIES + 1} tries" in second.error and "'3' is not of type 'integer'" in second.error
    assert "(at $.n)" in second.error
    assert judge.check("again").retry is not None  # the next answer has its own retry
    assert judge.check('{"n": 1}').ok
    assert judge.check("").retry is not None and "empty" in (judge.check("").error or "")


def test_null_is_a_value_when_the_schema_allows_it() -> None:
    verdict = StructuredAnswer({"type": "null"}).check("null")
    assert verdict.ok and verdict.value is None


@pytest.mark.parametrize(("text", "words"), [("", "is empty"), ("{oops", "is not JSON"),
                                             ('{"type": 7}', "not a valid JSON Schema"),
                                             ("[1, 2]", "wants a JSON Schema object")])
def test_a_schema_that_cannot_be_used(text: str, words: str) -> None:
    with pytest.raises(SchemaError, match=words):
        StructuredAnswer.parse(text)


def test_the_instructions_are_byte_stable() -> None:
    a = StructuredAnswer.parse('{"required": ["n"], "type": "object"}').instructions()
    b = StructuredAnswer.parse('{"type":"object","required":["n"]}').instructions()
    assert a == b and '{"required":["n"],"type":"object"}' in a
