"""Split a bash line into the simple commands the permission engine judges one by one.

The line is first read the way bash reads it where the grammar differs: backslash-newline is
deleted outside single quotes, ``$'…'``, comments and quoted here-documents, and the ``time`` or
``!`` before a compound command (``time { …; }``) is set aside. It is then parsed with
tree-sitter-bash and every simple command in the tree is collected: those joined by ``;``,
``&&``, ``||``, ``|``, ``&`` and newlines, and those nested in subshells, groups, ``$(…)``,
``<(…)``, loop and if bodies, case arms and function bodies. Each is analysed at word level by
:mod:`cox.policy.shell` (wrappers stripped; ``eval``/``sh -c``/``env -S``/``su -c`` strings, what
is piped or fed to a shell, and brace expansions re-parsed here with the same walk). A line is
*opaque* when the split cannot vouch for what it runs: ``$(…)`` or backticks, ``<(…)``, eval,
``sh -c``, an output redirect to a path (``2>&1`` and ``/dev/null`` are fine), a parse error, an
opaque wrapper, an assignment, a brace expansion that builds the command name, or something bash
evaluates as code (``${x@P}``, ``${!x}``, arithmetic or a subscript that names a variable,
``test -v``). No prefix rule or grant allows an opaque line.

Nothing here raises on any input: whatever goes wrong makes the line opaque instead.
The parser is built on first use (importing this module does not import tree-sitter), one per
thread, since a tree-sitter parser must not be shared by two threads parsing at once.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from cox.protocol.types import Risk
from cox.slim import dataclass

from .bashread import GROUP_PREFIX, joined, parseable, ungrouped
from .braces import has_braces
from .evaluation import arithmetic, evaluated, strip_delimiters, test_reasons
from .shell import READ_REDIRECT, Word, analyse, max_risk, plain_words, split_assignments, tails

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tree_sitter import Node, Parser

__all__ = ["Classification", "Command", "Split", "canonical", "classify", "clear_cache", "split"]

MAX_DEPTH = 6  # eval inside sh -c inside eval …: deeper than this is opaque, not parsed
_SAFE_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_OUTPUT_OPS = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_DYNAMIC = frozenset({"simple_expansion", "expansion", "command_substitution",
                      "process_substitution", "arithmetic_expansion"})
# Node types that cannot hold a command: the walk does not descend into them.
_LEAVES = frozenset({"word", "number", "raw_string", "ansi_c_string", "variable_name", "file_descriptor",
                     "special_variable_name", "test_operator", "heredoc_start", "heredoc_end", "regex",
                     "extglob_pattern", "comment"})
_WORD_PARTS = frozenset({"command_name", "word", "raw_string", "string", "concatenation", "ansi_c_string",
                         "simple_expansion", "expansion", "number", "translated_string"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                       "in", "case", "esac", "!", "{", "}", "function", "select", "coproc"})
_CRUDE_SPLIT = re.compile(r"\|\||&&|[;&|\n()`]|\$\(|<\(|>\(")
_QUOTES = re.compile(r"[\"'\\]")


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command of a line.

    ``text`` is what allow rules and grants match (canonical, wrappers stripped); ``forms`` is
    every string deny and ask rules match; ``opaque`` says why no allow rule may cover it."""

    text: str
    forms: tuple[str, ...]
    risk: Risk
    opaque: str | None = None
    written: str = ""
    paths: tuple[str, ...] = ()  # arguments that name files it may read (see shell._paths)

    @property
    def read_only(self) -> bool:
        return self.risk is Risk.READ_ONLY and self.opaque is None


@dataclass(frozen=True, slots=True)
class Split:
    """A line split into its commands. ``reasons`` says why the line is opaque (empty: it is
    not); ``extra_forms`` are pieces a parse error left, which only deny and ask rules see."""

    line: str
    commands: tuple[Command, ...]
    reasons: tuple[str, ...]
    extra_forms: tuple[str, ...]
    risk: Risk

    @property
    def opaque(self) -> bool:
        return bool(self.reasons)

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(c.text for c in self.commands)


class Classification(NamedTuple):
    """What a bash tool call carries to the engine: ``risk, segments, opaque = classify(line)``."""

    risk: Risk
    segments: tuple[str, ...]
    opaque: bool


