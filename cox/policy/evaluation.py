"""What bash evaluates as code inside a word or a test, though no command substitution is there.

``${x@P}`` expands a prompt string (command substitutions in it run), ``${!x}`` and an array
subscript or substring offset that names a variable evaluate that variable's value as an
arithmetic expression (``x='a[$(cmd)]'`` runs cmd), and so do ``$((x))``, ``((x))`` and the
``-eq`` family of ``[[ … ]]``. Plain arithmetic on literals (``$((6*7))``) is harmless.
Each function returns why a piece makes the line opaque, or None.
"""

from __future__ import annotations

import re

__all__ = ["arithmetic", "evaluated", "test_reasons"]

# --- what bash evaluates --------------------------------------------------------------------------

_ARITH_DELIMS = re.compile(r"^\$?\(\(|\)\)$|^\$\[|\]$")
_LITERAL_ARITH = re.compile(r"(?:\s|0[xX][0-9a-fA-F]+|\d+#[0-9A-Za-z@_]+|\d+|[-+*/%()<>=!&|^~?:,])*")
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_INTEGER = re.compile(r"[+-]?\d+")
_INDIRECT_LIST = re.compile(r"\$\{![A-Za-z_]\w*(?:[*@]|\[[*@]\])\}")
_SUBSCRIPT = re.compile(r"\$\{[#!]?[A-Za-z_]\w*\[([^\]]*)\]")
_SUBSTRING = re.compile(r"\$\{[#]?(?:[A-Za-z_]\w*(?:\[[^\]]*\])?|[@*]|\d+):(?![-=?+])([^}]*)\}")


def evaluated(expansion: str) -> str | None:
    """Why a ``${…}`` expansion can run a command: a prompt expansion (``${x@P}``), an indirect
    one (``${!x}``: bash evaluates the subscript of the name the value holds), or an array
    subscript or substring offset that is arithmetic naming a variable."""
    if expansion.endswith("@P}"):
        return "it expands a prompt string (`@P`), which can run commands"
    if expansion.startswith("${!") and not _INDIRECT_LIST.fullmatch(expansion):
        return "it expands a variable indirectly (`${!…}`), and bash evaluates the subscript the value names"
    m = _SUBSCRIPT.match(expansion)
    if m is not None and m.group(1).strip() not in ("@", "*") and not _LITERAL_ARITH.fullmatch(m.group(1)):
        return "its array subscript is arithmetic that names a variable, and bash evaluates a variable's value there as code"
    m = _SUBSTRING.match(expansion)
    if m is not None and not _LITERAL_ARITH.fullmatch(m.group(1)):
        return "its substring offset is arithmetic that names a variable, and bash evaluates a variable's value there as code"
    return None


def arithmetic(body: str) -> str | None:
    """Why the arithmetic ``body`` (delimiters removed) can run a command."""
    if _LITERAL_ARITH.fullmatch(body):
        return None
    if "$(" in body or "`" in body:
        return "it evaluates a string that holds a command substitution"
    return "its arithmetic names a variable, and bash evaluates a variable's value there as code"


def strip_delimiters(text: str) -> str:
    return _ARITH_DELIMS.sub("", text)


def test_reasons(body: str) -> list[str]:
    """Why a ``[[ … ]]`` test can run a command: ``-eq`` and friends evaluate their operands as
    arithmetic and ``-v`` the subscript of a name."""
    out = []
    if "$(" in body or "`" in body:  # [[ 1 -eq 'a[$(cmd)]' ]] runs cmd
        out.append("it evaluates a string that holds a command substitution")
    words = body.split()
    for k, w in enumerate(words):
        if w in _ARITH_TESTS and not (k > 0 and _INTEGER.fullmatch(words[k - 1])
                                      and k + 1 < len(words) and _INTEGER.fullmatch(words[k + 1])):
            out.append(f"its `{w}` test evaluates operands as arithmetic, where bash runs what a "
                       "variable's value says")
        elif w in ("-v", "-R") and k + 1 < len(words) and ("[" in words[k + 1] or "$" in words[k + 1]):
            out.append(f"`[[ {w} ]]` evaluates the subscript of the name it is given, which can run commands")
    return out
