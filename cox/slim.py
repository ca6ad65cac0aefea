"""``dataclass`` built cheaply: the class at import, its ``__init__`` once it is constructed often.

Why: ``dataclasses.dataclass`` compiles source for ``__init__``, ``__repr__``, ``__eq__`` (and
``__hash__``, the order methods, the frozen ``__setattr__``) of every class when its module is
imported, and with ``slots=True`` builds the class twice. On the path of ``cox run -p`` that was
~100 classes and 40-some ms of a ~95 ms import, for classes most of which are not instantiated
before the first model request.

:func:`dataclass` takes the same arguments and makes the same class, as far as anything reads
it: ``__slots__``, ``__dataclass_fields__`` and ``__dataclass_params__`` (so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work), ``__match_args__``,
the ``__init__`` signature with its defaults, factories and ``__post_init__`` call, ``==``,
``repr``, ``hash`` and order as dataclasses defines them, frozen assignment errors, and the
same definition-time errors (a mutable default, a required field after a defaulted one, frozen
mixed with non-frozen bases). It compiles nothing at import: ``==``, ``repr``, ``hash`` and
order are shared functions that read the field list, and so is ``__init__`` for a class's first
:data:`INTERPRETED_CONSTRUCTIONS` constructions; only a class constructed more often gets the
generated ``__init__``. The Field objects are made directly; dataclasses' ClassVar/InitVar
detection (a regex and a module lookup per string annotation) runs only for an annotation whose
text names one, so a module alias of ``ClassVar`` (``CV = ClassVar``; ``x: CV``) is a field
here. Not supported (a ``TypeError`` says so): ``InitVar``. Two differences: a class without a
docstring keeps ``__doc__`` ``None`` (dataclasses computes one with ``inspect.signature``), and
``inspect.signature`` of a class constructed fewer than :data:`INTERPRETED_CONSTRUCTIONS` times
shows ``(*args, **kwargs)``.
"""

from __future__ import annotations

import abc
import dataclasses
import reprlib
import types
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_MISSING = dataclasses.MISSING
_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]  # the marker dataclasses.fields() keeps
_CLASSVAR = dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
_get_field: Callable[[type, str, Any, bool], dataclasses.Field[Any]] = dataclasses._get_field  # type: ignore[attr-defined]
_MEMBER = types.MemberDescriptorType  # a __slots__ entry: the field has no default


def _field_of(default: Any) -> dataclasses.Field[Any]:
    """``dataclasses.field(default=default)`` without its argument checks (none apply)."""
    return dataclasses.Field(default, _MISSING, True, True, None, True, None, _MISSING)  # type: ignore[arg-type]


try:
    _field_of(None)
    _new_field: Callable[[Any], dataclasses.Field[Any]] = _field_of
except TypeError:  # a Python whose Field takes other arguments
    _new_field = lambda default: dataclasses.field(default=default)  # noqa: E731
_Params: Any = dataclasses._DataclassParams  # type: ignore[attr-defined]
_getstate: Any = getattr(dataclasses, "_dataclass_getstate", None)
_setstate: Any = getattr(dataclasses, "_dataclass_setstate", None)


def _params(init: bool, repr: bool, eq: bool, order: bool, unsafe_hash: bool, frozen: bool,  # noqa: A002
            match_args: bool, kw_only: bool, slots: bool, weakref_slot: bool) -> Any:
    try:
        return _Params(init, repr, eq, order, unsafe_hash, frozen)  # 3.11
    except TypeError:  # 3.12 and later record the rest too
        return _Params(init, repr, eq, order, unsafe_hash, frozen, match_args, kw_only, slots, weakref_slot)


# ---------------------------------------------------------------- the shared methods


_NAMES: dict[tuple[type, str], tuple[str, ...]] = {}


def _names(cls: type, which: str) -> tuple[str, ...]:
    """The field names ``==``/order (``compare``) or ``hash`` use, read once per class."""
    names = _NAMES.get((cls, which))
    if names is None:
        fields = dataclasses.fields(cls)
        if which == "compare":
            names = tuple(f.name for f in fields if f.compare)
        else:
            names = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        _NAMES[(cls, which)] = names
    return names


def compared(cls: type) -> tuple[str, ...]:
    """The names ``==`` compares (the fields with ``compare``)."""
    return _names(cls, "compare")


