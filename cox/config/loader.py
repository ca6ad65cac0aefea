"""Layered configuration: defaults → user file → Claude user settings → project file → project
Claude settings → ``COX_*`` env → flags.

Why a hand-written walk over the raw TOML before the records are built: every complaint about a
setting must be one line naming the file, the line and the key (``cox config show`` is how a
person finds out why cox behaves as it does), and a project file must be able to *narrow* trust
but never widen it. Both need to know, per key, which layer and which line it came from, which a
plain decode of a merged dict cannot tell. What a project may set is an allowlist, with the
reason for every key, in :mod:`cox.config.project`; Claude Code's permission files are read by
:mod:`cox.config.claude`.

Layers are kept flat: ``{("core", "model"): "x", ...}``. Applying a layer overwrites leaves one
by one, so tables merge deeply; the three permission rule lists (allow/ask/deny) are the exception
and are concatenated across layers (deduplicated), each rule remembering its own origin.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import field
from enum import Enum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

from cox.protocol.record import (
    DecodeError,
    Record,
    Spec,
    choices_of,
    decode,
    describe,
    out_of_bounds,
    specs,
    unwrap_optional,
)
from cox.slim import dataclass

from .readfile import NotASettingsFile, read_settings_bytes, user_settings_path
from .schema import Config

if TYPE_CHECKING:  # Claude's reader, lines and project rules load with the first file read
    from .claude import ClaudeFile
    from .lines import KeyPath

Keys = tuple[str, ...]

# Flags the `cox` command line maps onto config keys. The flag's spelling is what `source()`
# reports (``flag:--model``); the argparse dest is derived from it (``--max-turns`` → max_turns).
FLAG_NAMES: dict[str, str] = {
    "core.model": "--model",
    "core.max_turns": "--max-turns",
    "core.mode": "--mode",
    "core.provider": "--provider",
    "core.script": "--script",
    "permissions.mode": "--permission-mode",
    "permissions.approval_policy": "--approve",
    "sandbox.mode": "--sandbox",
}

CLAUDE_SOURCES = frozenset({"user", "project", "local"})
"""Claude Code's settings files cox reads by default (``--setting-sources`` narrows them)."""

RULE_LISTS: frozenset[Keys] = frozenset(
    {("permissions", "allow"), ("permissions", "ask"), ("permissions", "deny")}
)

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_SYNTAX_POS = r"\s*\(at line (\d+), column (\d+)\)$"  # compiled on the first syntax error


class ConfigError(Exception):
    """A configuration problem, as one line naming the file (or env var / flag), line and key.

    Surfaces print ``cox: config error: <message>`` and exit 2; nothing about it needs a traceback.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 key: str | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.key = key


# --------------------------------------------------------------------------------------------
# The schema, read once from the config records


# (Plain classes rather than frozen dataclasses: each of those costs ~0.2 ms of start-up.)


class _Leaf:
    __slots__ = ("annotation", "bounds")

    def __init__(self, annotation: Any, bounds: Spec | None = None) -> None:
        self.annotation = annotation
        self.bounds = bounds  # the field, when it has numeric bounds


class _Table:
    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, _Node]) -> None:
        self.fields = fields


class _Map:
    """A table of named entries of one shape (``[mcp.servers.<name>]``)."""

    __slots__ = ("entry",)

    def __init__(self, entry: _Table) -> None:
        self.entry = entry


class _Free:
    """A free-form table (``[hooks]`` until the hooks issue fixes its shape)."""

    __slots__ = ()


_Node = _Leaf | _Table | _Map | _Free


def _table_of(model: type[Record]) -> _Table:
    fields: dict[str, _Node] = {}
    for spec in specs(model):
        if not spec.internal:
            fields[spec.name] = _node_of(spec)
    return _Table(fields)


def _is_record_type(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, Record)


def _node_of(spec: Spec) -> _Node:
    ann = spec.type
    if _is_record_type(ann):
        return _table_of(ann)
    if get_origin(ann) is dict:
        _, value_type = get_args(ann)
        if _is_record_type(value_type):
            return _Map(_table_of(value_type))
        if value_type is Any:
            return _Free()
    return _Leaf(ann, spec if spec.bounded else None)


@cache
def _schema() -> _Table:
    return _table_of(Config)


@cache
def _defaults() -> Config:
    return Config()


@cache
def env_vars() -> dict[str, str]:
    """Every accepted ``COX_*`` variable and the dotted key it sets.

    The scheme: ``COX_<SECTION>_<KEY>`` in upper case, for every plain key directly under a
    section (``COX_CORE_MODEL`` → ``core.model``, ``COX_TOOLS_BASH_TIMEOUT_S`` →
    ``tools.bash_timeout_s``). Section names hold no underscore, so the split is unambiguous.
    Named tables (``mcp.servers``, ``lsp.servers``, ``models``) and ``hooks`` have no variables.
    """
    out: dict[str, str] = {}
    for section, node in _schema().fields.items():
        if isinstance(node, _Table):
            for key, child in node.fields.items():
                if isinstance(child, _Leaf):
                    out[f"COX_{section.upper()}_{key.upper()}"] = f"{section}.{key}"
    return out


@cache
def _config_sections() -> frozenset[str]:
    """Every section's name as a variable spells it (``CORE``), from the field names alone."""
    return frozenset(name.upper() for name in Config.__dataclass_fields__)


