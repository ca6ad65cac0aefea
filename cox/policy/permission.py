"""The permission engine: may this tool call run, must a person be asked, or is it refused?

Rules come from ``[permissions]`` allow / ask / deny (plus :data:`DEFAULT_DENY`) and are compiled
once. :meth:`Engine.decide` walks the spec's order and stops at the first step that decides:

1. deny rules (a deny can never be turned into anything else by a later step or another rule);
2. modes: ``bypassPermissions`` allows, ``plan`` denies every call that is not ReadOnly;
3. allow rules; 4. ask rules; 5. session grants, and the turn's own allow rules (``turn_allow``:
   the ``allowed-tools`` of the person's command or skill that started the turn, which pre-approve
   what they cover for that turn only, as in Claude Code; they never cover a read Read deny rules
   protect, nor lift an ask rule's question);
6. the risk default: ReadOnly runs, Write runs in ``acceptEdits`` (unless the sandbox is
   read-only), everything else asks;
7. ``dontAsk`` mode (Claude Code's) and the approval policy ``never`` (headless): an ask
   becomes a deny that says so.

A bash line is judged command by command (:mod:`cox.policy.bash`): a deny or ask rule that matches
any command applies; an allow prefix rule or a grant allows the line only when every command is
covered (by any mix of allow rules, grants and read-only commands) and the line is not opaque; a
bare ``Bash`` rule or an exact rule matches the whole line as written.

``CloudAgent`` (code leaving the machine) asks in every mode, bypass included, and plan denies it;
only an exact ``CloudAgent(owner/repo)`` allow lifts the question — not a bare allow, not a grant.
(Ignoring a project config's allow is the config loader's job: the engine sees merged rules.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk, SandboxMode, ToolCall
from cox.slim import dataclass

from .defaults import DEFAULT_DENY, DEFAULT_ORIGIN
from .globs import escape, normalise
from .names import CLOUD_AGENT, PATH_RULES, grant_name, is_mcp, rule_names_for
from .rules import Rule, RuleError, host_of, parse_rule

if TYPE_CHECKING:  # the bash classifier and the read guard load with the first bash line or read judged
    from .bash import Split
    from .reads import ReadGuard

__all__ = ["DEFAULT_DENY", "Engine", "Outcome", "RuleError"]

Kind = Literal["allow", "ask", "deny"]
Step = Literal["deny-rule", "mode", "allow-rule", "ask-rule", "grant", "risk", "approval-policy", "dont-ask"]
_GRANT_ORIGIN = "a session grant"
_TURN_ORIGIN = "this turn's allowed-tools"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The engine's answer. ``rule`` is the rule that decided (the first, when several allow
    rules covered a bash line together; all are in ``rules``), None when no rule did."""

    kind: Kind
    reason: str
    rule: str | None = None
    origin: str | None = None
    step: Step = "risk"
    rules: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.kind, "reason": self.reason, "rule": self.rule, "origin": self.origin,
                "step": self.step, "rules": list(self.rules)}


@dataclass(slots=True)
class _Grants:
    """Session grants of one decide, split by what they can cover."""

    commands: set[str] = field(default_factory=set)  # bash: canonical wrapper-stripped commands
    lines: set[str] = field(default_factory=set)  # bash: exact lines (how an opaque line is granted)
    rules: list[Rule] = field(default_factory=list)  # other tools: Read(/path), mcp__s__t …


