"""A JSON-RPC 2.0 client over a language server's stdio (the LSP base protocol's
``Content-Length`` framing), on :mod:`lsprotocol`'s types.

Why a small client of cox's own rather than pygls: cox needs the exact process (spawned inside
the sandbox with the child environment allowlist, in a new session so ``killpg`` ends it and
whatever it started), bounded waits on every request, and a reader that can never block the
caller. The message *types* are lsprotocol's (``converter`` structures the results), not
hand-written ones.

One reader thread per server parses frames: a response settles its request's future; a
notification goes to ``on_notify``; a request from the server (``workspace/configuration``,
``window/workDoneProgress/create``, ``client/registerCapability``…) is answered at once by
``on_request``. A frame over :data:`MAX_FRAME` or one that is not JSON ends the connection:
a hostile server cannot make cox buffer without bound.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, Any

__all__ = ["MAX_FRAME", "RpcClient", "RpcClosed", "RpcError", "RpcTimeout"]

MAX_FRAME = 32 * 1024 * 1024
_KILL_GRACE_S = 0.5


class RpcClosed(RuntimeError):
    """The server's process ended (or its output broke the protocol) while a request waited."""


class RpcTimeout(TimeoutError):
    """The server did not answer within the request's bound."""


class RpcError(RuntimeError):
    """The server answered a request with an error object."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code


Notify = Callable[[str, Any], None]
Serve = Callable[[str, Any], Any]


class RpcClient:
    """One server process and the JSON-RPC conversation with it. Thread-safe."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: str, on_notify: Notify, on_request: Serve,
                 stderr: IO[bytes] | int = subprocess.DEVNULL) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                     cwd=cwd, start_new_session=True)
        self._on_notify = on_notify
        self._on_request = on_request
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._next = 0
        self._pending: dict[int, concurrent.futures.Future[Any]] = {}
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read, name=f"lsp-rpc-{self.proc.pid}", daemon=True)
        self.reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return not self.closed.is_set() and self.proc.poll() is None

    # -- sending --

    def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and wait at most ``timeout`` seconds for its result (raw JSON)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self.closed.is_set():
                raise RpcClosed("the language server is not running")
            self._next += 1
            ident = self._next
            self._pending[ident] = future
        try:
            self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            return future.result(timeout=max(0.0, timeout))
        except concurrent.futures.TimeoutError:
            with contextlib.suppress(RpcClosed):
                self.notify("$/cancelRequest", {"id": ident})
            raise RpcTimeout(f"{method}: no answer within {timeout:.1f} s") from None
        finally:
            with self._lock:
                self._pending.pop(ident, None)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode()
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._write_lock:
            stdin = self.proc.stdin
            if stdin is None or self.closed.is_set():
                raise RpcClosed("the language server is not running")
            try:
                stdin.write(frame)
                stdin.flush()
            except (OSError, ValueError) as exc:
                raise RpcClosed(f"the language server is not running ({exc})") from None

    # -- receiving --

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                message = _frame(stdout)
                if message is None:
                    return
                self._dispatch(message)
        except (OSError, ValueError):
            return
        finally:
            self.closed.set()
            with self._lock:
                pending = list(self._pending.values())
            for future in pending:
                if not future.done():
                    future.set_exception(RpcClosed("the language server exited before it answered"))

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if isinstance(method, str) and "id" in message:  # a request from the server
            try:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": self._on_request(method, message.get("params"))}
            except Exception as exc:
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": str(exc)}}
            with contextlib.suppress(RpcClosed):
                self._send(reply)
            return
        if isinstance(method, str):
            with contextlib.suppress(Exception):  # a handler bug must not end the reader
                self._on_notify(method, message.get("params"))
            return
        ident = message.get("id")
        with self._lock:
            future = self._pending.get(ident) if isinstance(ident, int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(RpcError(int(error.get("code", 0) or 0), str(error.get("message", ""))[:500]))
        else:
            future.set_result(message.get("result"))

    # -- ending --

    def close(self) -> None:
        """End the server and everything below it: TERM to its group, a short grace, then KILL
        to the group and to every descendant (a sandboxed server's processes live in a session
        of their own, which the group signal does not reach); reap it, and wait (bounded) until
        none of them is left. Idempotent."""
        with self._lock:
            self.closed.set()
        tree = _descendants(self.proc.pid)
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        _killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _killpg(self.proc.pid, signal.SIGKILL)  # whatever the server started in its group, too
        for pid in tree | _descendants(self.proc.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5.0)
        deadline = time.monotonic() + 5.0
        while any(_running(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.01)
        with contextlib.suppress(Exception):
            assert self.proc.stdout is not None
            self.proc.stdout.close()


def _killpg(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _parents() -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    out[int(entry)] = int(f.read().rpartition(b")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (not ``pid`` itself); empty where there is no /proc."""
    try:
        parents = _parents()
    except OSError:
        return set()
    found: set[int] = set()
    todo = [pid]
    while todo:
        here = todo.pop()
        for child, parent in parents.items():
            if parent == here and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is still a live process (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _frame(stream: IO[bytes]) -> Any:
    """One message, or None at the end of the stream. Raises ValueError for a broken frame."""
    length: int | None = None
    while True:
        line = stream.readline(8192)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is None:
                continue
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
            if not 0 <= length <= MAX_FRAME:
                raise ValueError(f"a frame of {length} bytes is over the limit")
    body = stream.read(length)
    if len(body) < length:
        return None
    return json.loads(body)