def _values(self: Any, which: str = "compare") -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in _names(type(self), which))


def fields_eq(self: Any, other: object) -> Any:
    """A dataclass's ``==``: the same class and equal field tuples."""
    if other.__class__ is self.__class__:
        return _values(self) == _values(other)
    return NotImplemented


@reprlib.recursive_repr()
def fields_repr(self: Any) -> str:
    """A dataclass's ``repr``: ``Name(field=value, ...)`` over the fields with ``repr``."""
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{self.__class__.__qualname__}({shown})"


def fields_hash(self: Any) -> int:
    """A dataclass's generated ``hash``: of the tuple of its hashed fields."""
    return hash(_values(self, "hash"))


def _order(op: Callable[[tuple[Any, ...], tuple[Any, ...]], bool], name: str) -> Callable[[Any, object], Any]:
    def method(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return op(_values(self), _values(other))
        return NotImplemented
    method.__name__ = method.__qualname__ = name
    return method


_ORDER = {"__lt__": _order(lambda a, b: a < b, "__lt__"), "__le__": _order(lambda a, b: a <= b, "__le__"),
          "__gt__": _order(lambda a, b: a > b, "__gt__"), "__ge__": _order(lambda a, b: a >= b, "__ge__")}


def _frozen(made: list[type], fields: dict[str, dataclasses.Field[Any]]) -> dict[str, Any]:
    """``__setattr__`` and ``__delattr__`` refusing the fields of ``made[0]`` (the class, put
    there once it is made)."""
    names = tuple(fields)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        cls = made[0]
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]  # mypy misreads cls here

    def __delattr__(self: Any, name: str) -> None:
        cls = made[0]
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return {"__setattr__": __setattr__, "__delattr__": __delattr__}


# ---------------------------------------------------------------- the decorator


@overload
def dataclass(cls: type[T], /) -> type[T]: ...
@overload
def dataclass(*, init: bool = True, repr: bool = True, eq: bool = True, order: bool = False,  # noqa: A002
              unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True, kw_only: bool = False,
              slots: bool = False, weakref_slot: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[T] | None = None, /, *, init: bool = True, repr: bool = True, eq: bool = True,  # noqa: A002
              order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
              kw_only: bool = False, slots: bool = False, weakref_slot: bool = False) -> Any:
    """``dataclasses.dataclass``, with nothing compiled until the class is first constructed."""
    options = dict(init=init, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash, frozen=frozen,
                   match_args=match_args, kw_only=kw_only, slots=slots, weakref_slot=weakref_slot)

    def wrap(c: type[T]) -> type[T]:
        return build(c, **options)
    return wrap if cls is None else wrap(cls)