class Engine:
    """Compiled rules plus the configured ``permissions.mode`` (used when decide gets none)."""

    def __init__(self, allow: Sequence[Rule], ask: Sequence[Rule], deny: Sequence[Rule], *,
                 mode: PermissionMode, home: str, roots: Sequence[str]) -> None:
        self.allow, self.ask, self.deny = tuple(allow), tuple(ask), tuple(deny)
        self.mode = mode
        self.home = home
        self.roots = tuple(roots)
        self._buckets: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self._grant_cache: dict[str, tuple[str, str | Rule]] = {}
        self._turn_cache: dict[str, Rule | None] = {}
        self._reads: ReadGuard | None = None

    @classmethod
    def compile(cls, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = (), *,
                mode: PermissionMode | str = PermissionMode.DEFAULT, home: Path | str,
                roots: Sequence[Path | str], origins: Mapping[str, str] | None = None,
                origin: str = "the config", default_deny: bool = True) -> Engine:
        """Compile rule strings. ``origins`` maps a rule's text to where it came from
        (``file:line``); a malformed rule raises :class:`RuleError` naming both."""
        where = dict(origins or {})
        h, rs = str(home), [str(r) for r in roots]

        def build(texts: Iterable[str]) -> list[Rule]:
            return [parse_rule(t, where.get(t, origin), home=h, roots=rs) for t in texts]

        built_in = [parse_rule(t, DEFAULT_ORIGIN, home=h, roots=rs) for t in DEFAULT_DENY] if default_deny else []
        return cls(build(allow), build(ask), [*build(deny), *built_in], mode=PermissionMode(mode), home=h,
                   roots=rs)

    # --- public ----------------------------------------------------------------------------

    def decide(self, call: ToolCall, mode: PermissionMode | None = None,
               approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST,
               sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE, grants: Sequence[str] = (),
               turn_allow: Sequence[str] = ()) -> Outcome:
        """Allow, ask or deny ``call``, with a reason a person can read. ``turn_allow``: allow rules
        in force for the current turn only (step 5)."""
        mode = PermissionMode(mode) if mode is not None else self.mode
        turn = self._turn_rules(turn_allow)
        if call.name == "bash":
            out = self._bash(call, mode, sandbox_mode, grants, turn)
        else:
            out = self._tool(call, mode, sandbox_mode, grants, turn)
        if out.kind == "ask" and mode is PermissionMode.DONT_ASK:
            return Outcome("deny", f"it needs approval and dontAsk mode denies what would ask ({out.reason})",
                           out.rule, out.origin, "dont-ask", out.rules)
        if out.kind == "ask" and ApprovalPolicy(approval_policy) is ApprovalPolicy.NEVER:
            return Outcome("deny", f"it needs approval and the approval policy is never ({out.reason})",
                           out.rule, out.origin, "approval-policy", out.rules)
        return out

    def grants_for(self, call: ToolCall) -> list[str]:
        """What "allow for this session" records for ``call``: one grant per command of a bash
        line (an opaque line only as the exact line), else the tool and its exact subject
        (``Edit(/repo/a.py)``, ``WebFetch(domain:docs.rs)``, ``mcp__s__t``). CloudAgent records
        nothing: a session grant never lifts its question."""
        if call.name == "bash":
            from .bash import split

            line = self._line(call)
            sp = split(line)
            if sp.opaque or call.opaque or not sp.commands:
                return [line.strip()] if line.strip() else []
            return list(dict.fromkeys(c.text for c in sp.commands))
        if call.name == CLOUD_AGENT:
            return []
        if is_mcp(call.name):
            return [call.name]
        name = grant_name(call.name)
        if name is None:
            return []
        subject = call.subject
        if name in PATH_RULES:
            return [f"{name}({escape(self._path(subject))})"]
        if name == "WebFetch":
            host = host_of(subject)
            return [f"WebFetch(domain:{host})"] if host else []
        if not subject:
            return [name]
        return [] if subject.endswith(":*") else [f"{name}({subject})"]

    def denied_path(self, path: str, tool: str = "read") -> Rule | None:
        """The deny rule that covers reading (as written or with symlinks resolved: the file
        tools' check, :meth:`read_guard`) or, with ``tool="edit"``, editing ``path``."""
        p = self._path(path)
        if tool == "read":
            return self.read_guard().refuses(p)
        return next((r for r in self._bucket("deny", tool) if r.matches(p)), None)

    # --- non-bash tools --------------------------------------------------------------------

    def _tool(self, call: ToolCall, mode: PermissionMode, sandbox: SandboxMode, grants: Sequence[str],
              turn: Sequence[Rule] = ()) -> Outcome:
        tool = call.name
        is_path = bool(rule_names_for(tool) & PATH_RULES)
        subject = self._path(call.subject) if is_path else call.subject
        for r in self._bucket("deny", tool):
            if r.matches(subject):
                return _by_rule("deny", r, "deny-rule", f"denied by {_named(r)}")
        cloud = tool == CLOUD_AGENT
        if cloud and mode is PermissionMode.PLAN:
            return Outcome("deny", "plan mode never sends code to a cloud agent", step="mode")
        decided = self._mode(mode, call.risk, cloud)
        if decided is not None:
            return decided
        for r in self._bucket("allow", tool):
            if r.matches(subject) and (not cloud or r.kind == "exact"):
                return _by_rule("allow", r, "allow-rule", f"allowed by {_named(r)}")
        for r in self._bucket("ask", tool):
            if r.matches(subject):
                return _by_rule("ask", r, "ask-rule", f"{_named(r)} asks for it")
        if cloud:
            return Outcome("ask", f"the code of {subject or 'this repository'} would leave this machine "
                           "for a cloud agent; only an exact CloudAgent(owner/repo) allow rule lifts this question")
        g = self._grants(grants)
        for r in g.rules:
            if r.applies_to(tool) and r.matches(subject):
                return Outcome("allow", f"allowed for this session ({r.text} was approved earlier)",
                               None, _GRANT_ORIGIN, "grant")
        for r in turn:
            if r.applies_to(tool) and r.matches(subject):
                return Outcome("allow", f"allowed for this turn by {r.text} (the allowed-tools of the command or "
                               "skill that started it)", r.text, _TURN_ORIGIN, "grant", (r.text,))
        return _by_risk(call.risk, mode, sandbox, _what(call.risk, tool, call.subject))

    def _mode(self, mode: PermissionMode, risk: Risk, cloud: bool = False) -> Outcome | None:
        if mode is PermissionMode.BYPASS and not cloud:
            return Outcome("allow", "bypassPermissions mode allows every call a deny rule does not stop",
                           step="mode")
        if mode is PermissionMode.PLAN and risk is not Risk.READ_ONLY:
            return Outcome("deny", "plan mode allows only read-only calls; describe the change instead of "
                           "making it", step="mode")
        return None

    # --- bash --------------------------------------------------------------------------------

    def _bash(self, call: ToolCall, mode: PermissionMode, sandbox: SandboxMode, grants: Sequence[str],
              turn: Sequence[Rule] = ()) -> Outcome:
        from .bash import split
        from .shell import max_risk

        line = self._line(call)
        sp = split(line)
        extras: list[str] = []
        if call.segments:
            seen = {f for c in sp.commands for f in c.forms}
            extras = [s for s in call.segments if s not in seen]
        hit = _first_match(self._bucket("deny", "bash"), line, sp, extras)
        if hit is not None:
            r, form = hit
            return _by_rule("deny", r, "deny-rule", f"denied by {_named(r)}" + (f": it matches `{form}`" if form else ""))
        risk = max_risk(call.risk, sp.risk)
        decided = self._mode(mode, risk)
        if decided is not None:
            return decided
        opaque = sp.opaque or call.opaque
        allow = self._bucket("allow", "bash")
        for r in allow:
            if r.matches_line(line):
                return _by_rule("allow", r, "allow-rule", f"allowed by {_named(r)}")
        secret = {} if opaque else self.read_guard().check(sp)
        covered = None if opaque else _cover(sp, allow, frozenset(), secret)
        if covered is not None:
            used = tuple(dict.fromkeys(r.text for r in covered[0]))
            rest = ", the rest is read-only" if len(covered[0]) < len(sp.commands) else ""
            first = covered[0][0]
            return Outcome("allow", f"every command is covered ({', '.join(used)}{rest})", first.text, first.origin,
                           "allow-rule", used)
        hit = _first_match(self._bucket("ask", "bash"), line, sp, extras)
        if hit is not None:
            r, form = hit
            return _by_rule("ask", r, "ask-rule", f"{_named(r)} asks for it" + (f" (`{form}`)" if form else ""))
        g = self._grants(grants)
        covered = None if opaque or not g.commands else _cover(sp, allow, g.commands, secret)
        if covered is not None:
            return Outcome("allow", "allowed for this session (" + ", ".join(covered[1]) + " approved earlier)",
                           None, _GRANT_ORIGIN, "grant", tuple(r.text for r in covered[0]))
        if line.strip() in g.lines:
            return Outcome("allow", "allowed for this session (this exact line was approved earlier)",
                           None, _GRANT_ORIGIN, "grant")
        turn = [r for r in turn if r.applies_to("bash")]
        whole = next((r for r in turn if r.matches_line(line)), None) if not secret else None
        covered = None if opaque or not turn else _cover(sp, [*allow, *turn], g.commands, secret, strict=turn)
        if whole is not None or covered is not None:
            used = (whole.text,) if whole is not None else tuple(dict.fromkeys(r.text for r in covered[0]))  # type: ignore[index]
            return Outcome("allow", f"allowed for this turn by {', '.join(used)} (the allowed-tools of the command "
                           "or skill that started it)", used[0], _TURN_ORIGIN, "grant", used)
        if risk is Risk.READ_ONLY and not secret:
            return Outcome("allow", "every command is read-only", step="risk")
        if secret:
            text, found = next(iter(secret.items()))
            r = found.rule
            why = (f"`{text}` may read {found.what}, which could be a file Read deny rules protect (such as "
                   f"{_named(r)}); the file tools (read, grep, glob, ls) skip such files") if found.unsure else (
                   f"`{text}` may read {found.what}, and {_named(r)} denies reading there")
            return Outcome("ask", why, r.text, r.origin, "risk", (r.text,))
        if opaque:
            why = "; ".join(sp.reasons) or "the tool could not vouch for it"
            return Outcome("ask", f"no allow rule can vouch for this line: {why}", step="risk")
        todo = [c.text for c in sp.commands if not c.read_only and not any(r.covers(c.text) for r in allow)
                and c.text not in g.commands]
        if not todo:
            return Outcome("ask", f"the bash tool rated this line {risk.value}; no allow rule covers it", step="risk")
        return Outcome("ask", "not covered by an allow rule or grant: " + ", ".join(f"`{t}`" for t in todo)
                       + (" (may destroy data)" if risk is Risk.DESTRUCTIVE else ""), step="risk")

    # --- helpers ---------------------------------------------------------------------------

    def read_guard(self) -> ReadGuard:
        """The Read deny rules compiled once: bash reads are checked with it, and the file tools
        get it (``ToolEnv.reads``) to skip what those rules deny."""
        guard = self._reads
        if guard is None:
            from .reads import ReadGuard

            guard = self._reads = ReadGuard(self._bucket("deny", "read"), self.home, self.roots)
        return guard

    def _line(self, call: ToolCall) -> str:
        return call.subject or str(call.input.get("command", ""))

    def _path(self, subject: str) -> str:
        return normalise(subject, self.home, self.roots[0] if self.roots else "/")

    def _bucket(self, which: str, tool: str) -> tuple[Rule, ...]:
        key = (which, tool)
        rules = self._buckets.get(key)
        if rules is None:
            source = {"allow": self.allow, "ask": self.ask, "deny": self.deny}[which]
            rules = tuple(r for r in source if r.applies_to(tool))
            self._buckets[key] = rules
        return rules

    def _grants(self, grants: Sequence[str]) -> _Grants:
        out = _Grants()
        for text in grants:
            parsed = self._grant_cache.get(text)
            if parsed is None:
                parsed = self._parse_grant(text)
                self._grant_cache[text] = parsed
            kind, value = parsed
            if isinstance(value, Rule):
                out.rules.append(value)
            elif kind == "bash":
                out.commands.add(value)
                out.lines.add(text.strip())
        return out

    def _turn_rules(self, texts: Sequence[str]) -> list[Rule]:
        """The turn's allow rules, parsed once each; one that is not a rule allows nothing."""
        out: list[Rule] = []
        for text in texts:
            if text not in self._turn_cache:
                try:
                    self._turn_cache[text] = parse_rule(text, _TURN_ORIGIN, home=self.home, roots=self.roots)
                except RuleError:
                    self._turn_cache[text] = None
            rule = self._turn_cache[text]
            if rule is not None and rule.tool != CLOUD_AGENT:
                out.append(rule)
        return out

    def _parse_grant(self, text: str) -> tuple[str, str | Rule]:
        """A grant is a bash command (``npm test``), ``Bash(npm test)``, or a rule naming another
        tool's exact subject (``Edit(/repo/a.py)``, ``mcp__s__t``)."""
        stripped = text.strip()
        if stripped.startswith("Bash(") and stripped.endswith(")"):
            stripped = stripped[5:-1]
        elif stripped[:1].isupper() or stripped.startswith("mcp__"):
            try:
                rule = parse_rule(stripped, _GRANT_ORIGIN, home=self.home, roots=self.roots)
            except RuleError:
                pass
            else:
                if rule.tool != "Bash" and rule.tool != "CloudAgent":
                    return "rule", rule
        from .bash import canonical

        return "bash", canonical(stripped, stripped=True)