_local = threading.local()


def _parser() -> Parser:
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        parser = Parser(Language(tree_sitter_bash.language()))
        _local.parser = parser
    return parser


def classify(line: str) -> Classification:
    """Risk, segments and opacity of a bash line (ReadOnly only when every command is)."""
    s = split(line)
    return Classification(s.risk, s.segments, s.opaque)


def split(line: str) -> Split:
    """The commands of ``line``. Never raises: an internal failure makes the line opaque.
    Lines are cached (a call is classified, then decided, then maybe granted); very long ones
    are not, so the cache stays small."""
    return _cached(line) if len(line) <= _CACHE_CHARS else _uncached(line)


_CACHE_CHARS = 16384


def clear_cache() -> None:
    """Forget every cached split (for benchmarks that measure a cold parse)."""
    _cached.cache_clear()
    canonical.cache_clear()


@lru_cache(maxsize=4096)
def _cached(line: str) -> Split:
    return _uncached(line)


def _uncached(line: str) -> Split:
    try:
        return _split(line, 0)
    except Exception as exc:  # the parse must never take a turn down; opaque is the safe answer
        pieces = _crude_forms(line)
        return Split(line, (), (f"could not be analysed ({type(exc).__name__})",), pieces, Risk.EXEC)


@lru_cache(maxsize=1024)
def canonical(text: str, *, stripped: bool = False) -> str:
    """The canonical form of one command, the way rules and grants compare it.

    ``stripped`` gives the form with wrappers and locale assignments removed (what a grant records
    and allow rules match); otherwise the command as written (what a rule's prefix means). Text
    that is not exactly one simple command is returned stripped of outer spaces: it can only be
    matched as a whole line."""
    s = split(text)
    if len(s.commands) != 1 or s.extra_forms or "it could not be parsed" in s.reasons:
        return text.strip()
    c = s.commands[0]
    return c.text if stripped else c.written


# --- the walk ---------------------------------------------------------------------------------


