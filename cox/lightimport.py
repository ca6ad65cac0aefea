"""``dataclasses``, ``logging`` and ``uuid`` without the modules they import only for rare calls.

Why: ``import dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``…) and
``copy`` at its top, ~7 ms on the way to ``cox run -p``'s first request, yet it calls them only
in ``dataclasses.dataclass`` itself (``inspect.signature``, for a class without a docstring) and
in ``asdict``/``astuple`` (``copy.deepcopy``). cox's own classes are built by ``cox.slim``, which
needs neither. So ``cox/__init__`` imports ``dataclasses`` here first, with a stand-in for each
of the two that imports the real module on the first attribute asked of it. Only
``dataclasses``'s own reference is a stand-in: the stand-ins leave ``sys.modules`` as soon as
``dataclasses`` is imported, so every other ``import inspect`` or ``import copy`` gets the real
module. When ``dataclasses`` is imported already (a host process), nothing changes.

``logging`` (pykka's modules each make a logger) imports ``traceback`` (with ``linecache``,
``tokenize`` and ``textwrap``), ~3 ms, which it calls only to format an exception or a stack it
logs. It is imported here with the same kind of stand-in for ``traceback``.

``uuid`` (pykka names every actor with one) imports ``platform``, ~2 ms, to ask
``platform.system()`` once at its import, on POSIX; ``platform.system()`` is ``os.uname()``'s
``sysname`` there. So ``uuid`` is imported here with a stand-in ``platform`` that answers that
question from ``os.uname()`` and imports the real module for anything else; the stand-in leaves
``sys.modules`` at once, so ``import platform`` anywhere else gets the real module.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any


class OnFirstUse(types.ModuleType):
    """Stands in for module ``name``: its first attribute imports the real one (the import
    system's own lock makes that safe from any thread)."""

    def __getattr__(self, attr: str) -> Any:
        if sys.modules.get(self.__name__) is self:  # asked while dataclasses itself was importing
            del sys.modules[self.__name__]
        return getattr(__import__(self.__name__), attr)


class PlatformForUuid(OnFirstUse):
    """``platform`` while ``uuid`` is imported: ``system()`` as ``platform.system()`` answers on
    POSIX (``os.uname().sysname``), anything else from the real module."""

    def system(self) -> str:
        return os.uname().sysname


def import_uuid() -> None:
    if "uuid" in sys.modules or "platform" in sys.modules or not hasattr(os, "uname"):
        return
    stand_in = PlatformForUuid("platform")
    sys.modules["platform"] = stand_in
    try:
        import uuid  # noqa: F401  # asks the stand-in
    finally:
        if sys.modules.get("platform") is stand_in:
            del sys.modules["platform"]


def import_deferring(module: str, deferred: tuple[str, ...]) -> None:
    """Import ``module`` with a stand-in for each of ``deferred`` not imported yet (nothing when
    ``module`` is imported already)."""
    if module in sys.modules:
        return
    stand_ins = {name: OnFirstUse(name) for name in deferred if name not in sys.modules}
    sys.modules.update(stand_ins)
    try:
        __import__(module)  # binds the stand-ins
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


import_deferring("dataclasses", ("inspect", "copy"))
import_deferring("logging", ("traceback",))
import_uuid()