def build(cls: type[T], *, init: bool = True, repr: bool = True, eq: bool = True,  # noqa: A002, C901
          order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
          kw_only: bool = False, slots: bool = False, weakref_slot: bool = False) -> type[T]:
    """``cls`` as ``dataclasses.dataclass(**options)`` would make it, its ``__init__`` made on
    first use."""
    if order and not eq:
        raise ValueError("eq must be true if order is true")
    if weakref_slot and not slots:
        raise TypeError("weakref_slot is True but slots is False")
    fields: dict[str, dataclasses.Field[Any]] = {}
    any_frozen_base = has_dataclass_bases = False
    for base in cls.__mro__[-1:0:-1]:
        base_fields = getattr(base, "__dataclass_fields__", None)
        if base_fields is not None:
            has_dataclass_bases = True
            fields.update((f.name, f) for f in base_fields.values())
            if base.__dataclass_params__.frozen:  # type: ignore[attr-defined]
                any_frozen_base = True
    own: list[str] = []
    annotations = cls.__dict__.get("__annotations__", {})
    field_kw_only = kw_only
    for name, annotation in annotations.items():
        if annotation in (dataclasses.KW_ONLY, "KW_ONLY", "dataclasses.KW_ONLY"):
            field_kw_only = True
            continue
        f = _field(cls, name, annotation, field_kw_only)
        if f._field_type is _FIELD:  # type: ignore[attr-defined]
            fields[name] = f
            own.append(name)
        elif f._field_type is not _CLASSVAR:  # type: ignore[attr-defined]
            raise TypeError(f"{cls.__qualname__}.{name}: InitVar is not supported by cox.slim")
    for name, value in cls.__dict__.items():
        if isinstance(value, dataclasses.Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    if has_dataclass_bases:
        if any_frozen_base and not frozen:
            raise TypeError("cannot inherit non-frozen dataclass from a frozen one")
        if not any_frozen_base and frozen:
            raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
    if init:
        _check_order(fields)

    added: dict[str, Any] = {"__dataclass_fields__": fields,
                             "__dataclass_params__": _params(init, repr, eq, order, unsafe_hash, frozen, match_args,
                                                             kw_only, slots, weakref_slot)}
    new_methods: dict[str, Any] = {}
    if repr:
        new_methods["__repr__"] = fields_repr
    if eq:
        new_methods["__eq__"] = fields_eq
    if order:
        for name, method in _ORDER.items():
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}. "
                                "Consider using functools.total_ordering")
            new_methods[name] = method
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    class_hash = cls.__dict__.get("__hash__", _MISSING)
    explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    if unsafe_hash and explicit_hash:
        raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
    if not explicit_hash:
        if unsafe_hash or (eq and frozen):
            added["__hash__"] = fields_hash
        elif eq:
            added["__hash__"] = None
    if match_args and "__match_args__" not in cls.__dict__:
        added["__match_args__"] = tuple(n for n, f in fields.items() if f.init and not f.kw_only)
    for name, method in new_methods.items():
        if name not in cls.__dict__:
            added[name] = method

    # The frozen methods and the __init__ stand-in find the class through ``made`` (filled once it
    # exists), so that with slots they go in the namespace the class is made from: setting a
    # dunder on a class afterwards costs a slot update each.
    made: list[type] = []
    late: dict[str, Any] = _frozen(made, fields) if frozen else {}
    if init and "__init__" not in cls.__dict__:
        late["__init__"] = _first_init(made, cls.__qualname__, frozen, slots)
    if slots:
        if "__slots__" in cls.__dict__:
            raise TypeError(f"{cls.__name__} already specifies __slots__")
        inherited = {s for base in cls.__mro__[1:-1] for s in _slot_names(base)}
        ns = {k: v for k, v in cls.__dict__.items() if k not in own and k not in ("__dict__", "__weakref__")}
        ns["__slots__"] = tuple(n for n in fields if n not in inherited) + (("__weakref__",) if weakref_slot else ())
        ns["__qualname__"] = cls.__qualname__
        ns.update(added)
        ns.update(late)
        if frozen and _getstate is not None:
            ns["__getstate__"], ns["__setstate__"] = _getstate, _setstate  # as dataclasses does for frozen slots
        meta: Any = type(cls)
        new: type[T] = meta(cls.__name__, cls.__bases__, ns)
    else:
        new = cls
        for name in own:
            f = fields[name]
            if f.default is _MISSING:
                if isinstance(cls.__dict__.get(name), dataclasses.Field):
                    delattr(cls, name)
            else:
                setattr(new, name, f.default)
        for name, value in (added | late).items():
            setattr(new, name, value)
    made.append(new)
    if isinstance(new, abc.ABCMeta):
        abc.update_abstractmethods(new)
    return new


def _field(cls: type, name: str, annotation: Any, kw_only: bool) -> dataclasses.Field[Any]:
    """The Field dataclasses' ``_get_field`` makes, made directly for a string annotation that
    cannot name ``ClassVar`` or ``InitVar`` (dataclasses matches a regex against every string
    annotation and looks its first word up in the module); any other goes through dataclasses."""
    if not isinstance(annotation, str) or "ClassVar" in annotation or "InitVar" in annotation:
        return _get_field(cls, name, annotation, kw_only)
    default = getattr(cls, name, _MISSING)
    if isinstance(default, dataclasses.Field):
        f = default
    else:
        f = _new_field(_MISSING if type(default) is _MEMBER else default)
    f.name = name
    f.type = annotation
    f._field_type = _FIELD  # type: ignore[attr-defined]
    if f.kw_only is _MISSING:
        f.kw_only = kw_only
    if f.default.__class__.__hash__ is None:
        raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
    return f


def _slot_names(cls: type) -> tuple[str, ...]:
    slots = cls.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _check_order(fields: dict[str, dataclasses.Field[Any]]) -> None:
    seen_default = False
    for f in fields.values():
        if not f.init or f.kw_only:
            continue
        if f.default is _MISSING and f.default_factory is _MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = True


