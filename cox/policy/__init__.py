"""The trust guards, pure and fast: the permission engine and its rule grammar, bash splitting,
path confinement, redaction and terminal sanitising.

Nothing here starts a thread, opens a socket or spawns a process. Names are loaded on first use
(PEP 562), so ``import cox.policy.redact`` on the event path does not pull in the engine, and
nothing imports tree-sitter until a bash line or a Bash rule is first parsed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bash import Classification, Split, classify, split
    from .defaults import DEFAULT_DENY
    from .paths import PathEscape, confine
    from .permission import Engine, Outcome
    from .redact import scrub
    from .rules import Rule, RuleError, parse_rule
    from .sanitize import sanitize

_WHERE = {
    "Classification": "bash", "Split": "bash", "classify": "bash", "split": "bash",
    "DEFAULT_DENY": "defaults", "PathEscape": "paths", "confine": "paths", "Engine": "permission",
    "Outcome": "permission", "scrub": "redact", "Rule": "rules", "RuleError": "rules",
    "parse_rule": "rules", "sanitize": "sanitize",
}

__all__ = [
    "DEFAULT_DENY", "Classification", "Engine", "Outcome", "PathEscape", "Rule", "RuleError", "Split",
    "classify", "confine", "parse_rule", "sanitize", "scrub", "split",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'cox.policy' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