class _Walk:
    """One pass over a parse tree, collecting commands and the reasons the line is opaque."""

    def __init__(self, src: bytes, depth: int, back: dict[int, str] | None = None) -> None:
        self.src = src
        self.depth = depth
        self.back = back
        self.commands: list[Command] = []
        self.reasons: list[str] = []
        self.risk = Risk.READ_ONLY
        self.pending: dict[int, tuple[list[str], list[Word], list[str]]] = {}
        self.piped: dict[int, Node] = {}
        self.piped_text: dict[int, list[str]] = {}
        self.extra: list[str] = []  # forms for deny and ask rules that belong to no command
        self.braces = b"{" in src

    def text(self, node: Node) -> str:
        return self.slice(node.start_byte, node.end_byte)

    def slice(self, start: int, end: int) -> str:
        text = self.src[start:end].decode("utf-8", "replace")
        return text.translate(self.back) if self.back else text

    def reason(self, why: str) -> None:
        if why not in self.reasons:
            self.reasons.append(why)

    def run(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "command":
                self.command(node, stack)
                continue
            if t == "comment":
                continue
            if t == "redirected_statement":
                self.redirected(node)
            elif t in ("variable_assignment", "variable_assignments"):
                self.assignment(node, stack)
                continue
            elif t in ("declaration_command", "unset_command"):
                self.declaration(node, stack)
                continue
            elif t == "command_substitution":
                self.reason("it has $(…) or backticks")
            elif t == "process_substitution":
                self.reason("it has <(…) or >(…)")
            elif t in _REDIRECTS:
                written = self.redirect(node)[2]
                if written is not None:
                    self.reason(f"it writes output to {written}")
            elif t == "test_command":
                self.test(node)
            elif t in ("arithmetic_expansion", "c_style_for_statement") or (
                    t == "compound_statement" and node.child_count and node.children[0].type == "(("):
                self.arithmetic(node)
            elif t == "expansion":
                why = evaluated(self.text(node))
                if why is not None:
                    self.reason(why)
            elif t == "pipeline":
                kids = node.named_children
                for a, b in zip(kids, kids[1:], strict=False):
                    self.piped[b.id] = a
            if t == "heredoc_redirect":  # ``cat <<EOF | sh``: the grammar hangs the pipe on the here-document
                pipe = next((c for c in node.named_children if c.type == "pipeline"), None)
                if pipe is not None and pipe.named_children:
                    self.piped_text[pipe.named_children[0].id] = self.fed(node)
            stack.extend(reversed(node.named_children))

    def arithmetic(self, node: Node) -> None:
        """``$((…))``, ``((…))`` and ``for ((…))`` (see :mod:`cox.policy.evaluation`)."""
        text = self.text(node)
        body = strip_delimiters(text) if node.type != "c_style_for_statement" else \
            text.split("((", 1)[-1].rsplit("))", 1)[0]
        why = arithmetic(body)
        if why is not None:
            self.reason(why)

    def test(self, node: Node) -> None:
        """``[[ … ]]`` (see :mod:`cox.policy.evaluation`)."""
        for why in test_reasons(self.text(node)):
            self.reason(why)

    # commands and what hangs on them

    def add(self, words: list[Word], assignments: list[str], redirects: list[str],
            stdin: Sequence[str] = ()) -> None:
        a = analyse(words, assignments, redirects, stdin)
        forms = list(dict.fromkeys(a.forms))
        risk = a.risk
        for script in a.scripts:
            inner = self.nested(script)
            for c in inner.commands:
                forms.extend(f for f in c.forms if f not in forms)
            forms.extend(f for f in inner.extra_forms if f not in forms)
            risk = max_risk(risk, inner.risk)
        if a.opaque:
            self.reason(a.opaque)
        self.risk = max_risk(self.risk, risk)
        self.commands.append(Command(a.text, tuple(forms), risk, a.opaque, a.written, tuple(a.paths)))

    def nested(self, script: str) -> Split:
        if self.depth >= MAX_DEPTH:
            return Split(script, (), ("it nests scripts too deeply",), _crude_forms(script), Risk.EXEC)
        return _split(script, self.depth + 1)

    def command(self, node: Node, stack: list[Node]) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        redirects, extra, stdin = self.pending.pop(node.id, ([], [], []))
        redirects = list(redirects)
        stdin = list(stdin)
        stdin.extend(self.piped_text.pop(node.id, ()))
        piped = self.piped.pop(node.id, None)
        while piped is not None and piped.type in ("negated_command", "redirected_statement") and piped.named_children:
            for c in piped.named_children:
                stdin.extend(self.fed(c))  # cat <<< 'rm x' | sh
            piped = piped.named_children[0]
        if piped is not None and piped.type == "command":  # echo 'rm x' | sh
            args = []
            for c in piped.named_children[1:]:
                if c.type in _REDIRECTS:
                    stdin.extend(self.fed(c))
                else:
                    args.append(self.word(c).value)
            stdin.extend([" ".join(args), *args])
        ends: list[int] = []  # where each word ends: tree-sitter splits ``'a'\b`` into two
        for child in node.named_children:
            t = child.type
            if ends and ends[-1] == child.start_byte and t in _WORD_PARTS:
                inner = child.named_children[0] if t == "command_name" and child.named_child_count else child
                w, tail = words[-1], self.word(inner)
                words[-1] = Word(w.value + tail.value, w.raw + tail.raw, w.dynamic or tail.dynamic)
                ends[-1] = child.end_byte
                if inner.type not in _LEAVES:
                    stack.append(inner)
                continue
            if t == "variable_assignment" and not words:
                assignments.append(self.text(child))
                value = child.child_by_field_name("value")
                if value is not None and value.type not in _LEAVES:
                    stack.append(value)
                continue
            if t == "command_name":
                if not child.named_child_count:
                    continue
                child = child.named_children[0]
                t = child.type
                words.append(self.word(child))
                ends.append(child.end_byte)
            elif t in _REDIRECTS:
                kept, more, _ = self.redirect(child)
                if kept:
                    redirects.append(kept)
                words.extend(more)
                ends.extend(-1 for _ in more)
                stdin.extend(self.fed(child))
            elif t not in ("comment", "ERROR"):
                words.append(self.word(child))
                ends.append(child.end_byte)
            if t not in _LEAVES:  # look inside for $(…), <(…) and what they run
                stack.append(child)
        if len(words) == 1 and words[0].raw == "}" and not extra:
            return  # the end of a group the grammar took for a command (``time { ls; }``)
        raw = self.text(node) if self.braces else ""
        if "{" in raw and has_braces(raw) and not any(has_braces(w.raw) for w in words):
            # the grammar split a brace expansion across words (``time { {rm,x}; }``)
            self.reason("it has a brace expansion the parser split")
            self.extra.extend(f for f in _crude_forms(raw) if f not in self.extra)
        self.add(words + extra, assignments, redirects, stdin)

    def fed(self, node: Node) -> list[str]:
        """What a here-string or here-document feeds a command (a shell runs it)."""
        if node.type == "herestring_redirect":
            return [self.word(c).value for c in node.named_children]
        if node.type == "heredoc_redirect":
            return [self.text(c) for c in node.named_children if c.type == "heredoc_body"]
        return []

    def redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        kept: list[str] = []
        extra: list[Word] = []
        fed: list[str] = []
        for child in node.named_children:
            if child.type in _REDIRECTS:
                text, more, _ = self.redirect(child)
                if text:
                    kept.append(text)
                extra.extend(more)
                fed.extend(self.fed(child))
        if body is not None and body.type == "command":
            self.pending[body.id] = (kept, extra, fed)
        elif body is not None and (fed or any(READ_REDIRECT.fullmatch(k.strip()) for k in kept)):
            # ``{ cat; } < F``, ``while …; done < F``: every command inside reads F; and
            # ``false || sh <<EOF``: the grammar hangs the here-document on the whole list, so
            # any command in it may be the one that reads it
            inputs = [k for k in kept if READ_REDIRECT.fullmatch(k.strip())]
            todo = [body]
            while todo:
                n = todo.pop()
                if n.type == "command":
                    if inputs:
                        mine, words, its_fed = self.pending.get(n.id, ([], [], []))
                        self.pending[n.id] = ([*mine, *inputs], words, its_fed)
                    if fed:
                        self.piped_text.setdefault(n.id, []).extend(fed)
                todo.extend(n.named_children)

    def redirect(self, node: Node) -> tuple[str | None, list[Word], str | None]:
        """``(text to keep in the command, stray words, path written to)`` of one redirect.
        The grammar hangs words after ``> out`` on the redirect (``echo > out hi``); they are
        the command's arguments. fd duplications and /dev/null are dropped from the text."""
        if node.type != "file_redirect":
            return self.text(node), [], None
        op = ""
        for child in node.children:
            if not child.is_named:
                op = child.type
                break
        dests = node.children_by_field_name("destination")
        joined = 1  # tree-sitter splits ``< 'a'\b`` into two destinations: bash reads one word
        while joined < len(dests) and dests[joined].start_byte == dests[joined - 1].end_byte:
            joined += 1
        more = [self.word(d) for d in dests[joined:]]
        dest = self.slice(dests[0].start_byte, dests[joined - 1].end_byte) if dests else ""
        if op in (">&-", "<&-") or (op in (">&", "<&") and (dest.isdigit() or dest == "-" or not dests)):
            return None, more, None
        kept = self.slice(node.start_byte, dests[joined - 1].end_byte) if dests else self.text(node)
        if op in _OUTPUT_OPS:
            if dest in _SAFE_SINKS:
                return None, more, None
            return kept, more, dest or "a file"
        return kept, more, None

    def assignment(self, node: Node, stack: list[Node]) -> None:
        parts = [node] if node.type == "variable_assignment" else list(node.named_children)
        self.add([], [self.text(p) for p in parts], [])
        for p in parts:
            value = p.child_by_field_name("value")
            if value is not None:
                stack.append(value)

    def declaration(self, node: Node, stack: list[Node]) -> None:
        text = self.text(node)
        keyword = node.children[0].type if node.child_count else "export"
        flat = " ".join(text.split())
        self.commands.append(Command(flat, (flat,), Risk.EXEC, f"`{keyword}` changes what later commands run",
                                     flat))
        self.reason(f"`{keyword}` changes what later commands run")
        self.risk = max_risk(self.risk, Risk.EXEC)
        for child in node.named_children:
            value = child.child_by_field_name("value") if child.type == "variable_assignment" else child
            if value is not None:
                stack.append(value)

    # words

    def word(self, node: Node) -> Word:
        t = node.type
        raw = self.text(node)
        if t == "word":
            return Word(_unescape(raw), raw)
        if t == "number":
            return Word(raw, raw)
        if t == "raw_string":
            return Word(raw[1:-1], raw)
        if t in ("string", "translated_string"):
            dynamic = any(c.type in _DYNAMIC for c in node.named_children)
            inner = raw[1:-1] if t == "string" else raw[2:-1]
            return Word(_unescape_dq(inner), raw, dynamic)
        if t == "ansi_c_string":
            return Word(_ansi_c(raw[2:-1]), raw)
        if t == "concatenation":
            parts = [self.word(c) for c in node.named_children]
            return Word("".join(p.value for p in parts), raw, any(p.dynamic for p in parts))
        return Word(raw, raw, t in _DYNAMIC or "$" in raw or "`" in raw)


def _split(line: str, depth: int) -> Split:
    safe, back = parseable(line)
    src = safe.encode("utf-8", "surrogatepass")
    tree = _parser().parse(src)
    why_joined: str | None = None
    if b"\\\n" in src:
        src, tree, why_joined = joined(src, tree, _parser().parse)
    if (b"time" in src or b"!" in src) and GROUP_PREFIX.search(src):
        src, tree = ungrouped(src, tree, _parser().parse)
    walk = _Walk(src, depth, back)
    root = tree.root_node
    walk.run(root)
    if why_joined:
        walk.reason(why_joined)
    extra: list[str] = walk.extra
    if root.has_error:
        walk.reason("it could not be parsed")
        text = walk.slice(0, len(src))
        extra += [f for f in _crude_forms(text) if all(f not in c.forms for c in walk.commands)]
    if walk.reasons:
        walk.risk = max_risk(walk.risk, Risk.EXEC)
    return Split(line, tuple(walk.commands), tuple(walk.reasons), tuple(extra), walk.risk)


def _crude_forms(line: str) -> tuple[str, ...]:
    """Forms for deny and ask rules from text the parser could not vouch for: split on every
    operator character, drop quotes, keywords, assignments and wrappers, and keep what is left
    and every tail of it (which word starts a command is unknown when quotes do not pair up)."""
    out: dict[str, None] = {}
    for piece in _CRUDE_SPLIT.split(line[:20000]):
        tokens = _QUOTES.sub("", piece).split()
        while tokens and tokens[0] in _KEYWORDS:
            tokens.pop(0)
        assignments, rest = split_assignments(tokens)
        if not rest and not assignments:
            continue
        a = analyse(plain_words(rest), assignments)
        out.update(dict.fromkeys(a.forms))
        out.update(dict.fromkeys(tails(rest)))
    return tuple(out)


_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r"\\([\\\"$`\n])")


def _unescape(raw: str) -> str:
    return _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw) if "\\" in raw else raw


def _unescape_dq(inner: str) -> str:
    return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), inner) if "\\" in inner else inner


_ANSI_ESCAPE = re.compile(r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
                          r"|U([0-9A-Fa-f]{1,8})|c(.))", re.DOTALL)
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(inner: str) -> str:
    """The value of ``$'inner'`` as bash decodes it; an escape bash does not know (``\\⏎``,
    ``\\q``) keeps its backslash, as in bash."""
    if "\\" not in inner:
        return inner

    def one(m: re.Match[str]) -> str:
        simple, octal, hex2, u4, u8, ctrl = m.groups()
        if simple is not None:
            return _ANSI_SIMPLE[simple]
        if octal is not None:
            return chr(int(octal, 8) & 0xFF)
        if hex2 is not None:
            return chr(int(hex2, 16))
        if ctrl is not None:
            return chr(ord(ctrl) & 0x1F)
        code = int(u4 or u8, 16)
        return chr(code) if code <= 0x10FFFF else m.group(0)

    return _ANSI_ESCAPE.sub(one, inner)
