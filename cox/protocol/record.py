"""Strict records: stdlib dataclasses plus one small codec driven by their annotations.

Why not pydantic: importing it and building cox's ~45 models took ~85 ms of CPU, about half of
the ~165 ms from launch to the first model request (see the README's design notes); the protocol
and the config need far less than it offers.

- ``@record`` makes a class a ``dataclass(slots=True, kw_only=True)`` (built by ``slim``: nothing
  compiled at import, the ``__init__`` on first construction). Construction stays cheap
  (the session builds tens of thousands of ``TextDelta`` a second): it only turns an enum's value
  into the enum member, an ``int`` into a ``float`` where a float is declared, checks the numeric
  bounds of :func:`field` and runs the class's own ``__post_init__`` (its invariants).
- :func:`decode` checks untrusted data fully against the annotations (``str``, ``int``, ``float``,
  ``bool``, ``None``, ``Any``, ``Literal``, enums, ``list``, ``tuple``, ``dict[str, T]``, unions,
  nested records, unions of records told apart by their ``type`` field) and rejects unknown
  fields. A :class:`DecodeError` names the path of the bad value and what was expected there.
- :func:`to_json` writes one compact JSON object (``None`` fields left out, the JSON names of
  :func:`field` used) with an encoder generated per class on first use; :func:`to_plain` gives
  the same as plain data. Numbers are written the way pydantic wrote them, so files written
  before and after the change are byte-identical.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, TypeVar, Union, dataclass_transform, get_args, get_origin

from cox import slim

T = TypeVar("T")
Path = tuple[str | int, ...]
_META = "cox"


class Record:
    """Base of every record (the marker :func:`is_record` looks for); declare with ``@record``.

    ``==`` and ``repr`` live here rather than being generated per class: generating them cost
    more at import than all their calls in a run."""

    __slots__ = ()

    __eq__ = slim.fields_eq
    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq
    __repr__ = slim.fields_repr


class DecodeError(ValueError):
    """Data that does not fit a record: ``path`` locates the bad value, ``problem`` says why."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{self.where}: {problem}" if path else problem)

    @property
    def where(self) -> str:
        return ".".join(str(part) for part in self.path)


def field(*, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
          key: str | None = None, ge: float | None = None, gt: float | None = None,
          le: float | None = None, lt: float | None = None, internal: bool = False) -> Any:
    """A record field. ``key``: its name in JSON when that differs from the attribute's.
    ``ge``/``gt``/``le``/``lt``: numeric bounds. ``internal``: filled by the program, so it is
    neither decoded (a key of that name is unknown) nor written out."""
    options = {"key": key, "ge": ge, "gt": gt, "le": le, "lt": lt, "internal": internal}
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_META: options})


@dataclass_transform(kw_only_default=True, field_specifiers=(field, dataclasses.field))
def record(cls: type[T]) -> type[T]:
    """Make ``cls`` (a subclass of :class:`Record`) a slotted, keyword-only dataclass (with the
    ``==`` and ``repr`` of :class:`Record`), built by :func:`cox.slim.build`: nothing is compiled
    at import, the ``__init__`` is generated when the class is first constructed.

    A ``__post_init__`` the class defines holds its invariants; it runs after the cheap
    construction-time fixes (enum values, int → float, bounds) and may raise ``ValueError``."""
    own = cls.__dict__.get("__post_init__")
    if own is not None:
        setattr(cls, "_record_invariants", own)  # noqa: B010
    setattr(cls, "__post_init__", _first_post_init)  # noqa: B010
    if not cls.__doc__:
        cls.__doc__ = cls.__name__
    return slim.build(cls, kw_only=True, slots=True, repr=False, eq=False)


def is_record(value: Any) -> bool:
    return isinstance(value, Record)


# --------------------------------------------------------------------------------------------
# Field specs, read once per class from the dataclass fields and the resolved annotations


