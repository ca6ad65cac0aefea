"""The record codec (``cox.protocol.record``): every kind of annotation is accepted when right and
refused when wrong, with the path of the bad value in the message; JSON is written as pydantic
wrote it; ``cox.protocol`` and ``cox.config`` import without pydantic."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from enum import Enum, StrEnum
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cox.protocol.record import (
    DecodeError,
    Record,
    decode,
    field,
    json_any,
    json_float,
    record,
    to_json,
    to_plain,
)


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Level(Enum):
    LOW = 1
    HIGH = 2


@record
class Point(Record):
    x: int
    y: int = 0


@record
class Cat(Record):
    type: Literal["cat"] = "cat"
    name: str


@record
class Dog(Record):
    type: Literal["dog"] = "dog"
    name: str
    good: bool = True


@record
class Everything(Record):
    text: str = ""
    count: int = 0
    ratio: float = 0.0
    flag: bool = False
    nothing: None = None
    anything: Any = None
    size: Literal["s", "m", "l"] = "m"
    colour: Colour = Colour.RED
    level: Level = Level.LOW
    names: list[str] = field(default_factory=list)
    table: dict[str, int] = field(default_factory=dict)
    pair: tuple[int, str] = (0, "")
    many: tuple[int, ...] = ()
    maybe: int | None = None
    either: int | str = 0
    point: Point | None = None
    points: list[Point] = field(default_factory=list)
    pet: Cat | Dog | None = None
    schema_: dict[str, Any] | None = field(default=None, key="schema")
    percent: float = field(default=50.0, ge=0, le=100)
    positive: int | None = field(default=None, gt=0, lt=10)
    origins: dict[str, str] = field(default_factory=dict, internal=True)


@record
class Pair(Record):
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low must not exceed high")


def bad(data: dict[str, Any], tp: Any = Everything) -> str:
    with pytest.raises(DecodeError) as err:
        decode(tp, data)
    return str(err.value)


# ------------------------------------------------------------------------------- accepting


def test_every_kind_of_annotation_is_accepted_and_converted() -> None:
    got = decode(Everything, {
        "text": "hi", "count": 3, "ratio": 2, "flag": True, "nothing": None, "anything": {"a": [1]},
        "size": "l", "colour": "blue", "level": 2, "names": ["a", "b"], "table": {"k": 1},
        "pair": [1, "x"], "many": [1, 2, 3], "maybe": 7, "either": "word", "point": {"x": 1},
        "points": [{"x": 1, "y": 2}], "pet": {"type": "dog", "name": "rex"}, "schema": {"type": "object"},
        "percent": 100, "positive": 9,
    })
    assert got == Everything(
        text="hi", count=3, ratio=2.0, flag=True, anything={"a": [1]}, size="l", colour=Colour.BLUE,
        level=Level.HIGH, names=["a", "b"], table={"k": 1}, pair=(1, "x"), many=(1, 2, 3), maybe=7,
        either="word", point=Point(x=1), points=[Point(x=1, y=2)], pet=Dog(name="rex"),
        schema_={"type": "object"}, percent=100.0, positive=9,
    )
    assert type(got.ratio) is float and got.colour is Colour.BLUE and got.level is Level.HIGH
    assert decode(Everything, {}) == Everything()


def test_records_and_enum_members_pass_through_as_they_are() -> None:
    point = Point(x=1)
    assert decode(Everything, {"point": point, "colour": Colour.BLUE}).point is point
    assert decode(Cat | Dog, Cat(name="tom")) == Cat(name="tom")


def test_a_union_of_records_is_told_apart_by_type() -> None:
    assert decode(Cat | Dog, {"type": "cat", "name": "tom"}) == Cat(name="tom")
    assert "pet: no 'type' field (expected one of: 'cat', 'dog')" in bad({"pet": {"name": "x"}})
    assert "pet.type: unknown type 'cow' (expected one of: 'cat', 'dog')" in bad({"pet": {"type": "cow"}})
    assert "pet.good: expected true or false, got a string 'yes'" in bad(
        {"pet": {"type": "dog", "name": "rex", "good": "yes"}})


# ------------------------------------------------------------------------------- refusing


@pytest.mark.parametrize("data, message", [
    ({"text": 5}, "text: expected a string, got the integer 5"),
    ({"count": "3"}, "count: expected an integer, got a string '3'"),
    ({"count": 3.0}, "count: expected an integer, got the number 3.0"),
    ({"count": True}, "count: expected an integer, got true"),
    ({"ratio": "1.5"}, "ratio: expected a number, got a string '1.5'"),
    ({"ratio": False}, "ratio: expected a number, got false"),
    ({"flag": 1}, "flag: expected true or false, got the integer 1"),
    ({"nothing": 0}, "nothing: expected null, got the integer 0"),
    ({"size": "xl"}, "size: expected one of 's', 'm', 'l', got a string 'xl'"),
    ({"colour": "green"}, "colour: expected one of 'red', 'blue', got a string 'green'"),
    ({"level": 3}, "level: expected one of 1, 2, got the integer 3"),
    ({"names": "a"}, "names: expected a list of strings, got a string 'a'"),
    ({"names": ["a", 2]}, "names.1: expected a string, got the integer 2"),
    ({"table": []}, "table: expected an object of integers, got a list"),
    ({"table": {"k": "v"}}, "table.k: expected an integer, got a string 'v'"),
    ({"pair": [1]}, "pair: expected a list of 2 items, got 1"),
    ({"pair": [1, 2]}, "pair.1: expected a string, got the integer 2"),
    ({"many": [1, "x"]}, "many.1: expected an integer, got a string 'x'"),
    ({"maybe": "x"}, "maybe: expected an integer or null, got a string 'x'"),
    ({"either": 1.5}, "either: expected an integer or a string, got the number 1.5"),
    ({"point": 3}, "point: expected an object (Point) or null, got the integer 3"),
    ({"point": {}}, "point.x: missing (expected an integer)"),
    ({"point": {"x": 1, "z": 2}}, "point.z: unknown field (known: x, y)"),
    ({"points": [{"x": 1}, {"x": "2"}]}, "points.1.x: expected an integer, got a string '2'"),
    ({"schema_": {}}, "schema_: unknown field"),
    ({"origins": {}}, "origins: unknown field"),
    ({"percent": 101}, "percent: expected a number <= 100, got 101.0"),
    ({"percent": -1}, "percent: expected a number >= 0, got -1.0"),
    ({"positive": 0}, "positive: expected an integer > 0, got 0"),
    ({"positive": 10}, "positive: expected an integer < 10, got 10"),
])
def test_a_bad_value_is_refused_with_its_path(data: dict[str, Any], message: str) -> None:
    assert message in bad(data)


def test_the_path_of_a_decode_error_is_kept() -> None:
    with pytest.raises(DecodeError) as err:
        decode(Everything, {"points": [{"x": 1}, {"x": None}]})
    assert err.value.path == ("points", 1, "x")
    assert err.value.where == "points.1.x"
    assert err.value.problem == "expected an integer, got null"


def test_a_long_string_is_shortened_in_the_message() -> None:
    assert "got a string 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'..." in bad({"count": "a" * 500})


def test_invariants_run_on_decode_and_on_construction() -> None:
    assert decode(Pair, {"low": 1, "high": 2}) == Pair(low=1, high=2)
    assert bad({"low": 3, "high": 2}, Pair) == "low must not exceed high"
    with pytest.raises(DecodeError, match=r"^pair: low must not exceed high$"):
        decode(Pair, {"low": 3, "high": 2}, ("pair",))
    with pytest.raises(ValueError, match="low must not exceed high"):
        Pair(low=3, high=2)
    with pytest.raises(ValueError, match="low must not exceed high"):
        replace(Pair(low=1, high=2), low=5)


def test_construction_is_cheap_but_fixes_enums_floats_and_checks_bounds() -> None:
    e = Everything(colour="blue", level=2, ratio=3)  # type: ignore[arg-type]
    assert e.colour is Colour.BLUE and e.level is Level.HIGH and type(e.ratio) is float
    with pytest.raises(ValueError, match="percent: expected a number <= 100, got 200"):
        Everything(percent=200)
    with pytest.raises(ValueError):
        Everything(colour="green")  # type: ignore[arg-type]
    assert Everything(text=5).text == 5  # type: ignore[arg-type]  # types are checked on decode only


def test_records_compare_by_value_are_unhashable_and_show_their_fields() -> None:
    assert Point(x=1) == Point(x=1) and Point(x=1) != Point(x=2) and Point(x=1) != Cat(name="x")
    assert repr(Point(x=1, y=2)) == "Point(x=1, y=2)"
    with pytest.raises(TypeError):
        hash(Point(x=1))
    with pytest.raises(TypeError):
        Point(1)  # type: ignore[misc]  # keyword-only, as pydantic models were


# ------------------------------------------------------------------------------- writing


def test_to_json_leaves_out_none_and_internal_fields_and_uses_json_names() -> None:
    e = Everything(schema_={"type": "object"}, colour=Colour.BLUE, level=Level.HIGH, origins={"r": "x"},
                   point=Point(x=1), pet=Cat(name="tom"), anything={"k": None}, pair=(1, "é"))
    line = to_json(e)
    assert line == (
        '{"text":"","count":0,"ratio":0.0,"flag":false,"anything":{"k":null},"size":"m","colour":"blue",'
        '"level":2,"names":[],"table":{},"pair":[1,"é"],"many":[],"either":0,"point":{"x":1,"y":0},"points":[],'
        '"pet":{"type":"cat","name":"tom"},"schema":{"type":"object"},"percent":50.0}')
    assert decode(Everything, json.loads(line)) == replace(e, origins={})
    plain = to_plain(e)
    assert plain["schema"] == {"type": "object"} and plain["colour"] == "blue" and plain["maybe"] is None
    assert "origins" not in plain and "maybe" not in to_plain(e, exclude_none=True)


def test_a_class_written_often_gets_a_generated_encoder_that_writes_the_same_bytes() -> None:
    import sys

    codec = sys.modules["cox.protocol.record"]

    @record
    class Often(Record):
        name: str = ""
        maybe: int | None = None
        ratio: float = 0.0
        kind: Colour = Colour.RED
        inner: Point | None = None
        schema_: dict[str, Any] | None = field(default=None, key="schema")
        origins: dict[str, str] = field(default_factory=dict, internal=True)

    values = [Often(name=f"n{i}", maybe=i if i % 2 else None, ratio=i / 3, kind=Colour.BLUE,
                    inner=Point(x=i) if i % 3 else None, schema_={"i": [i, 1e-5]} if i % 4 else None,
                    origins={"hidden": "x"}) for i in range(codec.GENERATE_AFTER * 2)]
    lines = [to_json(v) for v in values[: codec.GENERATE_AFTER - 1]]
    first = codec._ENCODERS[Often]
    lines += [to_json(v) for v in values[codec.GENERATE_AFTER - 1:]]
    generated = codec._ENCODERS[Often]
    assert generated is not first and generated.__code__.co_filename == "<string>"  # the exec'd one
    assert lines == [first(v) for v in values] == [generated(v) for v in values]
    assert lines[5] == '{"name":"n5","maybe":5,"ratio":1.6666666666666667,"kind":"blue","inner":{"x":5,"y":0},' \
                       '"schema":{"i":[5,0.00001]}}'
    assert lines[12] == '{"name":"n12","ratio":4.0,"kind":"blue"}'


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"), (5.0, "5.0"), (-0.0, "-0.0"), (0.1 + 0.2, "0.30000000000000004"), (1e15, "1000000000000000.0"),
    (1e16, "1e+16"), (1.5e300, "1.5e+300"), (1e-4, "0.0001"), (1e-5, "0.00001"), (-3.2e-5, "-0.000032"),
    (1e-6, "1e-6"), (2.5e-7, "2.5e-7"), (1.5e-10, "1.5e-10"), (5e-324, "5e-324"),
    (math.inf, "null"), (-math.inf, "null"), (math.nan, "null"),
])
def test_floats_are_written_as_pydantic_wrote_them(value: float, text: str) -> None:
    assert json_float(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_format_matches_pydantic_core(value: float) -> None:
    pydantic_core = pytest.importorskip("pydantic_core")
    assert json_float(value) == pydantic_core.to_json(value).decode()


def test_free_form_data_is_written_compactly_and_like_pydantic() -> None:
    assert json_any({"a": [1, 2.5, None, True], "b": "é\n"}) == '{"a":[1,2.5,null,true],"b":"é\\n"}'
    assert json_any({"small": 1e-5, "nan": math.nan, "text": "e-05"}) == '{"small":0.00001,"nan":null,"text":"e-05"}'
    assert json_any({"p": Point(x=1), "c": Colour.RED, "l": Level.LOW, 1: "one"}) == \
        '{"p":{"x":1,"y":0},"c":"red","l":1,"1":"one"}'


# ------------------------------------------------------------------------------- start-up


def test_protocol_and_config_import_without_pydantic() -> None:
    code = ("import sys, cox.protocol, cox.protocol.record, cox.config; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core', "
            "'annotated_types')); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


@record
class Tree(Record):
    name: str
    children: list[Tree] = field(default_factory=list)


def test_a_record_may_contain_itself() -> None:
    tree = decode(Tree, {"name": "a", "children": [{"name": "b"}, {"name": "c", "children": []}]})
    assert tree == Tree(name="a", children=[Tree(name="b"), Tree(name="c")])
    assert to_json(tree) == '{"name":"a","children":[{"name":"b","children":[]},{"name":"c","children":[]}]}'
    assert "children.0.name: expected a string" in bad({"name": "a", "children": [{"name": 1}]}, Tree)


# The field types are read without typing.get_type_hints (cox.protocol.record.type_hints): the
# same answer, for every record cox declares and every kind of annotation, and for the odd ones
# it leaves to get_type_hints.

Alias = Literal["x", "y"]


@record
class Odd(Record):
    quoted: list[Tree | None] = field(default_factory=list)  # noqa: UP037
    forward: dict[str, "Point"] = field(default_factory=dict)  # noqa: UP037  # a string inside the string
    alias: Alias | None = None
    tag: Literal["odd"] = "odd"
    none: None = None


def _all_records() -> list[type]:
    import cox.config.schema
    import cox.protocol.messages
    import cox.protocol.types  # noqa: F401  # the modules that declare cox's records

    def below(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in (sub, *below(sub))]
    return below(Record)


def test_field_types_are_read_as_get_type_hints_reads_them() -> None:
    import typing

    from cox.protocol.record import type_hints

    classes = _all_records()
    assert {Everything, Odd, Tree}.issubset(classes) and len(classes) > 50
    for cls in classes:
        try:
            expected = typing.get_type_hints(cls)
        except NameError:  # a record declared inside a function (tests/test_slim.py): both refuse it
            with pytest.raises(NameError):
                type_hints(cls)
            continue
        got = type_hints(cls)
        assert got == expected, cls
        assert [type(t) for t in got.values()] == [type(t) for t in expected.values()], cls
    assert type_hints(Odd)["forward"] == dict[str, Point]


def test_a_name_the_class_body_shadows_is_read_as_get_type_hints_reads_it() -> None:
    import typing

    from cox.protocol.record import type_hints

    # get_type_hints looks in the module, then the class body, then the builtins
    namespace = {"__module__": __name__, "__annotations__": {"a": "int", "b": "list[int]", "c": "Point"},
                 "int": str, "Point": bytes}
    cls = type("Shadowed", (), namespace)
    assert type_hints(cls) == typing.get_type_hints(cls) == {"a": str, "b": list[str], "c": Point}