@cache
def _env_sections() -> frozenset[str]:
    return frozenset(name.split("_")[1] for name in env_vars())


def _all_keys(table: _Table, prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, node in table.fields.items():
        key = prefix + name
        out.append(key)
        if isinstance(node, _Table):
            out.extend(_all_keys(node, key + "."))
        elif isinstance(node, _Map):
            out.extend(_all_keys(node.entry, key + ".<name>."))
    return out


def _distance(a: str, b: str) -> int:
    """Edit distance counting a swap of two neighbours as one edit (the commonest typo)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to ``word``, if near enough to be a typo of it.

    Ties go to a candidate with the same letters (``modle`` → ``model``, not ``mode``), then to
    the closest spelling by difflib's ratio. Failing that, the one candidate ``word`` begins."""
    import difflib  # error messages only

    best: tuple[int, int, float, str] | None = None
    candidates = list(candidates)
    for candidate in candidates:
        dist = _distance(word.lower(), candidate.lower())
        if dist > max(2, len(word) // 3):
            continue
        rank = (dist, sorted(word.lower()) != sorted(candidate.lower()),
                -difflib.SequenceMatcher(None, word, candidate).ratio(), candidate)
        if best is None or rank < best:
            best = rank
    if best is None and len(word) >= 3:  # "bypass" → "bypassPermissions"
        prefixed = [c for c in candidates if c.lower().startswith(word.lower())]
        if len(prefixed) == 1:
            return prefixed[0]
    return best[3] if best else None


def _suggest(path: Keys, siblings: Iterable[str]) -> str | None:
    """The closest known key to an unknown ``path``: a near-spelling among its siblings, else a
    key of that name elsewhere (``[core] allow`` → ``permissions.allow``), else a near-spelling
    of the whole dotted path."""
    name = path[-1]
    close = _closest(name, siblings)
    if close:
        return _dotted((*path[:-1], close))
    known = _all_keys(_schema())
    same_name = [k for k in known if k.rsplit(".", 1)[-1] == name]
    if same_name:
        return same_name[0]
    return _closest(".".join(path), known)


def _dotted(path: Iterable[str | int]) -> str:
    """A key path written back as TOML would (names that are not bare keys are quoted), so a
    name taken from a file cannot smuggle control characters into a message."""
    return ".".join(
        str(p) if isinstance(p, int) or (p and all(ch in _BARE for ch in p)) else json.dumps(p) for p in path
    )


def _unknown(path: Keys, siblings: Iterable[str], where: str, line: int | None,
             file: str | None) -> ConfigError:
    key = _dotted(path)
    hint = _suggest(path, siblings)
    tail = f"; did you mean {hint!r}?" if hint else ""
    return ConfigError(f"{where}: unknown key {key!r}{tail}", file=file, line=line, key=key)


# --------------------------------------------------------------------------------------------
# Checking one value against its declared type


class _Bad(Exception):
    """A value does not fit its key; the message reads after ``<key>: ``."""


_TABLES = ("a table", "tables")  # TOML's word for a mapping, where the codec says "object"


def _describe(ann: Any) -> str:
    return describe(unwrap_optional(ann), objects=_TABLES)


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "table"
    return type(value).__name__


def _check(value: Any, leaf: _Leaf) -> Any:
    """``value`` checked and coerced (an int where a float goes) by the record codec, the one
    checker of annotations; an Enum's value stays its plain value, as the file wrote it. Raise
    ``_Bad`` with the codec's verdict said in TOML's words (:func:`_phrase`)."""
    if value is None and unwrap_optional(leaf.annotation) is leaf.annotation:
        raise _Bad(f"expected {_describe(leaf.annotation)}, got nothing")
    try:
        checked = decode(leaf.annotation, value)
    except DecodeError as exc:
        raise _Bad(_phrase(exc, value, leaf.annotation)) from None
    if leaf.bounds is not None and checked is not None:
        problem = out_of_bounds(leaf.bounds, checked)
        if problem:
            raise _Bad(problem)
    return checked.value if isinstance(checked, Enum) else checked


def _phrase(exc: DecodeError, value: Any, ann: Any) -> str:
    """The codec's complaint about ``value`` as a config line says it: what the key takes, then
    what was there (TOML's type name, or the word itself with a "did you mean" for a choice),
    then where inside a list or table."""
    if not exc.path:
        choices = choices_of(unwrap_optional(ann))
        if choices is not None and isinstance(value, str):
            near = _closest(value, [str(c) for c in choices])
            return f"expected {_describe(ann)}, got {value!r}" + (f" (did you mean {near!r}?)" if near else "")
        return f"expected {_describe(ann)}, got {_type_name(value)}"
    first = exc.path[0]
    if isinstance(value, list) and isinstance(first, int):
        return f"expected {_describe(ann)}, got {_type_name(value[first])} at item {first + 1}"
    if isinstance(value, dict) and first in value:
        return f"expected {_describe(ann)}, got {_type_name(value[first])} at {first!r}"
    return exc.problem


def _parse_text(text: str, leaf: _Leaf) -> Any:
    """Turn an environment variable's (or a string flag's) text into a value of the leaf's type."""
    ann = unwrap_optional(leaf.annotation)
    if ann is not leaf.annotation and text.strip().lower() in ("", "none"):
        return None
    if ann is str or ann is Any or choices_of(ann) is not None:
        return text
    word = text.strip()
    if ann is bool:
        if word.lower() in _TRUE:
            return True
        if word.lower() in _FALSE:
            return False
        raise _Bad(f"expected true or false (or 1/0, yes/no, on/off), got {text!r}")
    if ann is int:
        try:
            return int(word)
        except ValueError:
            raise _Bad(f"expected an integer, got {text!r}") from None
    if ann is float:
        try:
            return float(word)
        except ValueError:
            raise _Bad(f"expected a number, got {text!r}") from None
    import tomllib  # here, not at the top: a run without config files never parses TOML

    try:
        return tomllib.loads("v = " + word)["v"]
    except tomllib.TOMLDecodeError:
        example = '["a", "b"]' if get_origin(ann) is list else '{ K = "v" }'
        raise _Bad(f"expected {_describe(ann)} written in TOML, like {example}, got {text!r}") from None


# --------------------------------------------------------------------------------------------
# Layers


class _Entry:
    """Marks that a named entry (``mcp.servers.github``) exists, even with no keys of its own."""

    def __repr__(self) -> str:
        return "<entry>"


_ENTRY = _Entry()


@dataclass
class _Layer:
    kind: str  # "user" | "claude-user" | "project" | "claude-project" | "extra" | "env" | "flag"
    entries: dict[Keys, Any]
    where: Callable[[KeyPath], str]
    file: str | None = None
    lines: dict[KeyPath, int] = field(default_factory=dict)
    names: dict[Keys, str] = field(default_factory=dict)

    def line(self, path: KeyPath) -> int | None:
        from .lines import line_of

        return line_of(self.lines, path) if self.file else None

    def label(self, path: Keys) -> str:
        """The key as this layer's file spells it (a Claude settings file says ``defaultMode``)."""
        return self.names.get(path) or _dotted(path)


def _read_file(path: Path, kind: str) -> _Layer | None:
    """Parse and check one config file; ``None`` when it does not exist."""
    name = str(path)
    try:
        data = read_settings_bytes(path)
    except FileNotFoundError:
        return None
    except NotASettingsFile as exc:
        raise ConfigError(f"{name}: cannot read: it {exc.strerror}; cox reads config only from a regular file",
                          file=name) from None
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}", file=name) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{name}:{line}: not valid UTF-8 (byte {exc.start})", file=name, line=line) from None
    import tomllib  # here, not at the top: a run without config files never parses TOML

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(_SYNTAX_POS, message)
        if match:
            line, col = int(match.group(1)), int(match.group(2))
            message = message[: match.start()]
            raise ConfigError(f"{name}:{line}:{col}: TOML syntax error: {message}", file=name, line=line) from None
        raise ConfigError(f"{name}: TOML syntax error: {message}", file=name) from None
    from .lines import key_lines, line_of

    lines = key_lines(text)

    def where(key: KeyPath) -> str:
        line = line_of(lines, key)
        return f"{name}:{line}" if line else name

    layer = _Layer(kind, {}, where, file=name, lines=lines)
    _walk(raw, _schema(), (), layer)
    return layer


