"""The permission rule grammar (Claude Code's), compiled once.

- ``Tool`` matches every call of that tool (``Tool(*)`` too);
- ``Tool(text)`` the exact subject;
- ``Tool(prefix:*)`` a subject that is the prefix alone or the prefix followed by whitespace;
- ``WebFetch(domain:host)`` that host and its subdomains;
- ``Read(glob)``, ``Edit(glob)`` … a path glob for file tools (see :mod:`cox.policy.globs`);
- ``mcp__server`` (or ``mcp__server__*``) every tool of an MCP server, ``mcp__server__tool`` one;
- ``CloudAgent(owner/repo)`` one GitHub repository, names compared ignoring case;
- ``Task(type)`` / ``Agent(type)`` the subagents of one type (``Task(Explore)``), ignoring case.

For ``Bash`` the text and prefix are compared in canonical form (quotes removed and re-added one
way, spaces collapsed: :func:`cox.policy.bash.canonical`), command by command; a bare ``Bash``
and an exact rule also match the whole line as written. A rule that cannot mean what it says
raises :class:`RuleError` naming the rule and where it came from, instead of silently matching
nothing: a deny rule with a typo would otherwise leave the door open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import field
from typing import Literal
from urllib.parse import urlsplit

from cox import lazyre
from cox.slim import dataclass

from .globs import GlobError, check_glob, compile_glob, glob_source
from .names import AGENT_RULES, PATH_RULES, RULE_TOOLS, is_mcp

__all__ = ["Rule", "RuleError", "host_of", "parse_rule"]

Kind = Literal["any", "exact", "prefix", "path", "domain", "mcp"]

_SHAPE = lazyre.compile(r"([A-Za-z][A-Za-z0-9_-]*(?:__\*)?)(?:\((.*)\))?", re.DOTALL)
_MCP = lazyre.compile(r"mcp__[A-Za-z0-9_-]+")
_DOMAIN = lazyre.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_REPO = lazyre.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class RuleError(ValueError):
    """A malformed permission rule: a config error that names the rule and its file."""

    def __init__(self, rule: str, origin: str, problem: str) -> None:
        self.rule = rule
        self.origin = origin
        self.problem = problem
        super().__init__(f"bad permission rule {rule!r} (from {origin}): {problem}")


@dataclass(slots=True)
class Rule:
    """One compiled rule. ``value`` is the exact text, prefix, domain, MCP name or path glob;
    ``anchors`` the home and workspace roots a path glob starts from. What costs is done on
    first use, so compiling the rules at start-up neither loads the bash parser (a Bash rule's
    canonical command forms) nor compiles a regex (a path glob's, :attr:`regex`) before a call
    needs one; a glob that cannot compile was refused already (:func:`parse_rule`)."""

    text: str
    origin: str
    tool: str
    kind: Kind
    value: str = ""
    anchors: tuple[str, tuple[str, ...]] | None = None
    _canon: tuple[str, str] | None = field(default=None, repr=False, compare=False)
    _regex: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @property
    def regex(self) -> re.Pattern[str] | None:
        """A path rule's glob as an anchored regex (None for other kinds), compiled on first use."""
        rx = self._regex
        if rx is None and self.anchors is not None:
            home, roots = self.anchors
            rx = self._regex = compile_glob(self.value, home, roots)
        return rx

    @property
    def source(self) -> str | None:
        """The text of :attr:`regex` (flag DOTALL), without compiling it."""
        if self._regex is not None:
            return self._regex.pattern
        if self.anchors is None:
            return None
        home, roots = self.anchors
        return glob_source(self.value, home, roots)

    def _forms(self) -> tuple[str, str]:
        forms = self._canon
        if forms is None:
            from .bash import canonical

            forms = self._canon = (canonical(self.value), canonical(self.value, stripped=True))
        return forms

    def applies_to(self, tool: str) -> bool:
        if self.kind == "mcp":
            return tool == self.value or tool.startswith(self.value + "__")
        return tool in RULE_TOOLS.get(self.tool, ())

    def matches(self, subject: str) -> bool:
        """Whether a (non-bash) subject matches. Paths must be absolute and normalised."""
        kind = self.kind
        if kind == "any" or kind == "mcp":
            return True
        if kind == "path":
            regex = self.regex
            return regex is not None and regex.match(subject) is not None
        if kind == "domain":
            host = host_of(subject)
            return host is not None and (host == self.value or host.endswith("." + self.value))
        if self.tool == "CloudAgent":
            return subject.strip().lower() == self.value
        if self.tool in AGENT_RULES:  # Task(Explore): the agent's type, as Claude Code's rules name it
            subject = subject.partition(": ")[0].strip()
            if kind == "exact":
                return subject.lower() == self.value.strip().lower()
        if kind == "exact":
            return subject == self.value
        return _has_prefix(subject, self.value)

    # bash

    def matches_line(self, line: str) -> bool:
        """A bare ``Bash`` rule, or an exact rule equal to the whole line as written."""
        return self.kind == "any" or (self.kind == "exact" and line.strip() == self.value)

    def matches_form(self, form: str) -> bool:
        """Whether one command form (see :mod:`cox.policy.shell`) matches, for deny and ask."""
        if self.kind == "prefix":
            return _has_prefix(form, self._forms()[0])
        return self.kind == "exact" and form in self._forms()

    def covers(self, text: str) -> bool:
        """Whether an allow rule covers one command (its canonical, wrapper-stripped text)."""
        if self.kind == "prefix":
            return _has_prefix(text, self._forms()[0])
        return self.kind == "exact" and text == self._forms()[1]


def _has_prefix(text: str, prefix: str) -> bool:
    return text.startswith(prefix) and (len(text) == len(prefix) or text[len(prefix)].isspace())


def host_of(url: str) -> str | None:
    """The lower-case host of a URL (``example.com/x`` is read as ``http://example.com/x``)."""
    s = url.strip()
    if "://" not in s:
        s = "http://" + s
    try:
        host = urlsplit(s).hostname
    except ValueError:
        return None
    return host.rstrip(".") if host else None


def parse_rule(text: str, origin: str = "<rules>", *, home: str = "~", roots: Sequence[str] = ()) -> Rule:
    """Compile one rule. ``home`` and ``roots`` anchor ``~`` and relative path globs."""
    m = _SHAPE.fullmatch(text.strip())
    if m is None:
        if not text.strip():
            raise RuleError(text, origin, "the rule is empty")
        if "(" in text and not text.rstrip().endswith(")"):
            raise RuleError(text, origin, "missing ')' at the end")
        raise RuleError(text, origin, "expected Tool or Tool(specifier), e.g. Bash(git status:*)")
    name, spec = m.group(1), m.group(2)
    if is_mcp(name):
        return _mcp(text, origin, name, spec)
    if name not in RULE_TOOLS:
        raise RuleError(text, origin, _unknown(name))
    if spec is None or spec.strip() == "*":
        return Rule(text, origin, name, "any")
    if not spec.strip():
        raise RuleError(text, origin, f"the parentheses are empty; write {name} to match every call")
    if name in PATH_RULES:
        return _path(text, origin, name, spec, home, roots)
    if name == "WebFetch" and spec.startswith("domain:"):
        return _domain(text, origin, spec)
    if name == "CloudAgent":
        if not _REPO.fullmatch(spec.strip()):
            raise RuleError(text, origin, "CloudAgent takes one repository as owner/repo")
        return Rule(text, origin, name, "exact", spec.strip().lower())
    if name == "Bash":
        return _bash(text, origin, spec)
    return _generic(text, origin, name, spec)


def _unknown(name: str) -> str:
    for rule_name in RULE_TOOLS:
        if rule_name.lower() == name.lower():
            return f"rules use Claude Code's tool names: did you mean {rule_name}?"
    return f"unknown tool {name!r}; known: {', '.join(sorted(RULE_TOOLS))}, mcp__<server>__<tool>"


def _mcp(text: str, origin: str, name: str, spec: str | None) -> Rule:
    if spec is not None:
        raise RuleError(text, origin, "MCP rules take no parentheses: mcp__server or mcp__server__tool")
    if name.endswith("__*"):
        name = name[:-3]
    if not _MCP.fullmatch(name) or name.endswith("__"):
        raise RuleError(text, origin, "expected mcp__<server> or mcp__<server>__<tool>")
    return Rule(text, origin, name, "mcp", name)


def _prefix_of(text: str, origin: str, spec: str) -> str | None:
    """The prefix of a ``prefix:*`` specifier, None for an exact one."""
    if spec.endswith(":*"):
        prefix = spec[:-2].strip()
        if not prefix:
            raise RuleError(text, origin, "the prefix before ':*' is empty")
        if ":*" in prefix:
            raise RuleError(text, origin, "':*' may only end the rule")
        return prefix
    if ":*" in spec:
        raise RuleError(text, origin, "':*' may only end the rule")
    return None


def _bash(text: str, origin: str, spec: str) -> Rule:
    if spec.rstrip().endswith(" *"):
        raise RuleError(text, origin, f"for a prefix write Bash({spec.rstrip()[:-2].rstrip()}:*)")
    prefix = _prefix_of(text, origin, spec)
    if prefix is not None:
        return Rule(text, origin, "Bash", "prefix", prefix)
    return Rule(text, origin, "Bash", "exact", spec.strip())


def _path(text: str, origin: str, name: str, spec: str, home: str, roots: Sequence[str]) -> Rule:
    if spec.endswith(":*"):
        raise RuleError(text, origin, f"file rules take a path glob: write {name}({spec[:-2]}/**)")
    try:
        check_glob(spec.strip(), home, roots)
    except GlobError as exc:
        raise RuleError(text, origin, str(exc)) from None
    return Rule(text, origin, name, "path", spec.strip(), anchors=(home, tuple(roots)))


def _domain(text: str, origin: str, spec: str) -> Rule:
    domain = spec[len("domain:"):].strip().lower().rstrip(".")
    if domain.startswith("*."):
        domain = domain[2:]
    if not _DOMAIN.fullmatch(domain):
        raise RuleError(text, origin, "expected a host name after domain:, e.g. WebFetch(domain:docs.rs)")
    return Rule(text, origin, "WebFetch", "domain", domain)


def _generic(text: str, origin: str, name: str, spec: str) -> Rule:
    prefix = _prefix_of(text, origin, spec)
    if prefix is not None:
        return Rule(text, origin, name, "prefix", prefix)
    return Rule(text, origin, name, "exact", spec)