def _first_match(rules: Sequence[Rule], line: str, sp: Split, extras: Sequence[str]) -> tuple[Rule, str] | None:
    """The first rule matching the whole line or any form of any command (deny and ask)."""
    for r in rules:
        if r.matches_line(line):
            return r, ""
        for c in sp.commands:
            for f in c.forms:
                if r.matches_form(f):
                    return r, f
        for f in sp.extra_forms:
            if r.matches_form(f):
                return r, f
        for f in extras:
            if r.matches_form(f):
                return r, f
    return None


def _cover(sp: Split, rules: Sequence[Rule], granted: frozenset[str] | set[str],
           secret: Mapping[str, object], strict: Sequence[Rule] = ()) -> tuple[list[Rule], list[str]] | None:
    """Rules and grants that cover every command of a non-opaque line (read-only commands need
    neither, unless they read a denied path), or None. At least one rule or grant must take part.
    A ``strict`` rule never covers a command that may read a denied path."""
    if not sp.commands:
        return None
    used_rules: list[Rule] = []
    used_grants: list[str] = []
    for c in sp.commands:
        r = next((r for r in rules if r.covers(c.text) and not (c.text in secret and r in strict)), None)
        if r is not None:
            used_rules.append(r)
        elif c.text in granted:
            used_grants.append(c.text)
        elif not c.read_only or c.text in secret:
            return None
    if not used_rules and not used_grants:
        return None
    return used_rules, used_grants