def _walk(raw: dict[str, Any], table: _Table, prefix: Keys, layer: _Layer) -> None:
    for key, value in raw.items():
        path = (*prefix, key)
        node = table.fields.get(key)
        if node is None:
            raise _unknown(path, table.fields, layer.where(path), layer.line(path), layer.file)
        if isinstance(node, _Leaf):
            try:
                layer.entries[path] = _check(value, node)
            except _Bad as bad:
                raise _bad_value(layer, path, str(bad)) from None
            continue
        if not isinstance(value, dict):
            raise _bad_value(layer, path, f"expected a table, got {_type_name(value)}")
        if isinstance(node, _Table):
            _walk(value, node, path, layer)
        elif isinstance(node, _Map):
            for name, entry in value.items():
                entry_path = (*path, name)
                if not isinstance(entry, dict):
                    raise _bad_value(layer, entry_path, f"expected a table, got {_type_name(entry)}")
                layer.entries[entry_path] = _ENTRY
                _walk(entry, node.entry, entry_path, layer)
        else:
            for name, item in value.items():
                layer.entries[(*path, name)] = item


def _bad_value(layer: _Layer, path: Keys, problem: str) -> ConfigError:
    key = _dotted(path)
    return ConfigError(f"{layer.where(path)}: {key}: {problem}", file=layer.file, line=layer.line(path), key=key)


