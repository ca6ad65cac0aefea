"""Skills as Claude Code has them: a folder holding a ``SKILL.md`` (front matter ``name``,
``description``, optional ``allowed-tools``) and whatever other files its instructions mention.

Where they are found, first definition of a name wins:

1. ``$COX_HOME/skills/<name>/SKILL.md`` (``~/.cox/skills``), then ``$CLAUDE_CONFIG_DIR/skills``
   (``~/.claude/skills``): the user's own;
2. ``.cox/skills/<name>/SKILL.md``, then ``.claude/skills/<name>/SKILL.md`` of the workspace.

The user's skills take precedence over a project's of the same name, as in Claude Code (Enterprise
> Personal > Project): a cloned repository must not be able to replace a skill the person wrote
and trusts under the name they call it by. cox's folder comes before Claude's at the same level,
as for agent files (``defs.py``). A shadowed skill is a warning naming both files.

What the model sees, and when: only the names and descriptions, in the ``skill`` tool's
description (:func:`listing`), computed once at session start. The body is read when the model
calls the tool or the person names the skill (``/name args``), never before, and read again
each time (an edited skill is used as it now is). ``$ARGUMENTS`` in a body becomes the
arguments; without one they follow the body, as in Claude Code.

Other fields read: ``disable-model-invocation: true`` (not listed, the tool refuses it; the person
may still name it) and ``user-invocable: false`` (only the model loads it). ``hooks`` is ignored
with a warning (it would run programs); the rest (``model``, ``context``, ``argument-hint`` …) is
ignored silently: a skill runs in the conversation it was loaded into, on its model.

A project's skill files are repository content, so hostile:

- its description reaches the model on every request: terminal controls and bidi marks are
  removed (``cox.policy.sanitize``), it is folded to one line (it cannot forge a new list entry or
  heading) and cut to :data:`DESCRIPTION_LIMIT`; the whole list is capped (:data:`LISTING_LIMIT`)
  and the model is told the descriptions are the files' words, not instructions;
- ``allowed-tools`` of a project's skill never grants (in Claude Code it pre-approves those
  tools): a cloned repository may not approve calls for the model, as its settings may not, so
  every call made while following one goes through the permission engine as any other; it only
  narrows (the model is told to use no other tool). The user's own skill's list is pre-approved
  for the rest of the turn that loads it (:func:`grants`), as in Claude Code: allow rules for that
  turn only, below every deny rule and the sandbox;
- a skill's name is letters, digits, ``-`` and ``_`` only: it is looked up among the skills
  found, never used as a path, so ``../`` cannot reach out of the skills folders;
- a project's skills folder, skill folder or ``SKILL.md`` that resolves outside the workspace (a
  symlink to ``~/.ssh/id_rsa``) is refused with the reason, at discovery and again when the body
  is read (checked on the file actually opened, so swapping in a symlink later does not help); a
  file a Read deny rule covers is neither listed nor read. The user's own folders may be
  symlinks (dotfile repositories): they are the person's choice.
- files are read the way settings files are (a regular file under a size cap, no FIFO or device).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox import lazyre
from cox.slim import dataclass

if TYPE_CHECKING:
    from .frontmatter import Value

__all__ = ["DESCRIPTION_LIMIT", "LISTING_LIMIT", "Skill", "SkillError", "Skills", "body", "grants", "listing",
           "load_skills", "named_grants", "render", "support_file", "user_named", "valid_name"]

FILE_LIMIT = 1024 * 1024
"""A SKILL.md larger than this is refused (no real one comes close)."""
BODY_LIMIT = 64 * 1024
"""Characters of a body sent, as for instruction files."""
DESCRIPTION_LIMIT = 1024
"""Characters of a description listed (Claude Code's own limit)."""
LISTING_LIMIT = 16 * 1024
"""Characters of the whole list; the skills past it are not listed (``cox ext list`` names them)."""
MAX_SKILLS = 200
"""Skill folders read per skills folder."""
HEAD_LIMIT = 64 * 1024
"""Bytes of a SKILL.md read when the session starts (its front matter is in them): a repository
of many large skill files must not slow every start."""

_NAME = lazyre.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class SkillError(Exception):
    """A skill cannot be loaded; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    """Sanitised, one line, capped: what the model is shown."""
    path: Path
    """The SKILL.md."""
    project: bool
    """Found in the workspace (repository content) rather than the user's folders."""
    allowed_tools: tuple[str, ...] = ()
    """As the file writes them (sanitised); a grant for the turn only in a user's skill (:func:`grants`)."""
    model_invocable: bool = True
    """False: ``disable-model-invocation: true`` — not listed, the tool refuses it; the person may name it."""
    user_invocable: bool = True
    """False: ``user-invocable: false`` — only the model loads it."""
    root: Path | None = None
    """A project skill's workspace: what its files must resolve inside."""

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def source(self) -> str:
        return f"{'project' if self.project else 'user'}: {self.path}"


@dataclass(frozen=True, slots=True)
class Skills:
    by_name: dict[str, Skill]
    """Precedence resolved (see the module docstring)."""
    warnings: tuple[str, ...]

    def listed(self) -> list[Skill]:
        """The skills the model may load, sorted by name."""
        return [s for _, s in sorted(self.by_name.items()) if s.model_invocable]


def load_skills(cwd: Path, home: Path, *, cox_home: Path | None = None, env: Mapping[str, str] | None = None,
                reads: Any = None) -> Skills:
    """Every skill in effect for a session in ``cwd`` of the user whose home is ``home``.
    ``reads``: the session's Read deny rules (a ``ReadGuard``); a SKILL.md they cover is left out.
    Never raises: a bad file is a warning naming it."""
    env = os.environ if env is None else env
    if cox_home is None:
        cox_home = Path(env["COX_HOME"]).expanduser() if env.get("COX_HOME") else home / ".cox"
    from cox.config.readfile import user_claude_dir

    claude = user_claude_dir(home, env)
    project = cwd.absolute()
    folders = [(cox_home / "skills", False), (claude / "skills", False),
               (project / ".cox" / "skills", True), (project / ".claude" / "skills", True)]
    user_folders = {os.path.realpath(f) for f, is_project in folders if not is_project}
    warnings: list[str] = []
    found: dict[str, Skill] = {}
    for folder, is_project in folders:
        if is_project and os.path.realpath(folder) in user_folders:
            continue  # the workspace is the home folder: these are the user's
        root = project if is_project else None
        for path in _skill_files(folder, root, warnings):
            skill = _parse(path, root, warnings)
            if skill is None:
                continue
            if reads is not None and (reads.refuses(str(path)) or reads.refuses(os.path.realpath(path))):
                warnings.append(f"{path}: a Read deny rule covers it; the skill is left out")
                continue
            first = found.get(skill.name)
            if first is None:
                found[skill.name] = skill
            elif is_project and not first.project:
                warnings.append(f"{path}: the project's skill {skill.name!r} is not used: your own {first.path} "
                                "has that name (your skills take precedence, as in Claude Code)")
            else:
                warnings.append(f"{path}: the skill {skill.name!r} is already defined by {first.path}, which is "
                                "used; rename one")
    return Skills(found, tuple(warnings))


def listing(skills: list[Skill], limit: int = LISTING_LIMIT) -> str:
    """The skills' names and descriptions, one line each, sorted by name, at most about ``limit``
    characters (the skills past it are named on one last line while room lasts); byte-stable for
    a given set of skills."""
    lines: list[str] = []
    size = 0
    ordered = sorted(skills, key=lambda s: s.name)
    for i, s in enumerate(ordered):
        line = f"- {s.name}: {s.description}"
        if size + len(line) + 1 > limit:
            left = ordered[i:]
            names: list[str] = []
            room = limit // 8
            for x in left:
                room -= len(x.name) + 2
                if room < 0:
                    break
                names.append(x.name)
            more = ", ".join(names) + (", …" if len(names) < len(left) else "")
            lines.append(f"- ({len(left)} more, not described to keep this list short: {more})")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def body(skill: Skill) -> str:
    """The SKILL.md's instructions as they are now, read with the discovery's guards. Raises
    :class:`SkillError`."""
    try:
        data = _read_confined(skill.path, skill.root)
    except FileNotFoundError:
        raise SkillError(f"the skill {skill.name!r} is gone: {skill.path} no longer exists") from None
    except OSError as exc:
        raise SkillError(f"the skill {skill.name!r} cannot be read: {skill.path} {exc.strerror or exc}") from None
    text, why = _text(data)
    if text is None:
        raise SkillError(f"the skill {skill.name!r} cannot be read: {skill.path} {why}")
    from .frontmatter import FrontMatterError, split

    try:
        _, content = split(text)
    except FrontMatterError as exc:
        raise SkillError(f"the skill {skill.name!r} cannot be read: {skill.path}:{exc.line}: {exc.reason}") from None
    from cox.policy.sanitize import sanitize

    return sanitize(content)[:BODY_LIMIT]


def support_file(skill: Skill, rel: str) -> tuple[Path, str]:
    """(the path, the text) of a file in the skill's folder that its instructions mention. The
    file actually opened must lie inside the folder (and a project skill's folder inside the
    workspace): ``../``, an absolute path or a symlink out is refused. Raises :class:`SkillError`."""
    if not rel.strip() or "\0" in rel or os.path.isabs(rel):
        raise SkillError(f"skill {skill.name!r}: 'file' is a path relative to the skill's folder {skill.folder}")
    folder = os.path.realpath(skill.folder)
    if skill.root is not None and not _inside(folder, skill.root):
        raise SkillError(f"skill {skill.name!r}: its folder now resolves to {folder}, outside the workspace")
    path = skill.folder / rel
    try:
        data = _read_confined(path, Path(folder), where="the skill's folder")
    except FileNotFoundError:
        raise SkillError(f"skill {skill.name!r}: there is no file {rel!r} in {skill.folder}") from None
    except OSError as exc:
        raise SkillError(f"skill {skill.name!r}: {rel!r} cannot be read: it {exc.strerror or exc}") from None
    text, why = _text(data)
    if text is None:
        raise SkillError(f"skill {skill.name!r}: {rel!r} {why}")
    from cox.policy.sanitize import sanitize

    return path, sanitize(text)


def render(skill: Skill, instructions: str, args: str = "") -> str:
    """What the model reads when a skill is loaded: where it lives, what it may use, the
    instructions (``$ARGUMENTS`` replaced by ``args``; without one, ``args`` follow them)."""
    how = "with `read`, or " if skill.project else ""
    head = [f"Skill {skill.name!r}, from {skill.path}. Its folder is {skill.folder}: the files these "
            f"instructions mention are there (paths are relative to it); read one {how}with the `skill` tool "
            f"({{\"skill\": \"{skill.name}\", \"file\": \"its path in the folder\"}})."]
    if skill.allowed_tools:
        head.append("While following it, use only these tools: " + ", ".join(skill.allowed_tools) + (
            ". (This grants nothing: every call is judged by the user's permission rules as usual.)" if not grants(skill)
            else ". (The user's own skill pre-approves them for this turn; other calls are judged as usual.)"))
    text = instructions
    if args and "$ARGUMENTS" in text:
        text = text.replace("$ARGUMENTS", args)
    elif args:
        text = f"{text}\n\nARGUMENTS: {args}"
    return "\n".join(head) + "\n\n" + text


def grants(skill: Skill) -> list[str] | None:
    """The allow rules a turn that loads ``skill`` gets (``UserTurn.allow``): the user's own skill's
    ``allowed-tools`` in cox's rule spelling; None for a project's skill (it never grants), for
    none listed, or for a list that is not all rules (said when the skill is loaded: it narrows)."""
    if skill.project or not skill.allowed_tools:
        return None
    from cox.commands.files import allowed_rules

    rules = allowed_rules(list(skill.allowed_tools))
    return list(rules) if isinstance(rules, tuple) and rules else None


def named_grants(line: str, skills: Skills | None) -> list[str] | None:
    """:func:`grants` of the skill ``/name args`` names (None: no skill, or it grants nothing)."""
    typed = re.match(r"/(\S+)", line.strip())
    skill = skills.by_name.get(typed.group(1)) if skills is not None and typed is not None else None
    return grants(skill) if skill is not None and skill.user_invocable else None


def user_named(line: str, skills: Skills | None) -> tuple[str | None, str | None]:
    """``/name args`` typed by the person: (the turn's text with the skill's instructions loaded,
    None), (None, why it cannot be) for a skill that cannot be loaded, or (None, None) when no
    skill has that name (the line is something else: a command, or plain text)."""
    typed = re.match(r"/(\S+)(?:\s+(.*))?\Z", line.strip(), re.S)
    if skills is None or typed is None:
        return None, None
    word, rest = typed.group(1), typed.group(2) or ""
    skill = skills.by_name.get(word) if _NAME.fullmatch(word) else None
    if skill is None:
        return None, None
    if not skill.user_invocable:
        return None, f"the skill {word!r} is for the model only (user-invocable: false in {skill.path})"
    try:
        instructions = body(skill)
    except SkillError as exc:
        return None, str(exc)
    args = rest.strip()
    return f"{line.strip()}\n\n(The user started this skill.) " + render(skill, instructions, args), None


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


# ------------------------------------------------------------------------------ discovery


def _skill_files(folder: Path, root: Path | None, warnings: list[str]) -> list[Path]:
    """``<folder>/<name>/SKILL.md`` for each skill folder, sorted; for a project (``root``), any
    of them resolving outside the workspace is refused with a warning."""
    try:
        if not folder.is_dir():
            return []
    except OSError:
        return []
    if root is not None and not _inside(os.path.realpath(folder), root):
        warnings.append(f"{folder}: a symlink out of the workspace ({os.path.realpath(folder)}); its skills are "
                        "not read")
        return []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        warnings.append(f"{folder}: cannot be listed ({exc.strerror}); its skills are skipped")
        return []
    out: list[Path] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path) / "SKILL.md"
        try:
            if not entry.is_dir() or not (path.exists() or path.is_symlink()):
                continue
        except OSError:
            continue
        if root is not None:
            real = os.path.realpath(path)
            if not _inside(real, root):
                warnings.append(f"{path}: refused: it resolves to {real}, outside the workspace (a repository's "
                                "skill may not point at other files)")
                continue
        if len(out) == MAX_SKILLS:
            warnings.append(f"{folder}: more than {MAX_SKILLS} skills; the rest are skipped")
            break
        out.append(path)
    return out


