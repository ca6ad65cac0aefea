"""The strings a command hands to a shell, so deny and ask rules see the commands inside them.

``sh -c '…'`` (with any of the shell's option flags before it), ``eval``, ``trap -- '…'``, a
shell or ``source`` that reads its script from its input (a pipe, a here-string or here-document,
``/dev/stdin``, ``<(…)``), the arguments of a wrapper that may go to a shell (``su -c``,
``runuser -c``, ``script -c``, ``env -S``, ``watch``), git's ``-c`` values and ``!`` aliases, and
the variables whose value is a command line (``GIT_PAGER``). Each string found is re-parsed by
:mod:`cox.policy.bash` with the same walk; a string that is not a script only adds forms, which can
make a deny or ask apply more often, never an allow.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from .words import Word, base, word_forms

__all__ = ["GIT_CONFIGURING", "RUNNING_VARS", "SHELLS", "arg_scripts", "dash_c", "git_forms", "git_sub", "reads_script",
           "runs_string", "substituted", "unquote"]

# Variables whose value is a command line some program runs (as written before a command, the
# value is re-parsed so deny and ask rules see that command too).
RUNNING_VARS = frozenset({"GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL", "GIT_SSH_COMMAND", "GIT_SSH",
                          "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_SEQUENCE_EDITOR", "LESSOPEN",
                          "LESSCLOSE", "PROMPT_COMMAND", "MANPAGER", "SYSTEMD_PAGER", "BROWSER", "DIFF_PAGER"})

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
# Options of a shell that take the next word as their argument (``bash -o posix -c …``).
_SHELL_ARG_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_SCRIPTISH = re.compile(r"[\s;&|<>()$`'\"{}\\]")
MAX_SCRIPTS = 32  # strings of one wrapper's arguments re-parsed as possible scripts


def unquote(text: str) -> str:
    try:
        return " ".join(shlex.split(text))
    except ValueError:
        return text




def dash_c(ws: Sequence[Word]) -> list[str] | None:
    """The strings ``sh -c SCRIPT`` / ``bash --rcfile x -o posix -ec SCRIPT`` may run, the script
    first (every later word too: which word is the script depends on options this does not model,
    and a word that is not a script only adds forms); None when there is no ``-c``."""
    i, has_c, values = 1, False, []
    while i < len(ws):
        a = ws[i].value
        if a in _SHELL_ARG_OPTIONS:
            i += 2
            continue
        if a == "--":
            i += 1
            break
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            if name == "--command" or name == "--init-command":  # fish
                has_c = True
            if eq:
                values.append(value)
            i += 1
        elif len(a) > 1 and a[0] in "-+":
            has_c = has_c or (a[0] == "-" and "c" in a[1:])
            i += 1
        else:
            break
    if not has_c:
        return None
    scripts = [w.value for w in ws[i:]] + values
    return scripts or [""]


_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})


def reads_script(ws: Sequence[Word]) -> bool:
    """Whether a shell (no ``-c``) runs the script it reads from its input: no script file, ``-s``,
    or a script file that is its input (``/dev/stdin``, ``<(…)``)."""
    for w in ws[1:]:
        a = w.value
        if a == "--":
            continue
        if (a.startswith("-") or a.startswith("+")) and a != "-":
            if not a.startswith("--") and "s" in a[1:]:
                return True
            continue
        return a in _STDIN_FILES or w.raw.startswith("<(")
    return True


def substituted(ws: Sequence[Word]) -> list[str]:
    """The argument strings of the commands in ``<(…)`` words: what they print may be run."""
    out: list[str] = []
    for w in ws:
        if w.raw.startswith("<(") and w.raw.endswith(")"):
            try:
                args = shlex.split(w.raw[2:-1])[1:]
            except ValueError:
                continue
            out.extend([" ".join(args), *args])
    return out


def _trap_script(ws: Sequence[Word]) -> str:
    i = 1
    while i < len(ws) and ws[i].value.startswith("-") and ws[i].value != "-":
        if ws[i].value == "--":
            i += 1
            break
        i += 1
    return ws[i].value if i < len(ws) else ""


def runs_string(ws: Sequence[Word]) -> tuple[str, list[str]] | None:
    """``(reason, scripts)`` when ``ws`` runs a string as shell code: eval, sh -c, trap."""
    if ws[0].dynamic:
        return None
    written = ws[0].value
    name = base(written)
    if name == "eval":
        return "`eval` runs a string as a script", [" ".join(w.value for w in ws[1:])]
    if name == "trap":
        return "`trap` runs a string as a script", [_trap_script(ws)]
    if name in SHELLS:
        scripts = dash_c(ws)
        if scripts is not None:
            return f"`{written} -c` runs a string as a script", scripts
    return None


def arg_scripts(ws: Sequence[Word]) -> list[str]:
    """Strings among a wrapper's arguments that it may hand to a shell (``su -c '…'``,
    ``env -S '…'``, ``script -qc'…'``, ``watch 'a; b'``): each argument that looks like a script,
    each long option's ``=value`` and what follows each letter of a short option cluster."""
    env = base(ws[0].value) == "env"
    out: list[str] = []
    for w in ws[1:]:
        v = w.value
        cands = []
        if _SCRIPTISH.search(v):
            cands.append(v)
        if v.startswith("--") and "=" in v:
            cands.append(v.split("=", 1)[1])
        elif v.startswith("-") and len(v) > 2:
            j = 2
            while j < len(v) and j < 9 and v[j - 1].isalnum():
                cands.append(v[j:])
                j += 1
        for c in cands:
            if env:
                c = c.replace("\\_", " ")  # env -S reads \_ as a space
            if c.strip() and c not in out:
                out.append(c)
        if len(out) >= MAX_SCRIPTS:
            break
    return out[:MAX_SCRIPTS]


# git's global options that take the next word as their value
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
                         "--attr-source", "--list-cmds"})
GIT_CONFIGURING = ("-c", "--config-env", "--exec-path")


def git_forms(ws: Sequence[Word]) -> tuple[list[str], list[str]]:
    """Forms of ``git [global options] SUB …`` with the global options removed (``git -C . push``
    is ``git push`` to a rule), the sub-command an ``-c alias.X=…`` names, and the shell script
    of a ``!`` alias."""
    i, aliases, configured = 1, {}, []
    while i < len(ws):
        a = ws[i].value
        if a in _GIT_VALUED:
            if a == "-c" and i + 1 < len(ws):
                key, _, value = ws[i + 1].value.partition("=")
                if key.lower().startswith("alias."):
                    aliases[key[6:]] = value
                elif value:
                    configured.append(value)  # core.pager, core.sshCommand … run their value
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    scripts: list[str] = [v.lstrip("!") for v in configured]
    if i >= len(ws):
        return [], scripts
    parts = word_forms(ws)
    rest = " ".join(parts[i + 1:])
    forms = [" ".join(["git", *parts[i:]])] if i > 1 else []
    alias = aliases.get(ws[i].value)
    if alias is not None:
        if alias.startswith("!"):
            scripts.append(alias[1:] + (" " + rest if rest else ""))
        else:
            forms.append(" ".join(x for x in ("git", alias, rest) if x))
    return forms, scripts


def git_sub(ws: Sequence[Word]) -> int:
    """Index of git's sub-command (past the global options), or ``len(ws)``."""
    i = 1
    while i < len(ws):
        a = ws[i].value
        if a in _GIT_VALUED:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return i
    return len(ws)