def _env_layer(env: Mapping[str, str]) -> _Layer:
    entries: dict[Keys, Any] = {}
    names: dict[Keys, str] = {}
    # The names are scanned first: the table of variables is built from the resolved types of
    # every section, which only a run with a COX_<SECTION>_ variable set needs.
    sections = _config_sections()
    candidates = sorted(name for name in env if name.startswith("COX_") and name[4:].partition("_")[0] in sections)
    table = env_vars() if candidates else {}
    for name in candidates:
        if name[4:].partition("_")[0] not in _env_sections():
            continue  # COX_HOME and friends are not config keys
        key = table.get(name)
        if key is None:
            near = _closest(name, table)
            tail = f"; did you mean {near}?" if near else " (see docs/config.md for the list)"
            raise ConfigError(f"env:{name}: unknown config variable{tail}", key=name)
        path = tuple(key.split("."))
        leaf = _resolve(path, f"env:{name}")[0]
        try:
            entries[path] = _check(_parse_text(env[name], leaf), leaf)
        except _Bad as bad:
            raise ConfigError(f"env:{name}: {key}: {bad}", key=key) from None
        names[path] = name

    def where(path: KeyPath) -> str:
        plain = tuple(p for p in path if isinstance(p, str))
        return f"env:{names.get(plain, '?')}"

    return _Layer("env", entries, where)


