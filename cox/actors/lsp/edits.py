"""A rename's ``WorkspaceEdit``: judged whole, then applied all or nothing.

The server is a third-party program reading a repository cox does not trust, so its edit is
checked before any byte moves (:func:`plan`), and refused whole — with the reason — if it:

- creates, renames or deletes a file (``documentChanges`` may only hold text edits);
- names a file that is not a local file inside the writable roots (``confine``), or one the
  file tools never write (``.git``, ``.cox``, cox's home: ``check_writable``);
- carries a document version other than the one cox synced (or any version for a file cox never
  opened: the server read that one from disk); an edit with no version (``null``, as pyright
  sends) is checked against the disk instead: a file that changed since is refused before writing;
- holds an edit outside its file, or two edits that overlap.

Otherwise every file's new text is computed first; :func:`apply` stages each new text in a
sibling temp file and only then replaces the files, putting back the ones already replaced if a
replace fails. Nothing here asks anyone: the tool judges the set with the session in between.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cox.slim import dataclass

from .server import path_of, to_utf16

__all__ = ["EditRefused", "FileChange", "apply", "plan"]


class EditRefused(ValueError):
    """The WorkspaceEdit is refused whole; the message says why (nothing was written)."""


@dataclass(frozen=True)
class FileChange:
    path: Path
    before: bytes
    after: bytes
    edits: int


def _offset(lines: list[str], starts: list[int], pos: Any, where: str) -> int:
    if not isinstance(pos, dict):
        raise EditRefused(f"{where}: an edit has no valid position")
    line, units = pos.get("line"), pos.get("character")
    if not isinstance(line, int) or not isinstance(units, int) or line < 0 or units < 0:
        raise EditRefused(f"{where}: an edit has no valid position")
    if line > len(lines) - 1:
        raise EditRefused(f"{where}: an edit reaches line {line + 1}, past the end of the file "
                          f"({len(lines)} lines)")
    text = lines[line]
    if units > to_utf16(text, len(text)):
        raise EditRefused(f"{where}: an edit reaches column {units + 1} of line {line + 1}, past its end")
    # back from UTF-16 units to characters
    count, col = 0, 0
    for ch in text:
        if count >= units:
            break
        count += 2 if ord(ch) > 0xFFFF else 1
        col += 1
    if count != units:
        raise EditRefused(f"{where}: an edit splits a character on line {line + 1}")
    return starts[line] + col


def _apply_text(text: str, edits: list[Any], where: str) -> str:
    lines = text.split("\n")
    starts, at = [], 0
    for ln in lines:
        starts.append(at)
        at += len(ln) + 1
    spans: list[tuple[int, int, int, str]] = []
    for i, e in enumerate(edits):
        if not isinstance(e, dict) or not isinstance(e.get("range"), dict) or not isinstance(e.get("newText"), str):
            raise EditRefused(f"{where}: an edit is not a text edit")
        a = _offset(lines, starts, e["range"].get("start"), where)
        b = _offset(lines, starts, e["range"].get("end"), where)
        if b < a:
            raise EditRefused(f"{where}: an edit ends before it starts")
        spans.append((a, b, i, e["newText"]))
    spans.sort()
    for (a1, b1, _, _), (a2, _, _, _) in zip(spans, spans[1:], strict=False):
        if a2 < b1:
            raise EditRefused(f"{where}: two edits overlap (at characters {a1}–{b1} and {a2})")
    out, last = [], 0
    for a, b, _, new in spans:
        out.append(text[last:a])
        out.append(new)
        last = b
    out.append(text[last:])
    return "".join(out)


def plan(edit: Any, *, synced: Callable[[str], int | None], writable: Callable[[Path], Path]) -> list[FileChange]:
    """The changes ``edit`` (a WorkspaceEdit as JSON) makes, or :class:`EditRefused`.

    ``synced(uri)``: the version cox synced for that document (None: never opened).
    ``writable(path)``: the confined path, or raises (any exception refuses the edit)."""
    if not isinstance(edit, dict):
        raise EditRefused("the server's answer is not a workspace edit")
    from lsprotocol import types as t

    from .wire import into

    try:
        typed = into(edit, t.WorkspaceEdit)
    except ValueError as exc:
        raise EditRefused(str(exc)) from None
    by_uri: dict[str, list[Any]] = {}
    if typed.document_changes is not None:
        raw_changes = edit.get("documentChanges") or []
        for typed_one, raw in zip(typed.document_changes, raw_changes, strict=False):
            if not isinstance(typed_one, t.TextDocumentEdit):
                kind = raw.get("kind") if isinstance(raw, dict) else "?"
                raise EditRefused(f"the rename would {kind} a file ({raw.get('uri', raw.get('oldUri', '?'))}); "
                                  "rename_symbol only changes text in existing files")
            uri = typed_one.text_document.uri
            version = typed_one.text_document.version
            ours = synced(uri)
            if ours is None and version is not None:
                raise EditRefused(f"{uri}: the edit carries version {version}, but cox never opened that file "
                                  "with the server")
            if ours is not None and version is not None and version != ours:
                raise EditRefused(f"{uri}: the edit is for version {version}, not the text cox synced "
                                  f"(version {ours}); the file changed, try again")
            by_uri.setdefault(uri, []).extend(raw.get("edits") or [])
    elif typed.changes is not None:
        for uri, edits in (edit.get("changes") or {}).items():
            by_uri.setdefault(uri, []).extend(edits or [])
    out: list[FileChange] = []
    for uri, edits in by_uri.items():
        local = path_of(uri)
        if local is None:
            raise EditRefused(f"{uri} is not a local file")
        try:
            path = writable(local)
        except Exception as exc:
            raise EditRefused(f"{local}: {exc}") from None
        if not path.is_file():
            raise EditRefused(f"{path} is not an existing file; rename_symbol only changes text in existing files")
        from cox.atomic import read_file

        try:
            before = read_file(path)
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            raise EditRefused(f"{path} is not UTF-8 text") from None
        except OSError as exc:
            raise EditRefused(f"{path}: {exc}") from None
        after = _apply_text(text, edits, str(path)).encode("utf-8")
        if after != before:
            out.append(FileChange(path, before, after, len(edits)))
    if len({c.path for c in out}) != len(out):
        raise EditRefused("the edit names one file under two URIs")
    return out


def apply(changes: list[FileChange]) -> None:
    """Stage every new text beside its file, then replace the files; a failed replace puts back
    the ones already replaced. Raises OSError (after the roll-back) when it could not finish."""
    import stat

    from cox.atomic import Folder

    staged: list[tuple[FileChange, str]] = []
    try:
        for change in changes:
            with Folder(change.path.parent, follow=False) as folder:
                st = folder.entry(change.path.name)
                mode = stat.S_IMODE(st.st_mode) if st is not None else None
                staged.append((change, folder.temp(change.path.name, change.after, mode=mode, suffix=".cox-tmp")))
    except BaseException:
        _discard(staged)
        raise
    done: list[FileChange] = []
    try:
        for change, tmp in staged:
            with Folder(change.path.parent, follow=False) as folder:
                folder.replace(tmp, change.path.name)
            done.append(change)
    except BaseException:
        from cox.atomic import write_atomic

        for change in reversed(done):
            try:
                write_atomic(change.path, change.before, keep_mode=True, follow=False, suffix=".cox-tmp")
            except OSError:
                pass
        _discard([(c, t) for c, t in staged if c not in done])
        raise


def _discard(staged: list[tuple[FileChange, str]]) -> None:
    for change, tmp in staged:
        try:
            os.unlink(change.path.parent / tmp)
        except OSError:
            pass