INTERPRETED_CONSTRUCTIONS = 8
"""How many times a class is constructed by the field-list loop before its ``__init__`` is
compiled (most classes on the way to the first request are made once or twice: a compile, ~0.1
ms each, would cost more than all of their constructions)."""


def _first_init(made: list[type], qualname: str, frozen: bool, slots: bool) -> Callable[..., None]:
    """The stand-in ``__init__``: the first :data:`INTERPRETED_CONSTRUCTIONS` constructions set
    the fields from the field list, as the generated code would; after those, or at once for any
    call the loop does not handle plainly (too many arguments, an unknown or repeated keyword, a
    required field missing), the generated ``__init__`` replaces it and runs, so its errors are
    the ones dataclasses' raises."""
    plan: tuple[tuple[str, ...], frozenset[str], tuple[tuple[str, bool, Any, Any], ...], bool] | None = None
    uses = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal plan, uses
        cls = made[0]
        uses += 1
        if uses <= INTERPRETED_CONSTRUCTIONS:
            if plan is None:
                plan = _plan(cls, slots)
            positional, accepted, steps, post_init = plan
            if len(args) <= len(positional) and accepted.issuperset(kwargs) \
                    and not any(name in kwargs for name in positional[:len(args)]):
                given = dict(zip(positional, args, strict=False))  # the rest by keyword or default
                given.update(kwargs)
                put = object.__setattr__ if frozen else setattr
                for name, takes, default, factory in steps:
                    if takes and name in given:
                        put(self, name, given[name])
                    elif factory is not _MISSING:
                        put(self, name, factory())
                    elif default is not _MISSING:
                        put(self, name, default)
                    else:
                        break  # a required field is missing: the generated code says so
                else:
                    if post_init:
                        self.__post_init__()
                    return
        init = make_init(cls, frozen, slots)
        setattr(cls, "__init__", init)  # noqa: B010  # replaces this very function
        init(self, *args, **kwargs)
    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__


def _plan(cls: type, slots: bool) -> tuple[tuple[str, ...], frozenset[str], tuple[tuple[str, bool, Any, Any], ...], bool]:
    """What :func:`make_init`'s code does, as data: the positional parameters, every parameter,
    and per field set (in field order) its name, whether a parameter gives it, its default and
    its factory; and whether ``__post_init__`` runs."""
    fields: dict[str, dataclasses.Field[Any]] = cls.__dataclass_fields__  # type: ignore[attr-defined]
    steps = []
    for f in fields.values():
        if f.init or f.default_factory is not _MISSING or (f.default is not _MISSING and slots):
            steps.append((f.name, f.init, f.default, f.default_factory))
    positional = tuple(f.name for f in fields.values() if f.init and not f.kw_only)
    return positional, frozenset(f.name for f in fields.values() if f.init), tuple(steps), hasattr(cls, "__post_init__")


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"  # what inspect.signature shows for it, as for a dataclass


_FACTORY = _Factory()


def make_init(cls: type, frozen: bool = False, slots: bool = True) -> Callable[..., None]:
    """The ``__init__`` dataclasses would write for ``cls``, compiled now."""
    env: dict[str, Any] = {"_FACTORY": _FACTORY, "_set": object.__setattr__}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    fields: dict[str, dataclasses.Field[Any]] = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for i, f in enumerate(fields.values()):
        name = f.name
        if f.default_factory is not _MISSING:
            env[f"_f{i}"] = f.default_factory
            default, value = "_FACTORY", (f"_f{i}() if {name} is _FACTORY else {name}" if f.init else f"_f{i}()")
        elif f.default is not _MISSING:
            env[f"_d{i}"] = f.default
            default, value = f"_d{i}", (name if f.init else f"_d{i}")
            if not f.init and not slots:
                continue  # the class attribute provides it
        else:
            default, value = "", name
            if not f.init:
                continue
        if f.init:
            (keyword if f.kw_only else positional).append(f"{name}={default}" if default else name)
        body.append(f"    _set(self, {name!r}, {value})" if frozen else f"    self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ["self", *positional] + (["*", *keyword] if keyword else [])
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    exec(source, env)  # generated from the class's own field list, as dataclasses does
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {f.name: f.type for f in fields.values() if f.init}
    init.__annotations__["return"] = None
    return init