class Spec:
    """One decodable field: attribute ``name``, JSON ``key``, resolved ``type``, bounds.
    (A plain class: a dataclass here would cost import time for nothing.)"""

    __slots__ = ("name", "key", "type", "required", "ge", "gt", "le", "lt", "internal", "bounded")

    def __init__(self, name: str, type_: Any, required: bool, options: dict[str, Any] | None = None) -> None:
        options = options or {}
        self.name = name
        self.key: str = options.get("key") or name
        self.type = type_
        self.required = required
        self.ge: float | None = options.get("ge")
        self.gt: float | None = options.get("gt")
        self.le: float | None = options.get("le")
        self.lt: float | None = options.get("lt")
        self.internal: bool = bool(options.get("internal"))
        self.bounded = not (self.ge is None and self.gt is None and self.le is None and self.lt is None)

    def __repr__(self) -> str:
        return f"Spec({self.name!r}, {self.type!r})"


_SPECS: dict[type, tuple[Spec, ...]] = {}


def specs(cls: type) -> tuple[Spec, ...]:
    """The fields of a record class that its constructor takes, in declaration order."""
    found = _SPECS.get(cls)
    if found is None:
        hints = type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            out.append(Spec(f.name, hints[f.name], required, f.metadata.get(_META)))
        found = _SPECS[cls] = tuple(out)
    return found


class _Unsure(Exception):
    """An annotation :func:`type_hints` leaves to ``typing.get_type_hints``."""


_BUILTIN_TYPES: dict[str, Any] = {
    t.__name__: t for t in (str, int, float, bool, bytes, list, dict, tuple, set, frozenset, object)}
_BUILTIN_TYPES["None"] = type(None)