def _flag_label(key: str) -> str:
    return FLAG_NAMES.get(key, key)


def _flag_layer(flags: Mapping[str, Any]) -> _Layer:
    entries: dict[Keys, Any] = {}
    labels: dict[Keys, str] = {}
    for key, value in flags.items():
        if value is None:
            continue  # a flag that was not given
        path = tuple(key.split("."))
        label = f"flag:{_flag_label(key)}"
        leaf, markers = _resolve(path, label)
        try:
            if isinstance(value, str) and leaf.annotation is not str:
                value = _parse_text(value, leaf)
            if isinstance(value, Enum):
                value = value.value
            entries[path] = _check(value, leaf)
        except _Bad as bad:
            raise ConfigError(f"{label}: {key}: {bad}", key=key) from None
        for marker in markers:
            entries.setdefault(marker, _ENTRY)
            labels.setdefault(marker, label)
        labels[path] = label

    def where(path: KeyPath) -> str:
        plain = tuple(p for p in path if isinstance(p, str))
        return labels.get(plain, "flag")

    return _Layer("flag", entries, where)


def _override_layers(overrides: Sequence[tuple[str, str]]) -> list[_Layer]:
    """``cox exec -c KEY=VALUE`` pairs as layers, one a pair, in order (a later pair of a key
    wins): any dotted key of the schema, a table too (``-c 'mcp.servers.db={command="db-mcp"}'``),
    the value read as TOML (``-c core.max_turns=5``, ``-c 'permissions.deny=["Bash(curl:*)"]'``),
    or as the plain text when it is not TOML and the key takes a string (``-c core.model=gpt-5``,
    as Codex reads it). Walked and checked like a file's values, so an unknown key or a bad value
    is the same one-line error. The person's own command line: not restricted like a project's."""
    layers: list[_Layer] = []
    for key, text in overrides:
        import tomllib  # here, not at the top: only a command line with -c parses it

        path = tuple(key.split("."))
        if not key or not all(path):
            raise ConfigError(f"flag:-c: {key!r} is not a dotted config key (like core.model)", key=key)
        try:
            value = tomllib.loads("v = " + text)["v"]
        except tomllib.TOMLDecodeError:
            leaf = _resolve(path, "flag:-c")[0]
            ann = unwrap_optional(leaf.annotation)
            if ann is not str and choices_of(ann) is None:
                raise ConfigError(f"flag:-c: {_dotted(path)}: expected {_describe(leaf.annotation)} written in "
                                  f"TOML, got {text!r}", key=key) from None
            value = text
        raw: Any = value
        for part in reversed(path):
            raw = {part: raw}
        layer = _Layer("flag", {}, lambda _path: "flag:-c")
        _walk(raw, _schema(), (), layer)
        layers.append(layer)
    return layers


