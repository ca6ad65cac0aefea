"""lsprotocol's converter, once: typed records to the wire's JSON and back.

Imported only when a language server starts (lsprotocol and cattrs cost ~0.5 s to import), never
on ``cox run -p``'s path.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

__all__ = ["into", "out"]

T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def _converter() -> Any:
    from lsprotocol import converters

    return converters.get_converter()


def out(value: Any) -> Any:
    """A typed lsprotocol record as wire JSON."""
    return _converter().unstructure(value)


def into(data: Any, kind: type[T]) -> T:
    """Wire JSON as the lsprotocol type ``kind``; raises ValueError for data of another shape."""
    try:
        return _converter().structure(data, kind)  # type: ignore[no-any-return]
    except Exception as exc:
        raise ValueError(f"the server's answer is not a {getattr(kind, '__name__', kind)}: {exc}") from None
