"""Where the OAuth tokens of HTTP MCP servers live: the OS keyring, else a private file.

One record per server, a JSON object (the SDK's token, its absolute expiry, the registered
client, the discovered authorization-server metadata and the server URL it was issued for):

- in the OS keyring (the ``keyring`` package: macOS Keychain, Windows Credential Locker, the
  Secret Service on Linux) under the service ``cox/mcp/<name>``, user name ``oauth``;
- when no keyring backend is usable (a headless Linux box, CI), in
  ``$COX_HOME/mcp-auth/<name>.json``, mode 0600 in a 0700 folder.

``keyring`` is imported on first use only: a run with no HTTP server never pays for it. A
keyring that fails on a call (locked, no D-Bus) is logged and the file takes over; ``load``
looks in both places, so a record is found wherever it was filed. A record is only used for the
URL it was issued for: a server whose ``url`` changed under the same name gets no token (it
would otherwise be sent to another host).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from cox.atomic import write_atomic

__all__ = ["KEYRING_USER", "TokenStore", "auth_status", "keyring_service"]

log = logging.getLogger(__name__)

KEYRING_USER = "oauth"
AUTH_DIR = "mcp-auth"


def keyring_service(name: str) -> str:
    """The keyring service a server's record is filed under."""
    return f"cox/mcp/{name}"


def _usable_keyring() -> Any:
    """The ``keyring`` module when a real backend is configured, else ``None``."""
    try:
        import keyring
        from keyring.backends import fail
    except Exception:  # noqa: BLE001 - not installed, or broken: the file fallback serves
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # noqa: BLE001
        return None
    if isinstance(backend, fail.Keyring) or type(backend).__module__ == "keyring.backends.null":
        return None  # "no recommended backend": keyring's own way of saying there is none
    return keyring


class TokenStore:
    """Load, save and forget one record per server (see the module's docstring)."""

    def __init__(self, home: Path | None = None) -> None:
        if home is None:
            from cox.actors.store.layout import cox_home

            home = cox_home()
        self.home = Path(home)

    def _file(self, name: str) -> Path:
        return self.home / AUTH_DIR / f"{name}.json"

    # -- reading --

    def load(self, name: str, url: str | None = None) -> dict[str, Any] | None:
        """The record of server ``name`` (issued for ``url`` when given), or ``None``."""
        record = self._load_keyring(name)
        if record is None:
            record = self._load_file(name)
        if record is None:
            return None
        if url is not None and record.get("server_url") not in (None, url):
            log.warning("mcp server %s: the stored login was for %s, not %s; ignored", name,
                        record.get("server_url"), url)
            return None
        return record

    def where(self, name: str) -> str | None:
        """``keyring``, ``file`` or ``None``: where the record of ``name`` is filed."""
        if self._load_keyring(name) is not None:
            return "keyring"
        return "file" if self._file(name).exists() else None

    def _load_keyring(self, name: str) -> dict[str, Any] | None:
        keyring = _usable_keyring()
        if keyring is None:
            return None
        try:
            text = keyring.get_password(keyring_service(name), KEYRING_USER)
        except Exception as err:  # noqa: BLE001 - a locked or broken keyring: try the file
            log.warning("keyring read of %s failed: %s", keyring_service(name), err)
            return None
        return _parse(text, keyring_service(name))

    def _load_file(self, name: str) -> dict[str, Any] | None:
        try:
            text = self._file(name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as err:
            log.warning("%s: not readable (%s)", self._file(name), err)
            return None
        return _parse(text, str(self._file(name)))

    # -- writing --

    def save(self, name: str, record: dict[str, Any]) -> str:
        """File ``record`` for ``name``; returns where it went (``keyring`` or ``file``)."""
        text = json.dumps(record, sort_keys=True)
        keyring = _usable_keyring()
        if keyring is not None:
            try:
                keyring.set_password(keyring_service(name), KEYRING_USER, text)
                if keyring.get_password(keyring_service(name), KEYRING_USER) == text:
                    with contextlib.suppress(FileNotFoundError, OSError):
                        self._file(name).unlink()  # an older copy must not shadow the keyring's
                    return "keyring"
                log.warning("keyring did not keep %s; using the file instead", keyring_service(name))
            except Exception as err:  # noqa: BLE001
                log.warning("keyring write of %s failed (%s); using the file instead", keyring_service(name), err)
        self._write_file(name, text)
        return "file"

    def _write_file(self, name: str, text: str) -> None:
        folder = self.home / AUTH_DIR
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
        write_atomic(self._file(name), text.encode("utf-8"), mode=0o600)

    def delete(self, name: str) -> bool:
        """Forget ``name``'s record wherever it is; ``True`` if there was one."""
        found = False
        keyring = _usable_keyring()
        if keyring is not None:
            try:
                if keyring.get_password(keyring_service(name), KEYRING_USER) is not None:
                    keyring.delete_password(keyring_service(name), KEYRING_USER)
                    found = True
            except Exception as err:  # noqa: BLE001
                log.warning("keyring delete of %s failed: %s", keyring_service(name), err)
        with contextlib.suppress(FileNotFoundError):
            self._file(name).unlink()
            found = True
        return found


def _parse(text: str | None, where: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        log.warning("%s: not a cox login record; ignored", where)
        return None
    return record if isinstance(record, dict) else None


def auth_status(record: dict[str, Any] | None, now: float | None = None) -> str:
    """What ``cox doctor`` prints for a record: ``none``, ``expired`` or ``ok (expires in 3h)``.

    A token past its expiry that carries a refresh token is still ``expired`` here (it is
    refreshed on the next connect); ``ok`` without a time means the token has no expiry."""
    tokens = (record or {}).get("tokens")
    if not isinstance(tokens, dict) or not tokens.get("access_token"):
        return "none"
    expires_at = record.get("expires_at") if record else None
    if expires_at is None:
        return "ok"
    left = float(expires_at) - (time.time() if now is None else now)
    if left <= 0:
        return "expired"
    return f"ok (expires in {_human(left)})"


def _human(seconds: float) -> str:
    if seconds >= 86400:
        return f"{round(seconds / 86400)}d"
    if seconds >= 3600:
        return f"{round(seconds / 3600)}h"
    if seconds >= 60:
        return f"{round(seconds / 60)}m"
    return f"{int(seconds)}s"