def _parse(path: Path, root: Path | None, warnings: list[str]) -> Skill | None:
    try:
        data = _read_confined(path, root, head=HEAD_LIMIT)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"{path}: cannot be read ({exc.strerror or exc}); the skill is skipped")
        return None
    text, why = _text(data)
    if text is None:
        warnings.append(f"{path}: {why}; the skill is skipped")
        return None
    from .frontmatter import FrontMatterError  # with the first skill found: most folders have none

    try:
        return _skill(path, text, root, warnings)
    except FrontMatterError as exc:
        warnings.append(f"{path}:{exc.line}: {exc.reason}; the skill is skipped")
        return None


def _skill(path: Path, text: str, root: Path | None, warnings: list[str]) -> Skill:
    from cox.policy.sanitize import sanitize

    from .frontmatter import Block, FrontMatterError, split

    fields, content = split(text)
    keys = {k.lower(): k for k in fields}

    def scalar(key: str) -> tuple[int, str | None]:
        line, value = fields.get(keys.get(key, key), (1, None))
        if isinstance(value, (list, Block)):
            raise FrontMatterError(line, f"{key!r} must be a single value")
        return line, value

    line, name = scalar("name")
    name = (name or path.parent.name).strip()
    if not _NAME.fullmatch(name):
        raise FrontMatterError(line, f"the skill name {sanitize(name)[:64]!r} is not letters, digits, '-' and '_' "
                                     "(at most 64)")
    _, description = scalar("description")
    if not description or not description.strip():  # Claude Code: the first paragraph stands in
        description = next((p for p in content.split("\n\n") if p.strip() and not p.lstrip().startswith("#")), "")
    description = " ".join(sanitize(description).split())
    if not description:
        raise FrontMatterError(line, "no 'description' (it tells the model when to use the skill)")
    if len(description) > DESCRIPTION_LIMIT:
        warnings.append(f"{path}: the description is cut to {DESCRIPTION_LIMIT} characters")
        description = description[: DESCRIPTION_LIMIT - 1] + "…"
    tools = _tool_list(fields.get(keys.get("allowed-tools", "allowed-tools"), (1, None)))
    if "hooks" in keys:
        warnings.append(f"{path}:{fields[keys['hooks']][0]}: cox ignores 'hooks' in skills (hooks come only from "
                        "settings files: `cox hooks list`)")
    return Skill(name, description, path, root is not None, tools,
                 model_invocable=not _true(scalar("disable-model-invocation")[1]),
                 user_invocable=_true(scalar("user-invocable")[1], default=True), root=root)