def type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, computed cheaply (it cost ~0.1 ms a class at every start).

    Every cox module has ``from __future__ import annotations``, so each annotation is a string,
    and most are a plain name (``str``, ``ProviderName``), ``Name | None`` or ``Literal['tag']``:
    those are looked up, not evaluated. Any other text is evaluated as ``get_type_hints`` does it
    (names looked up in the declaring class's module, then its body, then the builtins), but
    without its ``ForwardRef`` objects, checks and rebuilding of every generic, and with ``eval``
    of the text rather than ``compile``, whose first call in a process builds the ``ast``
    module's ~100 types (~1.5 ms). Anything out of the ordinary (a name no namespace has, a
    quoted name inside a generic, ``Annotated``, ``ClassVar``) is left to ``get_type_hints`` for
    the whole class, so the answer is its answer."""
    hints: dict[str, Any] = {}
    try:
        for base in reversed(cls.__mro__):
            annotations = base.__dict__.get("__annotations__")
            if annotations:
                namespace = getattr(sys.modules.get(base.__module__), "__dict__", None)
                if namespace is None:
                    raise _Unsure
                own: list[dict[str, Any]] = []  # the class body as eval's globals, made when needed
                for name, text in annotations.items():
                    hints[name] = _evaluate(text, namespace, base, own)
    except _Unsure:
        return typing.get_type_hints(cls)
    return hints


def _evaluate(text: Any, namespace: dict[str, Any], base: type, own: list[dict[str, Any]]) -> Any:
    if not isinstance(text, str):
        raise _Unsure
    try:
        hint = _quick(text, namespace, base.__dict__)
        if hint is _NOT_QUICK:
            if not own:
                own.append(dict(base.__dict__))
            hint = eval(text, own[0], namespace)  # noqa: S307  # a class's own annotation, as get_type_hints evaluates it
    except Exception:  # a name no namespace has, or worse: get_type_hints says what
        raise _Unsure from None
    if hint is None:
        return type(None)
    _check_settled(hint)
    return hint


_NOT_QUICK = object()


def _quick(text: str, namespace: dict[str, Any], own: Any) -> Any:
    """The commonest annotations read without evaluating them: ``Name``, ``Name | None`` and
    ``Literal['tag']`` (every event's ``type``); ``_NOT_QUICK`` for anything else."""
    optional = text.endswith(" | None")
    name = text[:-7] if optional else text
    if name.isidentifier():
        if name in namespace:
            hint = namespace[name]
        elif name in own:
            hint = own[name]
        else:
            hint = _BUILTIN_TYPES[name]
        return hint | None if optional else hint
    if name.startswith("Literal['") and name.endswith("']") and namespace.get("Literal") is Literal \
            and "'" not in name[9:-2] and "\\" not in name:
        hint = Literal[name[9:-2]]
        return hint | None if optional else hint
    return _NOT_QUICK


def _check_settled(hint: Any) -> None:
    """Raise :class:`_Unsure` when ``hint`` still holds a string or a form ``get_type_hints``
    would rewrite (``Annotated``, ``ClassVar``, ``Final``, ``InitVar``)."""
    kind = type(hint)
    if kind is type or (kind is not types.GenericAlias and issubclass(kind, type)):
        return  # a class (str, a record, an enum): nothing inside it is left to resolve
    if isinstance(hint, (str, typing.ForwardRef, dataclasses.InitVar)):  # noqa: UP038  # a tuple is quicker
        raise _Unsure
    if isinstance(hint, list):  # the parameters of a Callable
        for arg in hint:
            _check_settled(arg)
        return
    origin = get_origin(hint)
    if origin is Literal:
        return
    if origin in (typing.Annotated, typing.ClassVar, typing.Final) or hint is typing.ClassVar or hint is typing.Final:
        raise _Unsure
    for arg in get_args(hint):
        if arg is not Ellipsis:
            _check_settled(arg)


# --------------------------------------------------------------------------------------------
# Describing types and values for error messages


def choices_of(tp: Any) -> tuple[Any, ...] | None:
    """The values a ``Literal`` or an ``Enum`` allows (None for any other annotation)."""
    if get_origin(tp) is Literal:
        return get_args(tp)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tuple(member.value for member in tp)
    return None


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


_NAMES: dict[Any, tuple[str, str]] = {
    str: ("a string", "strings"), int: ("an integer", "integers"), float: ("a number", "numbers"),
    bool: ("true or false", "booleans"), type(None): ("null", "nulls"), Any: ("any value", "values"),
}


def describe(tp: Any, plural: bool = False, *, objects: tuple[str, str] = ("an object", "objects")) -> str:
    """What a value of ``tp`` looks like, in words (``"a list of strings"``). ``objects`` names a
    mapping, singular and plural: JSON's by default, TOML's ``("a table", "tables")`` for config."""
    if tp in _NAMES:
        return _NAMES[tp][plural]
    choices = choices_of(tp)
    if choices is not None:
        return "one of " + ", ".join(repr(c) for c in choices)
    if _is_union(tp):
        args = get_args(tp)
        rest = [describe(a, plural, objects=objects) for a in args if a is not type(None)]
        text = " or ".join(rest)
        return text + " or null" if len(rest) < len(args) else text
    origin = get_origin(tp) or tp
    if origin is list:
        args = get_args(tp)
        return ("lists" if plural else "a list") + (
            f" of {describe(args[0], True, objects=objects)}" if args and args[0] is not Any else "")
    if origin is tuple:
        return "lists" if plural else "a list"
    if origin is dict:
        args = get_args(tp)
        return objects[plural] + (
            f" of {describe(args[1], True, objects=objects)}" if args and args[1] is not Any else "")
    if isinstance(tp, type) and issubclass(tp, Record):
        return f"{tp.__name__} objects" if plural else f"an object ({tp.__name__})"
    return getattr(tp, "__name__", str(tp))


def _got(value: Any) -> str:
    """The value found, in JSON terms, with a short excerpt where one helps."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
        return f"a string {shown}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


class _Mismatch(DecodeError):
    """The value at ``path`` is not of the expected kind at all (rather than wrong inside)."""


def _bad(path: Path, tp: Any, value: Any) -> DecodeError:
    return _Mismatch(path, f"expected {describe(tp)}, got {_got(value)}")


# --------------------------------------------------------------------------------------------
# Decoding: one converter per annotation, built on first use


Convert = Callable[[Any, Path], Any]
_CONVERTERS: dict[Any, Convert] = {}


def decode(tp: Any, value: Any, path: Path = ()) -> Any:
    """``value`` (parsed JSON, or Python data) checked against ``tp`` and converted: records
    built, enum values made members, ints made floats where a float is declared. Raises
    :class:`DecodeError` naming the path of the first bad value."""
    return converter(tp)(value, path)


def converter(tp: Any) -> Convert:
    conv = _CONVERTERS.get(tp)
    if conv is None:
        conv = _CONVERTERS[tp] = _build(tp)
    return conv


def _build(tp: Any) -> Convert:
    if tp is Any or tp is object:
        return lambda v, p: v
    if tp is str:
        def conv_str(v: Any, p: Path) -> Any:
            if isinstance(v, str):
                return v
            raise _bad(p, tp, v)
        return conv_str
    if tp is bool:
        def conv_bool(v: Any, p: Path) -> Any:
            if isinstance(v, bool):
                return v
            raise _bad(p, tp, v)
        return conv_bool
    if tp is int:
        def conv_int(v: Any, p: Path) -> Any:
            if isinstance(v, int) and not isinstance(v, bool):
                return v
            raise _bad(p, tp, v)
        return conv_int
    if tp is float:
        def conv_float(v: Any, p: Path) -> Any:
            if isinstance(v, int | float) and not isinstance(v, bool):
                return float(v)
            raise _bad(p, tp, v)
        return conv_float
    if tp is type(None):
        def conv_none(v: Any, p: Path) -> Any:
            if v is None:
                return None
            raise _bad(p, tp, v)
        return conv_none
    if get_origin(tp) is Literal:
        allowed = get_args(tp)

        def conv_literal(v: Any, p: Path) -> Any:
            for a in allowed:
                if v == a and isinstance(v, bool) == isinstance(a, bool):
                    return a
            raise _bad(p, tp, v)
        return conv_literal
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum_converter(tp)
    if isinstance(tp, type) and issubclass(tp, Record):
        return _record_converter(tp)
    if _is_union(tp):
        return _union_converter(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is list or tp is list:
        item = converter(args[0] if args else Any)

        def conv_list(v: Any, p: Path) -> Any:
            if not isinstance(v, list | tuple):
                raise _bad(p, tp, v)
            return [item(x, (*p, i)) for i, x in enumerate(v)]
        return conv_list
    if origin is tuple or tp is tuple:
        return _tuple_converter(tp, args)
    if origin is dict or tp is dict:
        key_conv = converter(args[0] if args else Any)
        value_conv = converter(args[1] if args else Any)
        plain_values = not args or args[1] is Any

        def conv_dict(v: Any, p: Path) -> Any:
            if not isinstance(v, dict):
                raise _bad(p, tp, v)
            out = {}
            for k, x in v.items():
                key = key_conv(k, (*p, str(k)))
                out[key] = x if plain_values else value_conv(x, (*p, key))
            return out
        return conv_dict
    raise TypeError(f"record codec: no converter for the annotation {tp!r}")


def _enum_converter(tp: type[Enum]) -> Convert:
    def conv_enum(v: Any, p: Path) -> Any:
        if isinstance(v, tp):
            return v
        if isinstance(v, str | int) and not isinstance(v, bool):
            try:
                return tp(v)
            except ValueError:
                pass
        raise _bad(p, tp, v)
    return conv_enum


def _tuple_converter(tp: Any, args: tuple[Any, ...]) -> Convert:
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        item = converter(args[0] if args else Any)

        def conv_var_tuple(v: Any, p: Path) -> Any:
            if not isinstance(v, list | tuple):
                raise _bad(p, tp, v)
            return tuple(item(x, (*p, i)) for i, x in enumerate(v))
        return conv_var_tuple
    items = [converter(a) for a in args]

    def conv_tuple(v: Any, p: Path) -> Any:
        if not isinstance(v, list | tuple):
            raise _bad(p, tp, v)
        if len(v) != len(items):
            raise DecodeError(p, f"expected a list of {len(items)} items, got {len(v)}")
        return tuple(conv(x, (*p, i)) for i, (conv, x) in enumerate(zip(items, v, strict=True)))
    return conv_tuple


def tag_of(cls: type) -> str | None:
    """The ``type`` a record class is told apart by (its ``type`` field's default), if any."""
    fields: dict[str, dataclasses.Field[Any]] = getattr(cls, "__dataclass_fields__", {})
    tag = fields["type"].default if "type" in fields else None
    return tag if isinstance(tag, str) else None


def _union_converter(tp: Any) -> Convert:
    args = get_args(tp)
    nullable = type(None) in args
    rest = [a for a in args if a is not type(None)]
    tags = {}
    if len(rest) > 1 and all(isinstance(a, type) and issubclass(a, Record) for a in rest):
        tags = {tag_of(a): a for a in rest}
    if len(tags) == len(rest) and None not in tags:
        return _tagged_converter(tp, nullable, tags)
    convs = [converter(a) for a in rest]

    def conv_union(v: Any, p: Path) -> Any:
        if v is None and nullable:
            return None
        if len(convs) == 1:
            try:
                return convs[0](v, p)
            except _Mismatch as exc:
                if exc.path != p:
                    raise
                raise _bad(p, tp, v) from None
        for conv in convs:
            try:
                return conv(v, p)
            except DecodeError:
                continue
        raise _bad(p, tp, v)
    return conv_union


def _tagged_converter(tp: Any, nullable: bool, tags: dict[str | None, type]) -> Convert:
    expected = ", ".join(repr(t) for t in tags)

    def conv_tagged(v: Any, p: Path) -> Any:
        if v is None and nullable:
            return None
        if isinstance(v, tuple(tags.values())):
            return v
        if not isinstance(v, dict):
            raise _bad(p, tp, v)
        if "type" not in v:
            raise DecodeError(p, f"no 'type' field (expected one of: {expected})")
        cls = tags.get(v["type"]) if isinstance(v["type"], str) else None
        if cls is None:
            raise DecodeError((*p, "type"), f"unknown type {v['type']!r} (expected one of: {expected})")
        return converter(cls)(v, p)
    return conv_tagged


def _record_converter(cls: type) -> Convert:
    fields: dict[str, tuple[Spec, Convert]] = {}
    required: list[Spec] = []
    ready: list[bool] = []

    def prepare() -> None:  # on first use, so a record may contain itself
        ready.append(True)
        for spec in specs(cls):
            if not spec.internal:
                fields[spec.key] = (spec, converter(spec.type))
                if spec.required:
                    required.append(spec)

    def conv_record(v: Any, p: Path) -> Any:
        if isinstance(v, cls):
            return v
        if not isinstance(v, dict):
            raise _bad(p, cls, v)
        if not ready:
            prepare()
        kwargs = {}
        for key, x in v.items():
            entry = fields.get(key) if isinstance(key, str) else None
            if entry is None:
                raise DecodeError((*p, str(key)), f"unknown field (known: {', '.join(fields)})")
            spec, conv = entry
            value = conv(x, (*p, key))
            if spec.bounded and value is not None:
                problem = out_of_bounds(spec, value)
                if problem:
                    raise DecodeError((*p, key), problem)
            kwargs[spec.name] = value
        for spec in required:
            if spec.name not in kwargs:
                raise DecodeError((*p, spec.key), f"missing (expected {describe(spec.type)})")
        try:
            return cls(**kwargs)
        except (ValueError, TypeError) as exc:
            raise DecodeError(p, str(exc)) from None
    return conv_record


def out_of_bounds(spec: Spec, value: Any) -> str | None:
    """What is wrong with a decoded ``value`` against the bounds of field ``spec`` (None: fine)."""
    what = describe(unwrap_optional(spec.type))
    if spec.ge is not None and not value >= spec.ge:
        return f"expected {what} >= {spec.ge}, got {value!r}"
    if spec.gt is not None and not value > spec.gt:
        return f"expected {what} > {spec.gt}, got {value!r}"
    if spec.le is not None and not value <= spec.le:
        return f"expected {what} <= {spec.le}, got {value!r}"
    if spec.lt is not None and not value < spec.lt:
        return f"expected {what} < {spec.lt}, got {value!r}"
    return None


def unwrap_optional(tp: Any) -> Any:
    """``X`` for ``X | None``; any other annotation as it is."""
    if _is_union(tp):
        rest = [a for a in get_args(tp) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp


# --------------------------------------------------------------------------------------------
# Construction: the cheap fixes, installed per class on its first construction


def _first_post_init(self: Any) -> None:
    cls = type(self)
    fix = _post_init_for(cls)
    setattr(cls, "__post_init__", fix)  # noqa: B010 - replaces this very function
    fix(self)


def _noop(self: Any) -> None:
    return None


def _post_init_for(cls: type) -> Callable[[Any], None]:
    steps: list[Callable[[Any], None]] = []
    for spec in specs(cls):
        steps.extend(_fixes(spec))
    invariants = getattr(cls, "_record_invariants", None)
    if invariants is not None:
        steps.append(invariants)
    if not steps:
        return _noop
    if len(steps) == 1:
        return steps[0]

    def post_init(self: Any) -> None:
        for step in steps:
            step(self)
    return post_init


def _fixes(spec: Spec) -> list[Callable[[Any], None]]:
    name, tp = spec.name, unwrap_optional(spec.type)
    out: list[Callable[[Any], None]] = []
    if isinstance(tp, type) and issubclass(tp, Enum):
        enum_type = tp

        def to_member(self: Any) -> None:
            value = getattr(self, name)
            if value is not None and value.__class__ is not enum_type:
                setattr(self, name, enum_type(value))
        out.append(to_member)
    elif tp is float:
        def to_float(self: Any) -> None:
            if getattr(self, name).__class__ is int:
                setattr(self, name, float(getattr(self, name)))
        out.append(to_float)
    if spec.bounded:
        def bounds(self: Any) -> None:
            value = getattr(self, name)
            if value is not None:
                problem = out_of_bounds(spec, value)
                if problem:
                    raise ValueError(f"{spec.key}: {problem}")
        out.append(bounds)
    return out


# --------------------------------------------------------------------------------------------
# Encoding


def json_float(value: float) -> str:
    """A float as pydantic (serde) writes it: like ``repr`` but ``0.00001`` rather than
    ``1e-05``, ``1e-7`` rather than ``1e-07``, and ``null`` for infinities and NaN."""
    if not math.isfinite(value):
        return "null"
    text = float.__repr__(value)
    if "e-" not in text:
        return text
    mantissa, exponent = text.split("e-")
    if exponent == "05":
        sign = "-" if mantissa[0] == "-" else ""
        return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
    return f"{mantissa}e-{int(exponent)}"


def _plain_default(value: Any) -> Any:
    if isinstance(value, Record):
        return to_plain(value, exclude_none=True)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, set | frozenset):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_plain_default)
_encode_string: Callable[[str], str] = json.encoder.encode_basestring


def _json_slow(value: Any) -> str:
    """The careful encoder, for what the C one writes differently from pydantic: floats below
    1e-4 (``1e-05``) and NaN or infinities (which it refuses)."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_json_slow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_encode_string(_json_key(k)) + ":" + _json_slow(v) for k, v in value.items()) + "}"
    return _json_slow(_plain_default(value))


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return "null" if key is None else "true" if key else "false"
    if isinstance(key, float):
        return json_float(key)
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be strings, not {type(key).__name__}")


def json_any(value: Any) -> str:
    """Free-form data as compact JSON, written as pydantic wrote it (NaN and infinities as
    ``null``, ``0.00001`` and ``1e-7`` rather than ``1e-05`` and ``1e-07``)."""
    try:
        text = _JSON.encode(value)
    except ValueError:
        return _json_slow(value)
    return _json_slow(value) if "e-0" in text else text


def _json_str(value: Any) -> str:
    return _encode_string(value) if value.__class__ is str else json_any(value)


def _json_int(value: Any) -> str:
    return int.__repr__(value) if value.__class__ is int else json_any(value)


def _json_bool(value: Any) -> str:
    return "true" if value is True else "false" if value is False else json_any(value)


def _json_float(value: Any) -> str:
    if value.__class__ is float:
        return json_float(value)
    if value.__class__ is int:
        return json_float(float(value))
    return json_any(value)


def _json_record(value: Any) -> str:
    if isinstance(value, Record):
        return to_json(value)
    return json_any(value)


def _value_encoder(tp: Any) -> Callable[[Any], str]:
    if tp is str or (isinstance(tp, type) and issubclass(tp, str)):
        return _json_str
    choices = choices_of(tp)
    if choices is not None and all(isinstance(c, str) for c in choices):
        return _json_str
    if tp is bool:
        return _json_bool
    if tp is int:
        return _json_int
    if tp is float:
        return _json_float
    if isinstance(tp, type) and issubclass(tp, Record):
        return _json_record
    return json_any


_ENCODERS: dict[type, Callable[[Any], str]] = {}
GENERATE_AFTER = 8
"""Uses of a class's encoder after which it is generated: before, a loop over the same field
list writes the same bytes, so a class written once or twice at start-up (``session_started``)
compiles nothing, and one written thousands of times a second (``text_delta``) gets the
straight-line encoder."""

_Plan = tuple[tuple[str, str, Callable[[Any], str]], ...]  # (attribute, ',"key":', value encoder)


def to_json(value: Any) -> str:
    """A record as one line of compact JSON: ``None`` fields and internal ones left out, JSON
    names used, non-ASCII text written as is."""
    encode = _ENCODERS.get(type(value))
    if encode is None:
        encode = _ENCODERS[type(value)] = _first_encoder(type(value))
    return encode(value)


def _encoding_plan(cls: type) -> _Plan:
    if not issubclass(cls, Record):
        raise TypeError(f"to_json: {cls.__name__} is not a record")
    return tuple((spec.name, "," + json.dumps(spec.key) + ":", _value_encoder(unwrap_optional(spec.type)))
                 for spec in specs(cls) if not spec.internal)


def _first_encoder(cls: type) -> Callable[[Any], str]:
    """``cls``'s encoder for its first uses (:data:`GENERATE_AFTER`), which then installs the
    generated one."""
    plan = _encoding_plan(cls)
    uses = [0]

    def encode(o: Any) -> str:
        uses[0] += 1
        if uses[0] == GENERATE_AFTER:
            _ENCODERS[cls] = _json_encoder(plan)
        s = ""
        for name, prefix, value_encoder in plan:
            v = getattr(o, name)
            if v is not None:
                s += prefix + value_encoder(v)
        return "{" + s[1:] + "}"
    return encode


def _json_encoder(plan: _Plan) -> Callable[[Any], str]:
    """Generate the encoder of a class's ``plan``: one ``None`` check and one string
    concatenation per field."""
    env: dict[str, Any] = {}
    lines = ["def encode(o):", "    s = ''"]
    for i, (name, prefix, value_encoder) in enumerate(plan):
        env[f"e{i}"] = value_encoder
        lines += [f"    v = o.{name}", "    if v is not None:", f"        s += {prefix!r} + e{i}(v)"]
    lines.append("    return '{' + s[1:] + '}'")
    exec("\n".join(lines), env)  # generated from the class's own field list, as dataclasses does
    encode: Callable[[Any], str] = env["encode"]
    return encode


def _plain(value: Any, exclude_none: bool) -> Any:
    if isinstance(value, Record):
        return to_plain(value, exclude_none=exclude_none)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v, exclude_none) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, exclude_none) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float):
        return value
    return _plain(_plain_default(value), exclude_none)


def to_plain(value: Any, *, exclude_none: bool = False) -> dict[str, Any]:
    """A record as plain JSON-able data (enums as their values, nested records as dicts, JSON
    names as keys, internal fields left out); ``exclude_none`` drops ``None`` fields."""
    out: dict[str, Any] = {}
    for spec in specs(type(value)):
        if spec.internal:
            continue
        item = getattr(value, spec.name)
        if item is None and exclude_none:
            continue
        out[spec.key] = _plain(item, exclude_none)
    return out