def _resolve(path: Keys, where: str) -> tuple[_Leaf, list[Keys]]:
    """The leaf a dotted key names, and the named entries (``mcp.servers.x``) on the way."""
    node: _Node = _schema()
    markers: list[Keys] = []
    for depth, part in enumerate(path):
        here = path[: depth + 1]
        if isinstance(node, _Table):
            child = node.fields.get(part)
            if child is None:
                raise _unknown(here, node.fields, where, None, None)
            node = child
        elif isinstance(node, _Map):
            markers.append(here)
            node = node.entry
        elif isinstance(node, _Free):
            if depth != len(path) - 1:
                raise ConfigError(f"{where}: {_dotted(path)}: set {_dotted(here)} as a whole", key=_dotted(path))
            node = _Leaf(Any)
        else:
            raise ConfigError(f"{where}: {_dotted(path)}: {_dotted(path[:depth])} is not a table",
                              key=_dotted(path))
    if isinstance(node, _Free):
        node = _Leaf(dict[str, Any])
    if not isinstance(node, _Leaf):
        raise ConfigError(f"{where}: {_dotted(path)} is a table; set one of its keys", key=_dotted(path))
    return node, markers


# --------------------------------------------------------------------------------------------
# Project restrictions: a repository may narrow trust, never widen it (the allowlist and the
# reason for each key are in cox.config.project)


def _restrict(layer: _Layer, current: Callable[[Keys], Any], user: str,
              verdict: Callable[[Keys, Any, Callable[[Keys], Any], str], str | None] | None = None) -> list[str]:
    """Drop from ``layer`` what ``verdict`` (default: a project file's, ``project_verdict``)
    refuses; one warning per ignored key (per named entry for tables of entries), naming the
    file, the line and the key."""
    from .project import entry_key, project_verdict

    verdict = project_verdict if verdict is None else verdict
    warnings: list[str] = []
    warned: set[Keys] = set()
    kept: dict[Keys, Any] = {}
    for path, value in layer.entries.items():
        reason = verdict(path, value, current, user)
        if reason is None:
            kept[path] = value
            continue
        key = entry_key(path)
        if not reason:  # dropped without a word: read elsewhere (a project's hooks: cox.hooks, after trust)
            continue
        if key not in warned:
            warned.add(key)
            warnings.append(f"{layer.where(key)}: ignored {layer.label(key)}: {reason}")
    layer.entries = kept
    return warnings


# --------------------------------------------------------------------------------------------
# Merging and building


