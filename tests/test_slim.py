"""``slim.build`` makes what ``dataclasses.dataclass(slots=True)`` makes, without compiling at
import: same fields, signature, defaults, errors, ``replace``/``asdict``, slots, ``==``, ``repr``."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, ClassVar

import pytest

from cox import slim
from cox.protocol.model import TextPart, ToolUseStart
from cox.protocol.record import Record, record


def pair() -> tuple[type[Any], type[Any]]:
    def body() -> dict[str, Any]:
        return {"__annotations__": {"a": "int", "b": "str", "c": "list[int]", "k": "ClassVar[int]"},
                "b": "x", "c": dataclasses.field(default_factory=list), "k": 3,
                "__post_init__": lambda self: setattr(self, "seen", True) if False else None,
                "__module__": __name__, "__qualname__": "P"}
    real = dataclasses.dataclass(slots=True)(type("P", (), body()))
    cheap = slim.dataclass(slots=True)(type("P", (), body()))
    return real, cheap


def test_the_class_is_the_dataclass_one() -> None:
    real, cheap = pair()
    assert [(f.name, f.type, f.default, f.default_factory, f.kw_only) for f in dataclasses.fields(cheap)] == \
        [(f.name, f.type, f.default, f.default_factory, f.kw_only) for f in dataclasses.fields(real)]
    assert cheap.__slots__ == real.__slots__ == ("a", "b", "c")
    assert cheap.__match_args__ == real.__match_args__
    assert cheap.k == 3 and dataclasses.is_dataclass(cheap)
    x, y = cheap(1), real(1)
    compile_init(cheap)
    assert str(inspect.signature(type(x).__init__)) == str(inspect.signature(type(y).__init__))
    assert (x.a, x.b, x.c) == (y.a, y.b, y.c) == (1, "x", [])
    assert x.c is not cheap(2).c  # the factory runs per instance
    assert repr(x) == repr(y) == "P(a=1, b='x', c=[])"
    assert x == cheap(1) and x != cheap(2) and x.__hash__ is None
    assert dataclasses.replace(x, b="z") == cheap(1, "z") and dataclasses.asdict(x) == dataclasses.asdict(y)
    with pytest.raises(AttributeError):
        x.other = 1
    with pytest.raises(TypeError):
        cheap()  # a required field is required


def test_the_definition_errors_are_the_dataclass_ones() -> None:
    with pytest.raises(ValueError, match="mutable default"):
        slim.dataclass(slots=True)(type("M", (), {"__annotations__": {"a": "list[int]"}, "a": [], "__module__": __name__}))
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        slim.dataclass(type("O", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1, "__module__": __name__}))


def compile_init(cls: type[Any]) -> None:
    """Constructs ``cls`` until its ``__init__`` is the generated one (its fields all default)."""
    for _ in range(slim.INTERPRETED_CONSTRUCTIONS + 1):
        cls(1)


def test_nothing_is_compiled_until_a_class_is_constructed_often() -> None:
    @record
    class Late(Record):
        n: int = 1
        tags: list[str] = dataclasses.field(default_factory=list)
        kind: ClassVar[str] = "late"

    first = Late.__init__
    assert first.__code__.co_varnames[:3] == ("self", "args", "kwargs")  # the stub, not generated code
    made = [Late(n=k) for k in range(slim.INTERPRETED_CONSTRUCTIONS)]
    assert [x.n for x in made] == list(range(slim.INTERPRETED_CONSTRUCTIONS)) and Late.__init__ is first
    assert made[0].tags == [] and made[0].tags is not made[1].tags  # the factory runs per instance
    assert Late(n=2).n == 2 and Late.__init__ is not first  # the next one compiled it
    assert Late.__init__.__code__.co_varnames[:2] == ("self", "n")
    with pytest.raises(TypeError):
        Late(2)  # type: ignore[misc]  # keyword-only, like dataclass(kw_only=True)
    assert Late.kind == "late" and Late().tags == []


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1,), {}), ((1, "y"), {}), ((), {"a": 1}), ((1,), {"c": [2]}), ((), {"a": 1, "b": "z", "c": [3]}),
    ((1, "y", [4]), {}),
    # the ones the loop hands to the generated code, so their errors are its errors
    ((), {}), ((1, "y", [4], 5), {}), ((1,), {"a": 2}), ((1,), {"nope": 2}), ((1,), {"n": 2}),
]


@pytest.mark.parametrize("options", OPTIONS_AT_CONSTRUCTION := [{}, {"frozen": True, "slots": True},
                                                                {"slots": True}, {"frozen": True}],
                         ids=lambda o: ",".join(o) or "plain")
def test_the_first_constructions_set_what_the_generated_init_sets(options: dict[str, Any]) -> None:
    """Each call of CALLS, as a class's first construction (interpreted) and as a construction
    of a class whose ``__init__`` is compiled: the same fields, or the same error."""
    def outcome(cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            x = cls(*args, **kwargs)
        except TypeError as exc:
            return ("error", str(exc).replace(cls.__qualname__, "C"))
        return [(f.name, getattr(x, f.name, "unset")) for f in dataclasses.fields(cls)] + [x.seen]

    def make() -> type[Any]:
        ns: dict[str, Any] = {"__annotations__": {"a": "int", "b": "str", "c": "list[int]", "n": "int"},
                              "b": "x", "c": dataclasses.field(default_factory=list),
                              "n": dataclasses.field(default=7, init=False),
                              "__post_init__": lambda self: object.__setattr__(self, "seen", (self.a, self.b)),
                              "__module__": __name__, "__qualname__": "C"}
        if options.get("slots"):
            ns["__annotations__"]["seen"] = "tuple[int, str]"
            ns["seen"] = dataclasses.field(default=(0, ""), init=False)
        return slim.dataclass(**options)(type("C", (), ns))

    compiled = make()
    compile_init(compiled)
    for args, kwargs in CALLS:
        fresh = make()
        assert outcome(fresh, args, kwargs) == outcome(compiled, args, kwargs), (args, kwargs)
    interpreted = make()
    for args, kwargs in CALLS[:6]:
        assert outcome(interpreted, args, kwargs) == outcome(compiled, args, kwargs), (args, kwargs)
    assert interpreted.__init__.__code__.co_varnames[:3] == ("self", "args", "kwargs")  # never compiled


def test_the_protocol_classes_are_unchanged() -> None:
    part = TextPart("hi")
    assert part == TextPart(text="hi", kind="text") and repr(part) == "TextPart(text='hi', kind='text')"
    start = ToolUseStart(0, "t1", "bash")
    assert dataclasses.replace(start, name="read") == ToolUseStart(index=0, id="t1", name="read")
    assert ToolUseStart.__match_args__ == ("index", "id", "name", "kind")


OPTIONS = [{}, {"slots": True}, {"frozen": True}, {"frozen": True, "slots": True}, {"order": True, "slots": True},
           {"eq": False}, {"unsafe_hash": True}, {"kw_only": True, "slots": True}, {"repr": False, "frozen": True},
           {"slots": True, "weakref_slot": True}]


def shapes(options: dict[str, Any]) -> tuple[Any, Any]:
    """The same class made by dataclasses and by slim (module-level names, so pickle finds them)."""
    made = []
    for make in (dataclasses.dataclass, slim.dataclass):
        ns: dict[str, Any] = {"__annotations__": {"a": "int", "b": "str", "c": "tuple[int, ...]", "n": "int"},
                              "b": "x", "c": dataclasses.field(default_factory=tuple),
                              "n": dataclasses.field(default=0, init=False, compare=False),
                              "__module__": __name__}
        name = f"Shape{len(made)}_{abs(hash(tuple(sorted(options.items()))))}"
        ns["__qualname__"] = name
        cls = make(**options)(type(name, (), ns))
        globals()[name] = cls
        made.append(cls)
    return made[0], made[1]


def behaviour(cls: Any) -> list[Any]:
    out: list[Any] = [tuple((f.name, f.default, f.init, f.compare, f.kw_only) for f in dataclasses.fields(cls)),
                      getattr(cls, "__match_args__", None), getattr(cls, "__slots__", None), cls.__hash__ is None]
    x, y, z = cls(a=1), cls(a=1), cls(a=2, b="y")
    out += [str(inspect.signature(cls)), repr(x).partition("(")[2], x == y, x == z, x != z, x.n, x.c == y.c]
    out.append(hash(x) == hash(y) if cls.__hash__ is not None else "unhashable")
    try:
        out.append((x < z, z <= x, x >= y))
    except TypeError:
        out.append("no order")
    try:
        x.a = 5
        out.append(("set", x.a))
    except dataclasses.FrozenInstanceError as exc:
        out.append(("frozen", str(exc)))
    try:
        x.other = 1
        out.append("open")
    except (AttributeError, TypeError):  # dataclasses' frozen+slots raises TypeError (a CPython bug), slim
        out.append("refused")              # FrozenInstanceError: both refuse
    import copy
    import pickle
    r = dataclasses.replace(x, b="q")
    out += [dataclasses.asdict(r), dataclasses.astuple(copy.copy(r)), dataclasses.asdict(pickle.loads(pickle.dumps(r)))]
    return out


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "plain")
def test_every_option_behaves_as_dataclasses_does(options: dict[str, Any]) -> None:
    real, cheap = shapes(options)
    for _ in range(slim.INTERPRETED_CONSTRUCTIONS):
        cheap(a=0)  # the signature is the generated __init__'s
    assert behaviour(cheap) == behaviour(real)


def test_inheritance_and_its_errors_are_the_dataclass_ones() -> None:
    for make in (dataclasses.dataclass, slim.dataclass):
        base = make(frozen=True, slots=True)(type("B", (), {"__annotations__": {"a": "int"}, "__module__": __name__}))
        child = make(frozen=True, slots=True)(type("C", (base,), {"__annotations__": {"b": "int"}, "b": 2,
                                                                   "__module__": __name__}))
        assert [f.name for f in dataclasses.fields(child)] == ["a", "b"] and child.__slots__ == ("b",)
        assert child(1) == child(1, 2) and hash(child(1)) == hash(child(1)) and child(1) != base(1)
        with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
            make(type("D", (base,), {"__annotations__": {}, "__module__": __name__}))


FIELD_ATTRS = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "metadata", "kw_only",
               "_field_type")


def test_fields_are_made_as_dataclasses_makes_them_without_its_annotation_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    def make() -> type[Any]:
        slotted = type("S", (), {"__slots__": ("s",), "__module__": __name__})
        return type("F", (slotted,), {
            "__annotations__": {"s": "int", "a": "int", "b": "str | None", "c": "list[int]", "d": "int",
                                "k": "ClassVar[int]", "q": "typing.ClassVar[str]", "_": dataclasses.KW_ONLY, "w": "bytes"},
            "b": None, "c": dataclasses.field(default_factory=list, repr=False, metadata={"m": 1}),
            "d": dataclasses.field(default=4, kw_only=False, compare=False, hash=True), "k": 1, "q": "x",
            "w": b"", "__module__": __name__})
    real = {f.name: f for f in dataclasses.fields(dataclasses.dataclass(make()))}
    looked: list[str] = []
    is_type = dataclasses._is_type  # type: ignore[attr-defined]
    monkeypatch.setattr(dataclasses, "_is_type", lambda a, *rest: looked.append(a) or is_type(a, *rest))
    cheap_cls = slim.dataclass(make())
    cheap = {f.name: f for f in dataclasses.fields(cheap_cls)}
    assert list(cheap) == list(real) == ["s", "a", "b", "c", "d", "q", "w"]  # this module has no name typing
    for name, f in real.items():
        assert [getattr(cheap[name], a) for a in FIELD_ATTRS] == [getattr(f, a) for a in FIELD_ATTRS], name
    assert cheap_cls.k == 1 and cheap["s"].default is dataclasses.MISSING and cheap["w"].kw_only and not cheap["d"].kw_only
    assert sorted(set(looked)) == ["ClassVar[int]", "typing.ClassVar[str]"]  # only what could name a ClassVar


def test_an_initvar_is_still_refused_and_a_mutable_default_named() -> None:
    with pytest.raises(TypeError, match="InitVar is not supported"):
        slim.dataclass(type("I", (), {"__annotations__": {"a": "InitVar[int]"}, "__module__": "dataclasses"}))
    with pytest.raises(ValueError, match=r"mutable default <class 'dict'> for field a is not allowed"):
        slim.dataclass(type("M", (), {"__annotations__": {"a": "dict[str, int]"}, "a": {}, "__module__": __name__}))