def _by_rule(kind: Kind, r: Rule, step: Step, reason: str) -> Outcome:
    return Outcome(kind, reason, r.text, r.origin, step, (r.text,))


def _named(r: Rule) -> str:
    if r.origin == DEFAULT_ORIGIN:
        return f"the built-in rule {r.text} (credential stores are never read or changed)"
    return f"rule {r.text} (from {r.origin})"


def _what(risk: Risk, tool: str, subject: str) -> str:
    target = f" {subject}" if subject else ""
    if risk is Risk.WRITE:
        return f"{tool} would change{target}"
    if risk is Risk.DESTRUCTIVE:
        return f"{tool} may destroy data ({subject or 'no subject'})"
    return f"{tool} runs{target}" if tool != "bash" else f"it runs{target}"


def _by_risk(risk: Risk, mode: PermissionMode, sandbox: SandboxMode, what: str) -> Outcome:
    if risk is Risk.READ_ONLY:
        return Outcome("allow", "the call is read-only", step="risk")
    if risk is Risk.WRITE and mode is PermissionMode.ACCEPT_EDITS:
        if SandboxMode(sandbox) is SandboxMode.READ_ONLY:
            return Outcome("ask", f"{what}; acceptEdits does not apply while the sandbox is read-only", step="risk")
        return Outcome("allow", "acceptEdits mode allows file edits", step="risk")
    return Outcome("ask", f"{what}; no allow rule covers it", step="risk")
