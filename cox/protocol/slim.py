"""Dataclasses built cheaply: the class at import, its ``__init__`` on first construction.

Why: ``dataclasses.dataclass`` compiles source for ``__init__``, ``__repr__`` and ``__eq__`` of
every class when the module is imported (and, with ``slots=True``, builds the class twice). On
the path of ``cox run -p`` that was ~100 classes and 40-some ms of a ~95 ms import, for classes
most of which are never instantiated before the first model request.

:func:`build` makes the same class ``dataclasses.dataclass(slots=True, ...)`` would, as far as
anything reads it — ``__slots__``, ``__dataclass_fields__`` (so ``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work), ``__match_args__``, the same ``__init__``
signature, default and ``default_factory`` handling and ``__post_init__`` call, the same errors
for a mutable default or a required field after a defaulted one — but compiles nothing: the
``__init__`` is generated the first time the class is constructed, and ``==``/``repr`` are two
shared functions that read the field list. Supported: ``slots=True`` classes without
``frozen``, ``order``, ``unsafe_hash`` or ``InitVar`` (what the protocol's classes use).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

_MISSING = dataclasses.MISSING
_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]  # the marker dataclasses.fields() keeps
_get_field: Callable[[type, str, Any, bool], dataclasses.Field[Any]] = dataclasses._get_field  # type: ignore[attr-defined]


def _params() -> Any:
    """The ``__dataclass_params__`` of every class built here (init, no generated repr/eq)."""
    params = dataclasses._DataclassParams  # type: ignore[attr-defined]
    try:
        return params(True, False, False, False, False, False)  # 3.11: init … frozen
    except TypeError:  # 3.12 and later add match_args, kw_only, slots, weakref_slot
        return params(True, False, False, False, False, False, True, False, True, False)


_PARAMS = _params()
_COMPARED: dict[type, tuple[str, ...]] = {}


def compared(cls: type) -> tuple[str, ...]:
    """The names ``==`` compares (the fields with ``compare``), read once per class."""
    names = _COMPARED.get(cls)
    if names is None:
        names = _COMPARED[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.compare)
    return names


def fields_eq(self: Any, other: object) -> Any:
    """A dataclass's ``==``: same class and equal fields."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    return all(getattr(self, name) == getattr(other, name) for name in compared(type(self)))


def fields_repr(self: Any) -> str:
    """A dataclass's ``repr``: ``Name(field=value, ...)`` over the fields with ``repr``."""
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{type(self).__qualname__}({shown})"


@dataclass_transform(field_specifiers=(dataclasses.field,))
def dataclass(cls: type[T]) -> type[T]:
    """``@dataclasses.dataclass(slots=True)`` (positional ``__init__``, ``==``, ``repr``),
    built as :func:`build` does."""
    return build(cls, kw_only=False, eq_repr=True)


def build(cls: type[T], *, kw_only: bool, eq_repr: bool) -> type[T]:
    """``cls`` as a slotted dataclass (keyword-only if ``kw_only``; with ``==``, ``repr`` and
    ``__hash__ = None`` if ``eq_repr``), its ``__init__`` made on first use."""
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        fields.update(getattr(base, "__dataclass_fields__", None) or {})
    own: list[str] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        f = _get_field(cls, name, annotation, kw_only)  # ClassVar detection, mutable-default check
        if f._field_type is _FIELD:  # type: ignore[attr-defined]
            fields[name] = f
            own.append(name)
        elif f._field_type is not dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            raise TypeError(f"{cls.__qualname__}.{name}: InitVar is not supported here")
    if not kw_only:
        _check_order(cls, fields)
    ns = {k: v for k, v in cls.__dict__.items() if k not in own and k not in ("__dict__", "__weakref__")}
    ns.update(__slots__=tuple(own), __dataclass_fields__=fields, __dataclass_params__=_PARAMS,
              __match_args__=tuple(n for n, f in fields.items() if f.init and not f.kw_only))
    if eq_repr:
        ns.update(__eq__=fields_eq, __repr__=fields_repr, __hash__=None)
    meta: Any = type(cls)
    new: type[T] = meta(cls.__name__, cls.__bases__, ns)
    new.__qualname__ = cls.__qualname__
    setattr(new, "__init__", _first_init(new))  # noqa: B010
    return new


def _check_order(cls: type, fields: dict[str, dataclasses.Field[Any]]) -> None:
    seen_default = False
    for f in fields.values():
        if not f.init or f.kw_only:
            continue
        if f.default is _MISSING and f.default_factory is _MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = True


def _first_init(cls: type) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = make_init(cls)
        cls.__init__ = init  # type: ignore[misc]  # replaces this very function
        init(self, *args, **kwargs)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"  # what inspect.signature shows for it, as for a dataclass


_FACTORY = _Factory()


def make_init(cls: type) -> Callable[..., None]:
    """The ``__init__`` dataclasses would write for ``cls``, compiled now."""
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for i, f in enumerate(cls.__dataclass_fields__.values()):  # type: ignore[attr-defined]
        name = f.name
        if f.default is not _MISSING:
            env[f"_d{i}"] = f.default
            default, value = f"_d{i}", name
        elif f.default_factory is not _MISSING:
            env[f"_f{i}"] = f.default_factory
            default, value = "_FACTORY", f"_f{i}() if {name} is _FACTORY else {name}"
        else:
            default, value = "", name
        if not f.init:
            if default:
                body.append(f"    self.{name} = {f'_d{i}' if f.default is not _MISSING else f'_f{i}()'}")
            continue
        (keyword if f.kw_only else positional).append(f"{name}={default}" if default else name)
        body.append(f"    self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ["self", *positional] + (["*", *keyword] if keyword else [])
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    exec(source, env)  # generated from the class's own field list, as dataclasses does
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {f.name: f.type for f in cls.__dataclass_fields__.values() if f.init}  # type: ignore[attr-defined]
    init.__annotations__["return"] = None
    return init
