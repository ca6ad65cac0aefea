"""One language server of a session: its process, the documents cox synced to it, its pushed
diagnostics, and the typed requests the LSP tools make (lsprotocol's types on the wire).

:class:`LanguageServer` is thread-safe: tool calls of one session reach it from their own
threads, and a wait for diagnostics never holds the lock. It is owned by an
:class:`LspServerActor` (``pool.py`` starts one per language under the ``lsp`` supervisor),
which ends its process group when the session ends or the actor stops, whatever way it stops.

Positions: the model counts 1-based lines and characters; the wire counts 0-based lines and
UTF-16 code units (the LSP default, which every server speaks). :func:`to_utf16` and
:func:`from_utf16` convert with the line's text.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cox.supervisors import CoxActor

from .rpc import RpcClient, RpcClosed
from .settle import Settle

__all__ = ["LanguageServer", "LspServerActor", "from_utf16", "to_utf16", "uri_of", "path_of"]

INIT_TIMEOUT_S = 60.0


def uri_of(path: Path) -> str:
    return path.absolute().as_uri()


def path_of(uri: str) -> Path | None:
    """The local path a ``file:`` URI names, or None for any other URI."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parts.path))


def to_utf16(line: str, col: int) -> int:
    """The UTF-16 offset of the 0-based character ``col`` of ``line``."""
    return len(line[:col].encode("utf-16-le")) // 2


def from_utf16(line: str, units: int) -> int:
    """The 0-based character index at UTF-16 offset ``units`` of ``line``."""
    count = 0
    for i, ch in enumerate(line):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