@dataclass
class _Merged:
    values: dict[Keys, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    list_sources: dict[Keys, list[str]] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def current(self, path: Keys) -> Any:
        if path in self.values:
            return self.values[path]
        return _defaults().get(".".join(path))

    def apply(self, layer: _Layer) -> None:
        for path, value in layer.entries.items():
            key = ".".join(path)
            if path in RULE_LISTS:
                rules = self.values.setdefault(path, [])
                for index, rule in enumerate(value):
                    if rule not in rules:
                        rules.append(rule)
                    self.origins.setdefault(rule, layer.where((*path, index)))
                if value:
                    self.list_sources.setdefault(path, []).append(layer.where(path))
            elif value is _ENTRY:
                self.values.setdefault(path, _ENTRY)
                self.sources.setdefault(key, layer.where(path))
            else:
                self.values[path] = value
                self.sources[key] = layer.where(path)

    def build(self) -> Config:
        nested: dict[str, Any] = {}
        for path, value in self.values.items():
            node = nested
            for part in path[:-1]:
                node = node.setdefault(part, {})
            if value is _ENTRY:
                node.setdefault(path[-1], {})
            else:
                node[path[-1]] = value
        self._check_entries(nested)
        try:
            config: Config = decode(Config, nested)
        except DecodeError as exc:  # the walk above should make this unreachable
            key = exc.where
            raise ConfigError(f"{self.sources.get(key, 'config')}: {key}: {exc.problem}", key=key) from None
        sources = dict(self.sources)
        for path, where in self.list_sources.items():
            sources[".".join(path)] = ", ".join(dict.fromkeys(where))
        config._sources = sources
        config.permissions.origins = dict(self.origins)
        return config

    def _check_entries(self, nested: dict[str, Any]) -> None:
        """Cross-field rules of named entries, reported at the entry's own line."""
        for name, server in nested.get("mcp", {}).get("servers", {}).items():
            has_command, has_url = bool(server.get("command")), bool(server.get("url"))
            if has_command == has_url:
                key, shown = f"mcp.servers.{name}", _dotted(("mcp", "servers", name))
                problem = "set either command (stdio) or url (HTTP), not both" if has_command \
                    else "needs a command (stdio) or a url (HTTP)"
                raise ConfigError(f"{self.sources.get(key, 'config')}: {shown}: {problem}", key=shown)
        for name, server in nested.get("lsp", {}).get("servers", {}).items():
            if not server.get("command"):
                key, shown = f"lsp.servers.{name}", _dotted(("lsp", "servers", name))
                raise ConfigError(f"{self.sources.get(key, 'config')}: {shown}: needs a command", key=shown)


def default_cox_home(env: Mapping[str, str] | None = None) -> Path:
    """``$COX_HOME``, else ``~/.cox``."""
    env = os.environ if env is None else env
    value = env.get("COX_HOME")
    return Path(value).expanduser() if value else Path.home() / ".cox"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def load_config(cwd: Path, *, cox_home: Path | None = None, env: Mapping[str, str] | None = None,
                flags: Mapping[str, Any] | None = None, user_home: Path | None = None,
                extra: Sequence[Path] = (), overrides: Sequence[tuple[str, str]] = (),
                settings: Sequence[tuple[str, str]] = (), claude_sources: Collection[str] | None = None) -> Config:
    """Load the effective configuration for a session started in ``cwd``.

    Precedence, lowest first: built-in defaults, ``<cox_home>/config.toml``, Claude Code's user
    ``~/.claude/settings.json`` (permissions only, :mod:`cox.config.claude`), ``<cwd>/.cox/config.toml``
    and then ``<cwd>/.claude/settings.json`` and ``settings.local.json`` (both with the project
    restrictions of :mod:`cox.config.project`), the ``extra`` files (config files the person
    named on a command line, trusted like the user file; one that does not exist is an error),
    ``COX_*`` variables of ``env`` (default ``os.environ``), then ``flags`` (dotted key → value;
    ``None`` means "not given"; a string for a non-string key is parsed like an environment value).
    ``user_home`` (default ``Path.home()``) is where ``~`` and ``~/.claude`` are.

    The command line's own layers (``cox.surfaces.config_flags``): ``settings`` are Claude Code
    settings documents (``--settings``: ``(name, text)``), read like ``~/.claude/settings.json``
    and layered right above it; ``claude_sources`` (``--setting-sources``; None: all) names which
    of Claude Code's files are read: ``user`` (``~/.claude/settings.json``), ``project``
    (``.claude/settings.json``), ``local`` (``.claude/settings.local.json``); ``overrides`` are
    ``-c KEY=VALUE`` pairs (:func:`_override_layers`), above the environment and below ``flags``.

    Raises :class:`ConfigError` (one line naming file, line and key) for a syntax error, an
    unknown key or a wrong type in a cox file. Ignored settings (project restrictions, a Claude
    settings file cox could not use) are listed in ``config.warnings``; they never stop cox.
    """
    env = os.environ if env is None else env
    home = cox_home if cox_home is not None else default_cox_home(env)
    user_home = Path.home() if user_home is None else Path(user_home)
    user_path = Path(home).absolute() / "config.toml"
    workspace = Path(cwd).absolute()
    project_path = workspace / ".cox" / "config.toml"
    claude_user = user_settings_path(user_home, env).absolute()
    roots = [str(workspace)]

    merged = _Merged()
    warnings: list[str] = []
    files: list[str] = []

    def claude(path: Path, scope: str) -> None:
        try:
            os.lstat(path)
        except FileNotFoundError:  # what read_settings answers None for, before loading it
            return
        except OSError:  # unreadable (a folder the user may not enter): read_settings says so
            pass
        from .claude import claude_verdict, read_settings

        read = read_settings(path, home=str(user_home), roots=roots)
        if read is None:
            return
        files.append(str(path))
        warnings.extend(read.warnings)
        layer = _claude_layer(read, scope)
        warnings.extend(_restrict(layer, merged.current, str(user_path), claude_verdict(scope)))
        merged.apply(layer)

    user = _read_file(user_path, "user")
    if user is not None:
        files.append(str(user_path))
        merged.apply(user)
    sources = CLAUDE_SOURCES if claude_sources is None else frozenset(claude_sources)
    if "user" in sources:
        claude(claude_user, "user")
    for name, text in settings:  # --settings: the person's own, as their ~/.claude/settings.json
        from .claude import claude_verdict, read_settings_text

        read = read_settings_text(text, name, home=str(user_home), roots=roots)
        files.append(name)
        warnings.extend(read.warnings)
        given = _claude_layer(read, "user")
        warnings.extend(_restrict(given, merged.current, str(user_path), claude_verdict("user")))
        merged.apply(given)
    if not _same_file(project_path, user_path):  # cwd == $HOME: the user file is not a project's
        project = _read_file(project_path, "project")
        if project is not None:
            files.append(str(project_path))
            warnings.extend(_restrict(project, merged.current, str(user_path)))
            merged.apply(project)
    for name, source in (("settings.json", "project"), ("settings.local.json", "local")):
        path = workspace / ".claude" / name
        if source in sources and not _same_file(path, claude_user):
            claude(path, "project")
    for path in extra:
        layer = _read_file(Path(path).absolute(), "extra")
        if layer is None:
            raise ConfigError(f"{path}: no such file", file=str(path))
        files.append(str(Path(path).absolute()))
        merged.apply(layer)
    merged.apply(_env_layer(env))
    for pair in _override_layers(overrides):
        merged.apply(pair)
    if flags:
        merged.apply(_flag_layer(flags))
    config = merged.build()
    config._warnings = warnings
    config._files = files
    return config


def load_file(path: Path) -> Config:
    """One cox config file over the built-in defaults and nothing else (no other file, no
    environment): what ``cox policy test --config`` checks its cases against, so CI gives the
    same answer on every machine. A file that does not exist is a :class:`ConfigError`."""
    layer = _read_file(Path(path), "extra")
    if layer is None:
        raise ConfigError(f"{path}: no such file", file=str(path))
    merged = _Merged()
    merged.apply(layer)
    config = merged.build()
    config._files = [str(path)]
    return config


def _claude_layer(read: ClaudeFile, scope: str) -> _Layer:
    """A Claude settings file as a layer: its rules under ``permissions.*`` (each at its own
    line) and its ``defaultMode`` as ``permissions.mode``."""
    entries: dict[Keys, Any] = {}
    lines: dict[KeyPath, int | None] = {}
    for kind, rules in read.rules.items():
        path = ("permissions", kind)
        if rules:
            entries[path] = [rule for rule, _ in rules]
            lines[path] = read.lines.get(path)
            for index, (_, line) in enumerate(rules):
                lines[(*path, index)] = line
    if read.mode is not None:
        entries[("permissions", "mode")] = read.mode[0]
        lines[("permissions", "mode")] = read.mode[1]

    def where(key: KeyPath) -> str:
        return read.where(lines.get(key) or lines.get(key[:2]))

    return _Layer(f"claude-{scope}", entries, where, file=read.path,
                  names={("permissions", "mode"): "permissions.defaultMode"})


def flags_from_args(args: object) -> dict[str, Any]:
    """The config overrides an argparse namespace carries, by the flags of :data:`FLAG_NAMES`
    (``--max-turns`` is read from ``args.max_turns``); attributes that are missing or ``None``
    are left out, so only flags actually given override the files."""
    out: dict[str, Any] = {}
    for key, flag in FLAG_NAMES.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is not None:
            out[key] = value
    return out
