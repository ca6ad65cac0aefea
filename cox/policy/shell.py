"""One simple command seen as words: strip the wrappers, find what runs inside, rate it.

This is the word-level half of :mod:`cox.policy.bash` (which owns the tree-sitter parse). It is
kept apart so it can also read the pieces a parse error leaves and the commands an opaque wrapper
hides, neither of which has a tree.

Vocabulary:

- the *text* of a command is its canonical form: wrappers Claude Code strips (``nohup``,
  ``timeout 5`` …) and leading locale assignments dropped, each word unquoted and re-quoted the
  one way :func:`shlex.quote` does. Allow rules and session grants are matched against it, so
  ``git  "status"`` and ``git status`` are the same command, and ``LC_ALL=C ls`` is ``ls``.
- the *forms* of a command are every string a deny or ask rule is matched against: the text, the
  command as written (wrappers, assignments), the command with its path stripped (``/bin/rm``),
  git with its global options removed (``git -C . push`` → ``git push``), the words a brace
  expansion makes, for an opaque wrapper every tail of its words (``sudo -u x rm -rf y`` →
  ``rm -rf y``) and the forms of every string it may hand to a shell (``su -c '…'``,
  ``env -S '…'``). More forms can only make a deny or ask apply more often, never an allow.
- a command is *opaque* when an allow rule cannot vouch for what it runs: a wrapper not on the
  strip list (``env``, ``sudo``, ``watch``, ``find -exec``, ``xargs -0`` …) or any path-qualified
  wrapper or shell (``/usr/bin/nohup`` may be anything), ``eval``, ``sh -c``, a shell reading its
  script from its input, a command name computed at run time, an assignment that changes what
  runs, ``git -c``, or a builtin that assigns a variable or evaluates a subscript.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import field

from cox.protocol.types import Risk
from cox.slim import dataclass

from .scripts import (
    GIT_CONFIGURING,
    RUNNING_VARS,
    SHELLS,
    arg_scripts,
    git_forms,
    git_sub,
    reads_script,
    runs_string,
    substituted,
    unquote,
)
from .words import ASSIGNMENT, GLOB_CHARS, Word, base, canon, plain_words, quote, vague, word_forms

__all__ = ["Analysis", "Word", "analyse", "base", "canon", "max_risk", "plain_words", "tails", "vague"]

# Variables that cannot change what a command resolves to or does (the spec's LC_ALL, LANG, TZ,
# NO_COLOR, plus the other locale categories): a leading assignment of them is as if absent.
LOCALE_VARS = frozenset({"LC_ALL", "LANG", "LANGUAGE", "TZ", "NO_COLOR", "LC_CTYPE", "LC_COLLATE",
                         "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "LC_MONETARY"})

# Wrappers that run another command and are not stripped: the wrapped command stays visible to
# deny and ask rules (as a form), but no allow rule or grant covers the line.
OPAQUE_WRAPPERS = frozenset({
    "env", "sudo", "doas", "su", "runuser", "pkexec", "watch", "setsid", "flock", "nsenter",
    "unshare", "chroot", "ionice", "chrt", "taskset", "strace", "ltrace", "valgrind", "gdb",
    "parallel", "script", "systemd-run", "firejail", "bwrap", "busybox", "exec", "unbuffer",
    "torsocks", "proxychains", "proxychains4", "fakeroot", "faketime", "ssh", "catchsegv",
    "numactl", "cgexec", "sg", "chpst", "setpriv", "prlimit", "eatmydata", "caffeinate",
})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Bounds on the forms an opaque wrapper adds (its line is opaque, so a command hidden past them
# is still asked about, never allowed): how many tails, and how much of each a rule may see.
MAX_TAILS = 256
TAIL_CHARS = 512
_RISK_ORDER = {Risk.READ_ONLY: 0, Risk.WRITE: 1, Risk.EXEC: 2, Risk.DESTRUCTIVE: 3}
_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
_NICE_NUMBER = re.compile(r"-[-+]?\d+")
_GLOB_NAME = re.compile(r"[*?]|\[.*\]|\{.*[,.].*\}")
_EXPANSION = re.compile(r"\$\{[^{}]*\}|\$[A-Za-z_]\w*|\$[@*#?$!0-9-]")
def max_risk(a: Risk, b: Risk) -> Risk:
    return a if _RISK_ORDER[a] >= _RISK_ORDER[b] else b


@dataclass(slots=True)
class Analysis:
    text: str  # canonical, wrappers and locale assignments stripped: what allow rules match
    written: str  # canonical as written (assignments, wrappers, redirects): what a rule means
    forms: list[str]  # every string a deny or ask rule is matched against
    risk: Risk
    opaque: str | None = None
    scripts: list[str] = field(default_factory=list)  # strings eval / sh -c / trap would run
    paths: list[str] = field(default_factory=list)  # arguments that name files it may read


# --- wrappers Claude Code strips -------------------------------------------------------------
# Each returns the index of the wrapped command, -1 when the options are not understood (the
# wrapper then stays and the command is opaque), or ``i`` when this use is not a wrapper at all.

Skip = Callable[[Sequence[Word], int], int]


def _skip_plain(ws: Sequence[Word], i: int) -> int:
    i += 1
    return i + 1 if i < len(ws) and ws[i].value == "--" else i


def _skip_timeout(ws: Sequence[Word], i: int) -> int:
    i += 1
    while i < len(ws):
        v = ws[i].value
        if v in ("--preserve-status", "--foreground", "-v", "--verbose", "--"):
            i += 1
        elif v in ("-s", "-k", "--signal", "--kill-after"):
            i += 2
        elif v.startswith(("--signal=", "--kill-after=", "-s", "-k")):
            i += 1
        else:
            break
    return i + 1 if i < len(ws) and _DURATION.fullmatch(ws[i].value) else -1


def _skip_nice(ws: Sequence[Word], i: int) -> int:
    i += 1
    while i < len(ws):
        v = ws[i].value
        if v in ("-n", "--adjustment"):
            i += 2
        elif v.startswith(("--adjustment=", "-n")) or _NICE_NUMBER.fullmatch(v) or v == "--":
            i += 1
        elif v.startswith("-"):
            return -1
        else:
            break
    return i


def _skip_stdbuf(ws: Sequence[Word], i: int) -> int:
    i += 1
    while i < len(ws):
        v = ws[i].value
        if v in ("-i", "-o", "-e", "--input", "--output", "--error"):
            i += 2
        elif v.startswith(("-i", "-o", "-e", "--input=", "--output=", "--error=")) or v == "--":
            i += 1
        elif v.startswith("-"):
            return -1
        else:
            break
    return i


def _skip_time(ws: Sequence[Word], i: int) -> int:
    i += 1
    while i < len(ws) and ws[i].value in ("-p", "--"):
        i += 1
    return -1 if i < len(ws) and ws[i].value.startswith("-") else i


def _skip_command(ws: Sequence[Word], i: int) -> int:
    j = i + 1
    while j < len(ws) and ws[j].value in ("-p", "--"):
        j += 1
    if j < len(ws) and ws[j].value.startswith("-"):
        return i  # ``command -v git``: a lookup, not a wrapper
    return j


def _skip_xargs(ws: Sequence[Word], i: int) -> int:
    # only bare xargs is stripped; with options it is an opaque wrapper
    return i + 1 if i + 1 < len(ws) and not ws[i + 1].value.startswith("-") else i


_STRIPPED: dict[str, Skip] = {
    "nohup": _skip_plain, "builtin": _skip_plain, "noglob": _skip_plain, "timeout": _skip_timeout,
    "nice": _skip_nice, "stdbuf": _skip_stdbuf, "time": _skip_time, "command": _skip_command,
    "xargs": _skip_xargs,
}


def _strip(ws: Sequence[Word]) -> tuple[int, str | None]:
    """Index of the command under the stripped wrappers (and the ``{`` or ``!`` that open a group
    the grammar leaves in the words: ``time { rm x; }``), and why it is opaque if a wrapper's
    options were not understood."""
    i = 0
    while i < len(ws):
        w = ws[i]
        if w.raw in ("{", "!") and i + 1 < len(ws):
            i += 1
            continue
        skip = None if w.dynamic else _STRIPPED.get(w.value)
        if skip is None:
            break
        j = skip(ws, i)
        if j < 0:
            return i, f"`{w.value}` with these options runs another command"
        if j == i or j >= len(ws):
            break  # not a wrapper here, or nothing wrapped: the wrapper is the command
        i = j
    return i, None


# Bash builtins that assign the variables their arguments name: like an assignment, they change
# what later commands run (``printf -v PATH …``), and bash evaluates a subscript in the name
# (``printf -v 'a[$(cmd)]' x`` runs cmd).
_ASSIGNING = frozenset({"read", "mapfile", "readarray", "getopts", "let"})
# Builtins that change what a later command name means.
_RENAMING = frozenset({"alias", "enable"})
_EVALUATING = _ASSIGNING | _RENAMING | {"printf", "wait", "hash", "test", "["}
def _wrapper_reason(ws: Sequence[Word]) -> str | None:
    name = ws[0]
    if name.dynamic or (name.raw not in ("[", "[[") and _GLOB_NAME.search(name.raw)):
        return "the command name is only known when it runs"
    v = name.value
    b = base(v)
    if b in OPAQUE_WRAPPERS and len(ws) > 1:
        return f"`{v}` runs another command"
    if "/" in v and len(ws) > 1 and (b in _STRIPPED or b in SHELLS):
        return f"`{v}` runs another command"  # a path-qualified wrapper may be anything: never stripped
    if b == "xargs" and len(ws) > 1:
        return "`xargs` with options runs another command"
    if b == "find" and any(w.value in _FIND_EXEC for w in ws):
        return "`find -exec` runs another command"
    return None


def _evaluates(ws: Sequence[Word]) -> str | None:
    """Why a builtin makes the command opaque: it assigns a variable, evaluates a subscript, or
    changes what a later command name means."""
    name = ws[0].value
    if name not in _EVALUATING:
        return None
    args = [w.value for w in ws[1:]]
    if name == "printf" and args and args[0].startswith("-v"):
        return "`printf -v` assigns a variable, which changes what later commands run"
    if name in _ASSIGNING or (name == "wait" and any(a.startswith("-") and "p" in a for a in args)):
        return f"`{name}` assigns variables, which changes what later commands run"
    if name in _RENAMING or (name == "hash" and any(a.startswith("-") and "p" in a for a in args)):
        return f"`{name}` changes what later commands run"
    if name in ("test", "["):
        for k, a in enumerate(args[:-1]):
            if a in ("-v", "-R") and ("[" in args[k + 1] or ws[k + 2].dynamic):
                return f"`{name} {a}` evaluates the subscript of the name it is given, which can run commands"
    return None


def _find_execs(ws: Sequence[Word]) -> list[list[Word]]:
    """The commands of ``find … -exec CMD … ;`` (or ``+``)."""
    out: list[list[Word]] = []
    i = 0
    while i < len(ws):
        if ws[i].value in _FIND_EXEC:
            j = i + 1
            while j < len(ws) and ws[j].value not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(list(ws[i + 1:j]))
            i = j
        i += 1
    return out


def _tails(ws: Sequence[Word], out: Analysis) -> None:
    """Add every tail of an opaque wrapper's words as a form (deny and ask rules see the wrapped
    command whatever options came before it), the scripts a tail or an argument would run, and
    its risk."""
    if base(ws[0].value) == "find":
        for cmd in _find_execs(ws):
            out.forms.append(canon(cmd))
            nested = runs_string(cmd)
            if nested is not None:
                out.scripts.extend(nested[1])
    out.scripts.extend(s for s in arg_scripts(ws) if s not in out.scripts)
    parts = [quote(w) for w in ws[:MAX_TAILS]]
    text = " ".join(parts)
    pos = len(parts[0]) + 1
    for k in range(1, len(parts)):
        v = ws[k].value
        if not v.startswith("-"):
            out.forms.append(text[pos:pos + TAIL_CHARS])
            if "/" in v:
                out.forms.append(shlex.quote(base(v)) + text[pos + len(parts[k]):])
            nested = runs_string(ws[k:])
            if nested is not None:
                out.scripts.extend(s for s in nested[1] if s not in out.scripts)
            if base(v) == "git":
                forms, scripts = git_forms(ws[k:])
                out.forms.extend(forms)
                out.scripts.extend(scripts)
            out.risk = max_risk(out.risk, _rate(ws[k:k + 16]))
        pos += len(parts[k]) + 1


_UNKNOWN = "\0"  # a path only the running shell knows (cox.policy.reads.UNKNOWN)
_VAR = re.compile(r"\$(?:\{(HOME|PWD)\}|(HOME|PWD)(?![A-Za-z0-9_]))")
_GLOB_CHARS = "*?[\\"
READ_REDIRECT = re.compile(r"(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})?(?:<>|<)(?![<&(])\s*(.*)", re.DOTALL)


_RATE: list[Callable[..., Risk]] = []


def _load_rate() -> Callable[..., Risk]:
    from .readonly import rate  # the allowlist loads with the first bash line, not at start-up

    _RATE.append(rate)
    return rate


def _rate(ws: Sequence[Word], text: str | None = None) -> Risk:
    """``rate`` of ``ws``; ``text`` (their canonical forms joined, when known) spares the scan
    for words only known at run time when it has no ``$``, backtick or glob character."""
    rate = _RATE[0] if _RATE else _load_rate()
    if text is None:
        text = " ".join(w.raw for w in ws)
    if "$" in text or "`" in text or GLOB_CHARS.search(text) is not None:
        return rate([w.value for w in ws], [k for k, w in enumerate(ws) if vague(w)])
    return rate([w.value for w in ws])



def _pattern(raw: str) -> str | None:
    """A word as written (``raw``) as a path glob in the rules' syntax: quoted or escaped glob
    characters become ``\\x``, unquoted ones stay live; a leading ``$HOME``/``${HOME}`` is
    ``~``, ``$PWD`` and ``~+`` are ``.``. None when the value is only known when it runs (any
    other expansion, ``~-``, brace or extended globs)."""
    out: list[str] = []
    i, n = 0, len(raw)
    if raw == "~+" or raw.startswith("~+/"):
        out.append(".")
        i = 2
    elif raw.startswith("~-"):
        return None
    quote = ""
    while i < n:
        c = raw[i]
        if c == "$" and quote != "'":
            m = _VAR.match(raw, i)
            if m is None or out:
                return None
            out.append("~" if (m.group(1) or m.group(2)) == "HOME" else ".")
            i = m.end()
            continue
        if c == "`" and quote != "'":
            return None
        if quote == "'":
            if c == "'":
                quote = ""
            else:
                out.append("\\" + c if c in _GLOB_CHARS else c)
            i += 1
            continue
        if quote == '"':
            if c == '"':
                quote = ""
            elif c == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                i += 1
                out.append("\\" + raw[i] if raw[i] in _GLOB_CHARS else raw[i])
            else:
                out.append("\\" + c if c in _GLOB_CHARS else c)
            i += 1
            continue
        if c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
            if i < n:
                out.append("\\" + raw[i] if raw[i] in _GLOB_CHARS else raw[i])
        elif c in "{(" and re.search(r"[,)]|\.\.", raw[i:]):
            return None  # brace expansion or an extended glob: let the guard assume the worst
        else:
            out.append(c)
        i += 1
    return "".join(out)


MAX_BRACE_WORDS = 64  # words one path argument's brace expansion may make before it is unknown


def _files_from(v: str, program: str) -> bool:
    """``--files0-from=F`` (GNU abbreviations too): the command reads the files named in F."""
    name = v.split("=", 1)[0]
    least = 3 if program in ("wc", "du", "sort") else 8
    return len(name) >= least and "--files0-from".startswith(name)


def _paths(cmd: Sequence[Word], redirects: Sequence[str], wrappers: Sequence[Word] = ()) -> list[str]:
    """What a command may open as a file, for :class:`cox.policy.reads.ReadGuard`: each
    argument, option value (``--file=F``, and every tail of ``-fF``) and ``< F`` input as a
    path glob (:func:`_pattern`); ``"\\0what"`` for a path only the running shell knows (a
    variable, file names read from input)."""
    out: list[str] = []
    program = cmd[0].value
    if any(w.value == "xargs" for w in wrappers):
        out.append(_UNKNOWN + "the files xargs names from its input")
    skip_sub = program == "git"  # ``git status``: the sub-command is not a path
    value_of = ""
    for w in cmd[1:]:
        v = w.value
        if skip_sub and not v.startswith("-") and value_of not in ("-C", "-c"):
            skip_sub = False
            continue
        value_of = v
        if v.startswith("--"):
            if _files_from(v, program):
                out.append(_UNKNOWN + f"the files {v.split('=', 1)[0]} names")
            if "=" not in v:
                continue
            raw = w.raw.split("=", 1)[1] if "=" in w.raw else v.split("=", 1)[1]
        elif v.startswith("-") and len(v) > 1:
            # ``-fFILE``: any tail may be an attached value (``grep -f~/.ssh/id_rsa``)
            if len(v) > 2 and not w.dynamic:
                out.extend(_escape(v[k:]) for k in range(2, min(len(v), 256)))
            elif len(v) > 2:
                out.append(_UNKNOWN + v)
            continue
        else:
            raw = w.raw
        words = _raw_braces(raw) if "{" in raw else [raw]
        for one in words if words is not None else [raw]:
            pat = None if words is None else _pattern(one)
            out.append(_UNKNOWN + raw if pat is None else pat)
    for r in redirects:
        m = READ_REDIRECT.fullmatch(r.strip())
        if m is not None and m.group(1):
            dest = m.group(1).strip()
            pat = _pattern(dest)
            out.append(_UNKNOWN + dest if pat is None else pat)
    return out


def _raw_braces(raw: str) -> list[str] | None:
    """The words (as written) bash's brace expansion makes of ``raw`` (``a{b,c}`` → ``ab``,
    ``ac``), or None for a sequence (``{1..9}``) or more than :data:`MAX_BRACE_WORDS` words."""
    from .braces import Unexpandable, expand

    try:
        return expand(raw, "raw", MAX_BRACE_WORDS)
    except Unexpandable:
        return None


def _escape(value: str) -> str:
    return "".join("\\" + c if c in _GLOB_CHARS else c for c in value)


def tails(tokens: Sequence[str]) -> list[str]:
    """Every tail of ``tokens`` that starts at a word not an option, bounded as for wrappers."""
    text = " ".join(tokens[:MAX_TAILS])
    out, pos = [], 0
    for t in tokens[:MAX_TAILS]:
        if pos and not t.startswith("-"):
            out.append(text[pos:pos + TAIL_CHARS])
        pos += len(t) + 1
    return out


def analyse(words: Sequence[Word], assignments: Sequence[str] = (), redirects: Sequence[str] = (),
            stdin: Sequence[str] = (), *, braces: bool = True) -> Analysis:
    """Analyse one simple command: ``words`` as parsed, the raw ``NAME=value`` assignments before
    it, the redirects (as written) that stay part of what it does, and the here-documents and
    here-strings it reads (a shell runs them)."""
    unsafe = [a for a in assignments if a.split("=", 1)[0].split("[", 1)[0].rstrip("+") not in LOCALE_VARS]
    if not words:
        as_written = " ".join([*assignments, *redirects])
        return Analysis(as_written, as_written, [as_written], Risk.EXEC,
                        "assigning a variable changes what later commands run")
    start, why = _strip(words)
    cmd = words[start:]
    all_parts = word_forms(words)
    parts = all_parts[start:] if start else all_parts
    bare = " ".join(parts)
    text = " ".join([*unsafe, bare, *redirects]) if unsafe or redirects else bare
    as_written = " ".join([*assignments, *all_parts, *redirects]) if assignments or start else text
    out = Analysis(text, as_written, [text], _rate(cmd, bare), why, paths=_paths(cmd, redirects, words[:start]))
    if as_written != text:
        out.forms.append(as_written)
    if bare != text:
        out.forms.append(bare)
    name = cmd[0].value
    dynamic = cmd[0].dynamic
    program = base(name) if not dynamic else ""
    if program != name and not dynamic:  # /bin/rm is rm to a deny rule
        out.forms.append(shlex.quote(program) + bare[len(parts[0]):])
    if dynamic:  # ``rm${IFS}-rf${IFS}x``, ``r${x}m``: each expansion read as nothing and as a space
        for blank in ("", " "):
            guess = " ".join(_EXPANSION.sub(blank, bare).split())
            if guess and guess != bare:
                out.forms.append(guess)
    configures = None
    if program == "git":
        forms, scripts = git_forms(cmd)
        out.forms.extend(forms)
        out.scripts.extend(scripts)
        if any(w.value in GIT_CONFIGURING or w.value.startswith("--exec-path") for w in cmd[1:git_sub(cmd)]):
            configures = "`git -c` sets configuration that can run any program"
    nested = runs_string(cmd)
    if why is not None:
        _tails(cmd, out)
    elif nested is not None:
        out.opaque = nested[0]
        out.scripts.extend(nested[1])
    else:
        out.opaque = _wrapper_reason(cmd)
        if out.opaque is not None:
            _tails(cmd, out)
        else:
            out.opaque = _evaluates(cmd) or configures
    if program in SHELLS and nested is None and reads_script(cmd):
        out.opaque = out.opaque or f"`{name}` runs the script it reads from its input"
        out.scripts.extend([*stdin, *substituted(cmd)])
    elif name in ("source", ".") and len(cmd) > 1 and reads_script(cmd[:2]):
        out.scripts.extend([*stdin, *substituted(cmd)])  # ``source /dev/stdin <<< '…'``
    elif stdin and out.opaque and any(base(w.value) in SHELLS for w in cmd[1:]):
        out.scripts.extend(stdin)  # ``env sh <<< '…'``: a wrapped shell reads it
    if braces and "{" in as_written and _has_braces(words):
        _brace_expanded(words, assignments, redirects, stdin, start, out)
    if unsafe:
        for a in unsafe:
            var, _, value = a.partition("=")
            if var in RUNNING_VARS:  # GIT_PAGER='rm x' git log
                out.scripts.append(unquote(value).lstrip("|!"))
        if out.opaque is None:
            names = ", ".join(a.split("=", 1)[0] for a in unsafe)
            out.opaque = f"the assignment of {names} changes what the command runs"
    if out.opaque is not None:
        out.risk = max_risk(out.risk, Risk.EXEC)
    return out


def _has_braces(words: Sequence[Word]) -> bool:
    from .braces import has_braces

    return any(has_braces(w.raw) and not w.dynamic for w in words)


def _brace_expanded(words: Sequence[Word], assignments: Sequence[str], redirects: Sequence[str], stdin: Sequence[str],
            start: int, out: Analysis) -> None:
    """Judge the words bash makes by brace expansion too: their forms, scripts and risk join
    ``out``; a brace in the command word, or an expansion too large to follow, makes it opaque."""
    from .braces import TooLarge, expand, has_braces

    expanded: list[Word] = []
    try:
        for w in words:
            if has_braces(w.raw) and not w.dynamic:
                expanded.extend(Word(v, shlex.quote(v)) for v in expand(w.value) if v)
            else:
                expanded.append(w)
    except TooLarge:
        out.opaque = out.opaque or "its brace expansion is too large to follow"
        return
    if not expanded:
        return
    ex = analyse(expanded, assignments, redirects, stdin, braces=False)
    out.forms.extend(f for f in ex.forms if f not in out.forms)
    out.scripts.extend(s for s in ex.scripts if s not in out.scripts)
    out.risk = max_risk(out.risk, ex.risk)
    if start < len(words) and has_braces(words[start].raw):
        out.opaque = out.opaque or "brace expansion builds the command name"
    out.opaque = out.opaque or ex.opaque


def split_assignments(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    """Leading ``NAME=value`` tokens and the rest (for text without a tree)."""
    i = 0
    while i < len(tokens) and ASSIGNMENT.match(tokens[i]):
        i += 1
    return list(tokens[:i]), list(tokens[i:])