class LanguageServer:
    """A running server (``argv`` already wrapped in the sandbox) and what cox told it."""

    def __init__(self, language: str, argv: list[str], *, env: dict[str, str], root: Path,
                 quiet_s: float, stderr: Any = -3) -> None:
        self.language = language
        self.root = root
        self.quiet_s = quiet_s
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self.settle = Settle()
        self.docs: dict[str, tuple[int, str, float]] = {}  # uri -> (version, text, synced at)
        self.client = RpcClient(argv, env=env, cwd=str(root), on_notify=self._notified, on_request=self._serve,
                                stderr=stderr)
        self.capabilities: dict[str, Any] = {}

    # -- life --

    def initialize(self, timeout: float = INIT_TIMEOUT_S) -> None:
        from lsprotocol import types as t

        from . import wire

        params = t.InitializeParams(
            process_id=None, root_uri=uri_of(self.root),
            workspace_folders=[t.WorkspaceFolder(uri=uri_of(self.root), name=self.root.name or "root")],
            capabilities=t.ClientCapabilities(
                general=t.GeneralClientCapabilities(position_encodings=[t.PositionEncodingKind.Utf16]),
                window=t.WindowClientCapabilities(work_done_progress=True),
                workspace=t.WorkspaceClientCapabilities(
                    configuration=True, workspace_folders=True,
                    workspace_edit=t.WorkspaceEditClientCapabilities(document_changes=True)),
                text_document=t.TextDocumentClientCapabilities(
                    synchronization=t.TextDocumentSyncClientCapabilities(),
                    publish_diagnostics=t.PublishDiagnosticsClientCapabilities(version_support=True),
                    definition=t.DefinitionClientCapabilities(link_support=False),
                    references=t.ReferenceClientCapabilities(),
                    rename=t.RenameClientCapabilities(prepare_support=True),
                    diagnostic=t.DiagnosticClientCapabilities()),
            ))
        result = self.client.request("initialize", wire.out(params), timeout)
        self.capabilities = dict((result or {}).get("capabilities") or {})
        self.client.notify("initialized", {})

    def alive(self) -> bool:
        return self.client.alive()

    @property
    def pid(self) -> int:
        return self.client.pid

    def close(self) -> None:
        if self.client.alive():
            try:
                self.client.request("shutdown", None, 0.5)
                self.client.notify("exit", None)
            except Exception:
                pass
        self.client.close()
        with self._cond:
            self._cond.notify_all()

    # -- what the server sends --

    def _notified(self, method: str, params: Any) -> None:
        now = time.monotonic()
        if method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            uri = params.get("uri")
            diagnostics = params.get("diagnostics")
            version = params.get("version")
            # Only files cox opened: a server pushing reports for countless other URIs must not
            # make cox keep them all.
            if isinstance(uri, str) and isinstance(diagnostics, list) and uri in self.docs:
                with self._cond:
                    self.settle.pushed(uri, diagnostics, version if isinstance(version, int) else None, now)
                    self._cond.notify_all()
        elif method == "$/progress" and isinstance(params, dict):
            value = params.get("value")
            kind = value.get("kind") if isinstance(value, dict) else None
            if isinstance(kind, str):
                with self._cond:
                    self.settle.progress(params.get("token"), kind, now)
                    self._cond.notify_all()

    def _serve(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, dict) else None
            return [None] * (len(items) if isinstance(items, list) else 0)
        if method == "workspace/workspaceFolders":
            return [{"uri": uri_of(self.root), "name": self.root.name or "root"}]
        if method in ("window/workDoneProgress/create", "client/registerCapability",
                      "client/unregisterCapability", "window/showMessageRequest"):
            return None
        if method == "workspace/applyEdit":  # cox applies edits itself, after judging them
            return {"applied": False, "failureReason": "cox applies workspace edits only through rename_symbol"}
        raise LookupError(f"cox does not serve {method}")

    # -- documents --

    def sync(self, path: Path, language_id: str) -> tuple[str, int, float]:
        """Tell the server the file's text on disk: open it, or send the new full text when it
        changed since. Returns (uri, version, when it was synced)."""
        uri = uri_of(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        with self._lock:
            known = self.docs.get(uri)
            if known is not None and known[1] == text:
                return uri, known[0], known[2]
            now = time.monotonic()
            version = 1 if known is None else known[0] + 1
            self.docs[uri] = (version, text, now)  # before the server can answer it
            if known is None:
                self.client.notify("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": language_id, "version": version, "text": text}})
            else:
                self.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                              "contentChanges": [{"text": text}]})
            return uri, version, now

    def resync_changed(self, language_id: str) -> None:
        """Re-sync every file cox opened whose disk text changed (before a rename)."""
        for uri in list(self.docs):
            path = path_of(uri)
            if path is not None and path.is_file():
                self.sync(path, language_id)

    def synced_version(self, uri: str) -> int | None:
        with self._lock:
            known = self.docs.get(uri)
        return None if known is None else known[0]

    # -- diagnostics --

    def pulls(self) -> bool:
        return bool(self.capabilities.get("diagnosticProvider"))

    def wake(self) -> None:
        """Wake every wait for diagnostics (a cancelled call looks at its token again)."""
        with self._cond:
            self._cond.notify_all()

    def diagnostics(self, path: Path, language_id: str, deadline: float,
                    cancelled: Callable[[], bool] = lambda: False) -> tuple[list[Any], bool]:
        """The file's diagnostics (raw JSON) and whether they are complete by ``deadline``
        (or until ``cancelled()``; :meth:`wake` makes a wait look again)."""
        uri, version, synced_at = self.sync(path, language_id)
        if self.pulls():
            left = deadline - time.monotonic()
            try:
                report = self.client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, left)
            except TimeoutError:
                return [], False
            items = report.get("items") if isinstance(report, dict) else None
            return (list(items) if isinstance(items, list) else []), True
        return self.pushed(uri, version, synced_at, deadline, cancelled)

    def pushed(self, uri: str, version: int, synced_at: float, deadline: float,
               cancelled: Callable[[], bool] = lambda: False) -> tuple[list[Any], bool]:
        with self._cond:
            while True:
                now = time.monotonic()
                if self.settle.settled(uri, synced_at, version, now, self.quiet_s):
                    return list(self.settle.reports[uri].diagnostics), True
                if now >= deadline or not self.client.alive() or cancelled():
                    report = self.settle.reports.get(uri)
                    if not self.client.alive():
                        raise RpcClosed("the language server exited before its diagnostics settled")
                    fresh = report is not None and (report.version is None or report.version >= version)
                    return (list(report.diagnostics) if report and fresh else []), False
                self._cond.wait(min(deadline - now, self.settle.wait_left(uri, now, self.quiet_s)))

    def last_report(self, uri: str) -> list[Any] | None:
        with self._cond:
            report = self.settle.reports.get(uri)
            return None if report is None else list(report.diagnostics)

    # -- navigation and rename --

    def position(self, uri: str, line: int, col: int) -> dict[str, Any]:
        """The wire position of 1-based ``line``/``col`` (characters) in the synced text."""
        with self._lock:
            text = self.docs[uri][1]
        lines = text.split("\n")
        row = min(max(line - 1, 0), max(len(lines) - 1, 0))
        src = lines[row] if lines else ""
        return {"line": row, "character": to_utf16(src, max(col - 1, 0))}

    def request(self, method: str, params: Any, timeout: float) -> Any:
        return self.client.request(method, params, timeout)


class LspServerActor(CoxActor):
    """Owns one :class:`LanguageServer` under the ``lsp`` supervisor. The server's process is
    spawned from this actor's own thread, which lives as long as the server should: bubblewrap's
    ``--die-with-parent`` ends the sandboxed server when the thread that forked it ends, so a
    server forked by a tool call's thread would die with that call. Stopping the actor (the
    session ended, or the tree shut down) ends the server's process group, whatever way it stops."""

    def __init__(self, launch: Any) -> None:
        super().__init__()
        self.launch = launch
        self.server: LanguageServer | None = None
        self.error: BaseException | None = None

    def on_start(self) -> None:
        try:
            self.server = self.launch()
        except Exception as exc:  # told to whoever started it (``"get"``), not a crash of the tree
            self.error = exc

    def on_stop(self) -> None:
        if self.server is not None:
            self.server.close()

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        if self.server is not None:
            self.server.close()
        super().on_failure(exception_type, exception_value, traceback)

    def on_receive(self, message: Any) -> Any:
        if message == "get":
            return self.server, self.error
        return None
