"""A loopback OAuth 2.1 authorization server for cox's tests, run in the test's own process.

It speaks what the mcp SDK's client expects: RFC 8414 metadata at
``/.well-known/oauth-authorization-server``, RFC 7591 dynamic registration at ``/register``,
``/authorize`` (authorization code with PKCE S256, answered with a 302 to the registered loopback
redirect URI), ``/token`` (``authorization_code`` with the PKCE verifier checked, and
``refresh_token`` with rotation), RFC 7662 ``/introspect``, which the protected MCP server
(``httpserver.py``) asks about every bearer token, and RFC 7009 ``/revoke``.

Knobs for the failure tests: ``token_error`` (``/token`` answers 400 invalid_grant),
``deny`` (``/authorize`` redirects with ``error=access_denied``), ``expires_in`` (the lifetime of
new access tokens), :meth:`expire_access_tokens` (every issued access token stops being active),
:meth:`revoke_server_side` (tokens revoked by the server's side while cox still holds them valid),
``revoke_status`` (what ``/revoke`` answers). ``grants`` lists every grant the token endpoint
served, in order; ``revoked`` every ``(token_type_hint, token, client_id)`` ``/revoke`` got.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


class AuthServer:
    def __init__(self) -> None:
        self.expires_in = 3 * 3600
        self.token_error = False
        self.deny = False
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.grants: list[str] = []
        self.requests: list[str] = []
        self.revoked: list[tuple[str, str, str]] = []
        self.revoke_status = 200
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner._get(self)

            def do_POST(self) -> None:
                owner._post(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="test-authserver", daemon=True)

    def __enter__(self) -> AuthServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        if self._thread.is_alive():
            self.httpd.shutdown()
            self._thread.join(5)
        self.httpd.server_close()

    # -- knobs --

    def expire_access_tokens(self) -> None:
        with self._lock:
            for token in self.access.values():
                token["exp"] = int(time.time()) - 1

    def revoke_server_side(self, *, refresh: bool = False) -> None:
        """Revoke every access token (and with ``refresh`` every refresh token too), as an
        administrator or a rotation would: cox's copy has not expired by its own clock."""
        with self._lock:
            self.access.clear()
            if refresh:
                self.refresh.clear()

    def active(self, token: str) -> bool:
        with self._lock:
            found = self.access.get(token)
            return (found is not None and found["exp"] > time.time()) or token in self.refresh

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "registration_endpoint": f"{self.url}/register",
            "introspection_endpoint": f"{self.url}/introspect",
            "revocation_endpoint": f"{self.url}/revoke",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["mcp"],
        }

    # -- the endpoints --

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        self.requests.append(f"GET {url.path}")
        if url.path == "/.well-known/oauth-authorization-server":
            _json(h, 200, self.metadata())
        elif url.path == "/authorize":
            self._authorize(h, {k: v[0] for k, v in parse_qs(url.query).items()})
        else:
            _json(h, 404, {"error": "not_found"})

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        self.requests.append(f"POST {url.path}")
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        if url.path == "/register":
            self._register(h, json.loads(body or b"{}"))
            return
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if url.path == "/token":
            self._token(h, form)
        elif url.path == "/introspect":
            self._introspect(h, form)
        elif url.path == "/revoke":
            self._revoke(h, form)
        else:
            _json(h, 404, {"error": "not_found"})

    def _register(self, h: BaseHTTPRequestHandler, meta: dict[str, Any]) -> None:
        uris = meta.get("redirect_uris") or []
        if not uris or not all(u.startswith("http://127.0.0.1:") for u in uris):
            _json(h, 400, {"error": "invalid_redirect_uri"})
            return
        client_id = "client-" + secrets.token_hex(6)
        record = {**meta, "client_id": client_id, "client_id_issued_at": int(time.time()),
                  "token_endpoint_auth_method": "none"}
        with self._lock:
            self.clients[client_id] = record
        _json(h, 201, record)

    def _authorize(self, h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        client = self.clients.get(q.get("client_id", ""))
        if client is None or q.get("redirect_uri") not in client["redirect_uris"]:
            _json(h, 400, {"error": "invalid_request", "error_description": "unknown client or redirect_uri"})
            return
        redirect = q["redirect_uri"]
        if self.deny:
            _redirect(h, redirect, {"error": "access_denied", "error_description": "the user said no",
                                    "state": q.get("state", "")})
            return
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            _redirect(h, redirect, {"error": "invalid_request", "state": q.get("state", "")})
            return
        code = "code-" + secrets.token_urlsafe(12)
        with self._lock:
            self.codes[code] = {"client_id": client["client_id"], "redirect_uri": redirect,
                                "challenge": q["code_challenge"], "scope": q.get("scope", ""),
                                "resource": q.get("resource")}
        _redirect(h, redirect, {"code": code, "state": q.get("state", "")})

    def _token(self, h: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        grant = form.get("grant_type", "")
        self.grants.append(grant)
        if self.token_error:
            _json(h, 400, {"error": "invalid_grant", "error_description": "the test said no"})
            return
        with self._lock:
            if grant == "authorization_code":
                code = self.codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
                if (code is None or code["client_id"] != form.get("client_id")
                        or code["redirect_uri"] != form.get("redirect_uri") or code["challenge"] != challenge):
                    _json(h, 400, {"error": "invalid_grant", "error_description": "bad code or PKCE verifier"})
                    return
                scope, resource, client_id = code["scope"], code["resource"], code["client_id"]
            elif grant == "refresh_token":
                old = self.refresh.pop(form.get("refresh_token", ""), None)
                if old is None or old["client_id"] != form.get("client_id"):
                    _json(h, 400, {"error": "invalid_grant", "error_description": "unknown refresh token"})
                    return
                scope, resource, client_id = old["scope"], old["resource"], old["client_id"]
            else:
                _json(h, 400, {"error": "unsupported_grant_type"})
                return
            access, refresh = "at-" + secrets.token_urlsafe(16), "rt-" + secrets.token_urlsafe(16)
            self.access[access] = {"client_id": client_id, "scope": scope, "resource": resource,
                                   "exp": int(time.time()) + self.expires_in}
            self.refresh[refresh] = {"client_id": client_id, "scope": scope, "resource": resource}
        _json(h, 200, {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in,
                       "refresh_token": refresh, "scope": scope})

    def _revoke(self, h: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        """RFC 7009: 200 whether or not the token was known; a refresh token's revocation also
        ends the access tokens issued with it (here: every one of the client's)."""
        token, client_id = form.get("token", ""), form.get("client_id", "")
        self.revoked.append((form.get("token_type_hint", ""), token, client_id))
        if self.revoke_status != 200:
            _json(h, self.revoke_status, {"error": "temporarily_unavailable"})
            return
        with self._lock:
            self.access.pop(token, None)
            if self.refresh.pop(token, None) is not None:
                for key in [k for k, v in self.access.items() if v["client_id"] == client_id]:
                    del self.access[key]
        h.send_response(200)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def _introspect(self, h: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        token = self.access.get(form.get("token", ""))
        if token is None or token["exp"] <= time.time():
            _json(h, 200, {"active": False})
            return
        _json(h, 200, {"active": True, "client_id": token["client_id"], "scope": token["scope"],
                       "exp": token["exp"], "aud": token["resource"]})


def _json(h: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.send_header("Cache-Control", "no-store")
    h.end_headers()
    h.wfile.write(data)


def _redirect(h: BaseHTTPRequestHandler, uri: str, params: dict[str, str]) -> None:
    h.send_response(302)
    h.send_header("Location", f"{uri}?{urlencode(params)}")
    h.send_header("Content-Length", "0")
    h.end_headers()


@contextlib.contextmanager
def no_os_keyring(monkeypatch: Any) -> Iterator[None]:
    """Keep a test (and the cox processes it starts) away from the real OS keyring: the ``fail``
    backend for this process (keyring picks its backend once per process, so the environment
    variable alone would come too late) and ``PYTHON_KEYRING_BACKEND`` for child processes."""
    import keyring
    from keyring.backends import fail

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]  # keyring ships no annotations on it
    try:
        yield
    finally:
        keyring.set_keyring(previous)