def _tool_list(field: tuple[int, Value]) -> tuple[str, ...]:
    from cox.policy.sanitize import sanitize

    from .defs import _split_commas
    from .frontmatter import Block, FrontMatterError

    line, value = field
    if value is None:
        return ()
    if isinstance(value, Block):
        raise FrontMatterError(line, "allowed-tools is a comma-separated line or a list of tool names")
    entries = value if isinstance(value, list) else _split_commas(value)
    return tuple(dict.fromkeys(" ".join(sanitize(e).split())[:80] for e in entries if e.strip()))


def _true(value: str | None, default: bool = False) -> bool:
    if value is None:
        return default
    return value.strip().lower() in ("true", "yes", "on", "1")


def _text(data: bytes) -> tuple[str | None, str]:
    if b"\0" in data:
        return None, "is a binary file, not a SKILL.md"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"is not UTF-8 text (line {line})"


def _read_confined(path: Path, root: Path | None, head: int | None = None, where: str = "the workspace") -> bytes:
    """The bytes of a regular file under :data:`FILE_LIMIT` (only its first ``head`` bytes, cut
    at a line's end, when given). With ``root``, the file actually opened must lie inside it
    (checked on the open descriptor: a symlink swapped in after discovery is refused too)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if root is not None:
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                real = os.path.realpath(path)
            if not _inside(real, root):
                raise OSError(errno.EACCES, f"resolves to {real}, outside {where} (a skill may not point at other "
                                            "files)")
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "is not a regular file")
        if st.st_size > FILE_LIMIT:
            raise OSError(errno.EFBIG, f"is larger than {FILE_LIMIT // 1024} KiB")
        os.set_blocking(fd, True)
        want = FILE_LIMIT + 1 if head is None else head
        chunks: list[bytes] = []
        size = 0
        while size < want and (chunk := os.read(fd, min(65536, want - size))):
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        if head is None and size > FILE_LIMIT:  # it grew while being read
            raise OSError(errno.EFBIG, f"is larger than {FILE_LIMIT // 1024} KiB")
        if head is not None and size >= head:
            data = data[: data.rfind(b"\n") + 1]
        return data
    finally:
        os.close(fd)


def _inside(real: str, root: Path) -> bool:
    top = os.path.realpath(root)
    return real == top or real.startswith(top.rstrip("/") + "/")
