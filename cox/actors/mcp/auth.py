"""OAuth for HTTP MCP servers, on the mcp SDK's ``OAuthClientProvider``.

An HTTP server that answers 401 with a ``WWW-Authenticate`` challenge gets the standard flow,
all of it done by the SDK: protected-resource and authorization-server discovery (RFC 9728,
RFC 8414), dynamic client registration when offered (RFC 7591), authorization code with PKCE,
the token exchange, and the refresh-token grant. cox adds what the SDK leaves to its caller:

- **where tokens live** (``tokens.TokenStore``: the OS keyring as ``cox/mcp/<name>``, else a 0600
  file under ``$COX_HOME``), with the token's absolute expiry and the discovered metadata, so a
  new process refreshes an expired token at the right endpoint instead of asking for a login
  (the SDK alone keeps neither across processes);
- **refresh before expiry**: a token counts as expired a little before it is (a tenth of its
  life, at most a minute), so the refresh grant runs before the server would refuse it;
- **refresh on a 401**: a token the server refuses although it has not expired here (revoked or
  rotated on the server's side) gets the refresh grant once, and the request is sent again with
  the new token. If that fails too, the request fails with :class:`LoginRequired` ("its login
  expired or was revoked; run `cox mcp login <name>`"), which the connection is told first
  (``on_login_lost``): the call in flight fails with that sentence, the server's status says
  it, and the server is skipped, not restarted, until a new login;
- **two modes**. A session's connection (every surface, ``cox run`` too) never waits for a
  browser: the 401 of a server without a usable token ends the connection with
  :class:`LoginRequired` ("run `cox mcp login <name>`") before any discovery or registration
  happens, and the server is skipped. :func:`login` (``cox mcp login``, and an interactive
  session's start) runs the browser flow: a listener on 127.0.0.1 takes the redirect, the login
  URL is printed and ``webbrowser`` opens it (``BROWSER`` is honoured), every wait is bounded;
- **nothing is lost on a failed login**: what the flow learns (a new registration, new tokens)
  is staged and filed only once the server accepted the new token. An authorization server
  that is down, a browser closed before the redirect (a timeout), a ``state`` mismatch or a
  token-endpoint error each end the login with a sentence that says what to do, and the
  previous record stays as it was;
- **logout revokes** (:func:`revoke`): ``cox mcp logout`` asks the authorization server to revoke
  the refresh and access tokens (RFC 7009) when it advertised a ``revocation_endpoint``, best
  effort and bounded, and forgets them locally whatever it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError

from .config import McpServerSpec
from .tokens import TokenStore, keyring_service

__all__ = [
    "DEFAULT_LOGIN_TIMEOUT_S",
    "CallbackListener",
    "CoxOAuth",
    "LoginFailed",
    "LoginRequired",
    "LoginResult",
    "SessionAuth",
    "http_transport",
    "login",
    "login_hint",
    "refresh_margin",
    "revoke",
]

log = logging.getLogger(__name__)

DEFAULT_LOGIN_TIMEOUT_S = 300.0
"""How long ``cox mcp login`` waits for the browser to come back with the redirect."""

CALLBACK_PATH = "/callback"


def login_hint(name: str) -> str:
    return f"run `cox mcp login {name}`"


class LoginRequired(Exception):
    """The server wants a login, and this connection may not open a browser. Not a crash: the
    server is skipped (not restarted) until the user has logged in."""

    cox_no_restart = True


class LoginFailed(Exception):
    """A login did not complete; the message says why and what to do."""


def refresh_margin(lifetime_s: float | None) -> float:
    """How long before its expiry a token is refreshed: a tenth of its life, at most a minute."""
    if not lifetime_s or lifetime_s <= 0:
        return 0.0
    return min(60.0, float(lifetime_s) / 10.0)


# -- storage ------------------------------------------------------------------------------------------


class _Storage:
    """The SDK's ``TokenStorage`` over one server's record in :class:`TokenStore`.

    ``staged`` keeps every change in memory until :meth:`commit` (a login files nothing unless it
    succeeds); otherwise each change is filed at once (a refreshed token must survive the process:
    the authorization server may have rotated the refresh token)."""

    def __init__(self, name: str, url: str, store: TokenStore, *, staged: bool = False,
                 record: dict[str, Any] | None = None) -> None:
        self.name = name
        self.url = url
        self.store = store
        self.staged = staged
        self.record: dict[str, Any] = dict(record) if record is not None else dict(store.load(name, url) or {})
        self.record["server_url"] = url
        self.provider: CoxOAuth | None = None
        self.tokens_set = False

    async def get_tokens(self) -> OAuthToken | None:
        raw = self.record.get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self.record["expires_at"] = time.time() + int(tokens.expires_in) if tokens.expires_in else None
        self.record["saved_at"] = time.time()
        self.tokens_set = True
        context = self.provider.context if self.provider is not None else None
        if context is not None:  # where to refresh, for the next process
            if context.oauth_metadata is not None:
                self.record["oauth_metadata"] = context.oauth_metadata.model_dump(mode="json", exclude_none=True)
            if context.protected_resource_metadata is not None:
                self.record["resource_metadata"] = context.protected_resource_metadata.model_dump(
                    mode="json", exclude_none=True)
            if context.auth_server_url:
                self.record["auth_server_url"] = context.auth_server_url
        self._file()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self.record.get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._file()

    def _file(self) -> None:
        if not self.staged:
            try:
                self.store.save(self.name, self.record)
            except OSError as err:  # the token still works for this process
                log.warning("mcp server %s: the refreshed token could not be filed: %s", self.name, err)

    def commit(self) -> str:
        return self.store.save(self.name, self.record)


# -- the provider -------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Context(OAuthContext):
    """The SDK's context, with an expiry that comes a little early (so the refresh runs before
    the server would refuse the token)."""

    def update_token_expiry(self, token: OAuthToken) -> None:
        super().update_token_expiry(token)
        if self.token_expiry_time is not None:
            self.token_expiry_time -= refresh_margin(token.expires_in)


class CoxOAuth(OAuthClientProvider):
    """``OAuthClientProvider`` for one server, in one of two modes.

    ``interactive=False`` (a session): a 401 of the request being sent, after the SDK tried the
    stored token and its refresh, raises :class:`LoginRequired` at once.
    ``interactive=True`` (a login): the SDK's full flow runs, through ``redirect_handler`` and
    ``callback_handler``."""

    def __init__(self, name: str, url: str, storage: _Storage, *, interactive: bool = False,
                 redirect_uri: str | None = None, redirect_handler: Any = None, callback_handler: Any = None) -> None:
        client_info = storage.record.get("client_info") or {}
        registered = [str(u) for u in client_info.get("redirect_uris") or []]
        uri = redirect_uri or (registered[0] if registered else f"http://127.0.0.1{CALLBACK_PATH}")
        metadata = OAuthClientMetadata(
            client_name="cox", redirect_uris=[AnyUrl(uri)], grant_types=["authorization_code", "refresh_token"],
            response_types=["code"], token_endpoint_auth_method="none")
        super().__init__(url, metadata, storage, redirect_handler=redirect_handler, callback_handler=callback_handler)
        self.context = _Context(**{f.name: getattr(self.context, f.name) for f in dataclasses.fields(OAuthContext)})
        self.name = name
        self.interactive = interactive
        self.storage = storage
        self.on_login_lost: Callable[[str], None] | None = None
        """Told the sentence (``its login expired or was revoked; run …``) just before a request
        fails with :class:`LoginRequired`, on the connection's loop: the connection learns why
        it is about to break before its calls see the broken transport."""
        storage.provider = self

    async def _initialize(self) -> None:
        await super()._initialize()
        record = self.storage.record
        ctx = self.context
        expires_at = record.get("expires_at")
        if ctx.current_tokens is not None and isinstance(expires_at, int | float):
            ctx.token_expiry_time = float(expires_at) - refresh_margin(ctx.current_tokens.expires_in)
        with contextlib.suppress(ValidationError, TypeError):
            if ctx.oauth_metadata is None and record.get("oauth_metadata"):
                ctx.oauth_metadata = OAuthMetadata.model_validate(record["oauth_metadata"])
            if ctx.protected_resource_metadata is None and record.get("resource_metadata"):
                ctx.protected_resource_metadata = ProtectedResourceMetadata.model_validate(record["resource_metadata"])
            if ctx.auth_server_url is None and isinstance(record.get("auth_server_url"), str):
                ctx.auth_server_url = record["auth_server_url"]

    async def _auth_flow(self, request: httpx2.Request) -> Any:
        inner = super()._auth_flow(request)
        refreshed = False  # the refresh grant ran for this request (the SDK's, or ours below)
        try:
            outgoing = await inner.__anext__()
            while True:
                if outgoing is not request:
                    refreshed = True  # before the request itself: the SDK refreshing an expired token
                response = yield outgoing
                if not self.interactive and outgoing is request and _wants_login(response):
                    if (response.status_code == 401 and not refreshed and _bearer(request)
                            and self.context.can_refresh_token()):
                        # Refused although it has not expired here: revoked or rotated on the
                        # server's side. The refresh grant, once; on success the request again.
                        refreshed = True
                        log.info("mcp server %s refused its token (401); refreshing it", self.name)
                        answer = yield await self._refresh_token()
                        if await self._handle_refresh_response(answer):
                            self._add_auth_header(request)
                            response = yield request
                    if _wants_login(response):
                        raise LoginRequired(self._login_sentence())
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await inner.aclose()

    def _login_sentence(self) -> str:
        had = self.storage.record.get("tokens")
        why = "its login expired or was revoked" if had else "needs a login"
        sentence = f"{why}; {login_hint(self.name)}"
        if self.on_login_lost is not None:
            self.on_login_lost(sentence)
        return sentence


def _bearer(request: httpx2.Request) -> bool:
    return request.headers.get("Authorization", "").startswith("Bearer ")


def _wants_login(response: httpx2.Response) -> bool:
    if response.status_code == 401:
        return True
    if response.status_code == 403:
        return 'insufficient_scope' in response.headers.get("WWW-Authenticate", "")
    return False


# -- the transport a Connection uses ------------------------------------------------------------------


class SessionAuth:
    """What a session's HTTP servers authenticate with: the stored tokens, refreshed as needed,
    never a browser. Also the default when no auth is configured (``ServerSettings.auth``)."""

    def __init__(self, store: TokenStore | None = None) -> None:
        self._store = store

    def __call__(self, spec: McpServerSpec) -> httpx2.Auth | None:
        if not spec.url or _has_authorization(spec.headers):
            return None  # a static Authorization header is the user's choice; no OAuth on top
        store = self._store if self._store is not None else TokenStore()
        return CoxOAuth(spec.name, spec.url, _Storage(spec.name, spec.url, store))


def _has_authorization(headers: Mapping[str, str]) -> bool:
    return any(k.lower() == "authorization" for k in headers)


@asynccontextmanager
async def http_transport(spec: McpServerSpec, auth: Callable[[McpServerSpec], httpx2.Auth | None] | None,
                         on_login_lost: Callable[[str], None] | None = None) -> AsyncIterator[Any]:
    """The streamable-HTTP transport of ``spec`` with ``auth`` (default :class:`SessionAuth`).
    ``on_login_lost`` is told the sentence when a request fails for want of a (new) login."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    assert spec.url is not None
    provider = (auth or SessionAuth())(spec)
    if isinstance(provider, CoxOAuth) and on_login_lost is not None:
        provider.on_login_lost = on_login_lost
    try:
        if spec.sse:  # the older HTTP+SSE transport (a Claude Code ``"type": "sse"`` entry)
            from mcp.client.sse import sse_client

            async with sse_client(spec.url, headers=dict(spec.headers), auth=provider) as streams:
                yield streams[0], streams[1]
            return
        async with create_mcp_http_client(headers=dict(spec.headers), auth=provider) as client, \
                streamable_http_client(spec.url, http_client=client) as streams:
            yield streams[0], streams[1]
    except BaseException as exc:  # noqa: BLE001 - re-raised, a connect failure with its URL
        inner: BaseException = exc
        while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
            inner = inner.exceptions[0]
        if isinstance(inner, httpx2.ConnectError | httpx2.ConnectTimeout):
            from .server import McpServerCrashed

            where = _request_url(inner) or spec.url
            raise McpServerCrashed(f"cannot connect to {where} ({inner or type(inner).__name__})") from exc
        raise


def _request_url(error: httpx2.HTTPError) -> str | None:
    try:
        return str(error.request.url.copy_with(query=None))
    except (RuntimeError, AttributeError):
        return None


# -- the loopback redirect listener -------------------------------------------------------------------


class CallbackListener:
    """A listener on 127.0.0.1 that takes one OAuth redirect (``GET /callback?code=…&state=…``,
    or ``?error=…``), answers the browser with a short page and hands the parameters over.

    The socket is bound at construction (the redirect URI, with its port, goes into the client
    registration before the flow starts); connections wait in the backlog until :meth:`start`."""

    def __init__(self, port: int = 0) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._sock.bind(("127.0.0.1", port))
            self._sock.listen(8)
        except OSError:
            self._sock.close()
            raise
        self._sock.setblocking(False)
        self.port: int = self._sock.getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"
        self._server: asyncio.AbstractServer | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    @classmethod
    def bind(cls, preferred: int | None) -> CallbackListener:
        """On ``preferred`` (the port of the registered redirect URI) when it is free, else any."""
        if preferred:
            with contextlib.suppress(OSError):
                return cls(preferred)
        return cls(0)

    async def start(self) -> None:
        if self._server is None:
            self._result = asyncio.get_running_loop().create_future()
            self._server = await asyncio.start_server(self._handle, sock=self._sock)

    async def wait(self, timeout: float) -> dict[str, str]:
        await self.start()
        assert self._result is not None
        return await asyncio.wait_for(asyncio.shield(self._result), timeout)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while True:  # the headers: read and drop (bounded)
                header = await asyncio.wait_for(reader.readline(), 10)
                if header in (b"\r\n", b"\n", b""):
                    break
            parts = line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
            if target is None or target.path != CALLBACK_PATH:
                await _answer(writer, 404, "Not found.")
                return
            params = {k: v[0] for k, v in parse_qs(target.query).items() if v}
            if "code" not in params and "error" not in params:
                await _answer(writer, 400, "This is cox's login listener; it expected an authorization code.")
                return
            if "error" in params:
                await _answer(writer, 200, "The login did not complete. You can close this tab; "
                                           "cox says what to do in the terminal.")
            else:
                await _answer(writer, 200, "cox got the answer of the sign-in. You can close this tab; "
                                           "the terminal says how the login went.")
            if self._result is not None and not self._result.done():
                self._result.set_result(params)
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 2)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    body = (f"<!doctype html><meta charset=utf-8><title>cox</title><p>{text}</p>\n").encode()
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    await asyncio.wait_for(writer.drain(), 5)


# -- the login ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LoginResult:
    tools: int
    """How many tools the server listed with the new token."""
    where: str | None
    """``keyring`` or ``file``; ``None`` when the server never asked for a login (nothing filed)."""


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def login(spec: McpServerSpec, *, store: TokenStore | None = None, timeout: float = DEFAULT_LOGIN_TIMEOUT_S,
          open_browser: Callable[[str], Any] | None = None, say: Callable[[str], None] = _say) -> LoginResult:
    """Run the browser flow for HTTP server ``spec`` and file the token; return what was done.

    Prints the login URL with ``say`` and opens it with ``open_browser`` (``webbrowser.open``,
    which honours ``BROWSER``), waits at most ``timeout`` seconds for the redirect, then connects
    with the new token and lists the tools (proof that the server accepts it) before anything is
    filed. Raises :class:`LoginFailed` with a sentence that says what to do."""
    from .server import Connection, ServerSettings

    if not spec.url:
        raise LoginFailed(f"mcp server '{spec.name}' is a stdio server; only HTTP servers log in")
    if _has_authorization(spec.headers):
        raise LoginFailed(f"mcp server '{spec.name}' sends its own Authorization header (headers in its "
                          "config); remove it to log in with OAuth")
    store = TokenStore() if store is None else store
    name, url = spec.name, spec.url
    previous = store.load(name, url) or {}
    # Start from the registration only: a login always asks the browser, even with a valid token.
    record = {k: v for k, v in previous.items() if k in ("client_info", "oauth_metadata", "resource_metadata",
                                                           "auth_server_url")}
    registered = [str(u) for u in (record.get("client_info") or {}).get("redirect_uris") or []]
    preferred = urlsplit(registered[0]).port if registered else None
    listener = CallbackListener.bind(preferred)
    if registered and listener.redirect_uri not in registered:
        record.pop("client_info", None)  # registered for another port: register again
    storage = _Storage(name, url, store, staged=True, record=record)
    opener = webbrowser.open if open_browser is None else open_browser
    browsers: list[threading.Thread] = []
    asked: list[str] = []

    async def redirect(authorization_url: str) -> None:
        await listener.start()
        asked.append(authorization_url)
        say(f"mcp server '{name}': log in at {authorization_url}")
        say(f"(waiting up to {timeout:g}s for the browser to come back to {listener.redirect_uri})")
        thread = threading.Thread(target=_open, args=(opener, authorization_url, say), name="cox-browser",
                                  daemon=True)
        thread.start()  # webbrowser.open may wait for the browser command; the listener must not
        browsers.append(thread)

    async def callback() -> AuthorizationCodeResult:
        try:
            params = await listener.wait(timeout)
        except TimeoutError:
            raise LoginFailed(f"no answer from the browser within {timeout:g}s (was the page closed?); "
                              f"{login_hint(name)} again") from None
        finally:
            await listener.aclose()
        if "error" in params:
            detail = params.get("error_description")
            raise LoginFailed(f"the authorization server refused the login: {params['error']}"
                              + (f" ({detail})" if detail else "") + f"; {login_hint(name)} to try again")
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    provider = CoxOAuth(name, url, storage, interactive=True, redirect_uri=listener.redirect_uri,
                        redirect_handler=redirect, callback_handler=callback)
    settings = ServerSettings(startup_timeout_s=timeout + 60.0, auth=lambda _spec: provider)
    conn = Connection(spec, settings, lambda _error: None)
    conn.start()
    try:
        tools = conn.ready.result(timeout=timeout + 90.0)
    except Exception as err:  # noqa: BLE001 - every failure becomes one sentence
        raise LoginFailed(explain(name, err, asked=bool(asked))) from err
    finally:
        conn.close()
        listener.close()
        for thread in browsers:
            thread.join(2.0)
    if not storage.tokens_set:
        return LoginResult(len(tools), None)
    return LoginResult(len(tools), storage.commit())


def _open(opener: Callable[[str], Any], url: str, say: Callable[[str], None]) -> None:
    try:
        if opener(url) is False:
            say("could not open a browser; open the URL above yourself")
    except Exception as err:  # noqa: BLE001
        say(f"could not open a browser ({err}); open the URL above yourself")


# -- the logout ---------------------------------------------------------------------------------------

REVOKE_TIMEOUT_S = 5.0
"""How long ``cox mcp logout`` waits for each revocation request."""


def revoke(record: dict[str, Any], *, timeout: float = REVOKE_TIMEOUT_S) -> str | None:
    """Revoke a stored login's tokens at its authorization server (RFC 7009), best effort: the
    refresh token first (revoking it ends the grant), then the access token, each a POST to the
    ``revocation_endpoint`` the server advertised at login, with the client's authentication as
    for its token requests. Returns None when it revoked them, else why not (no endpoint
    advertised, the server unreachable or refusing); the caller forgets the token either way."""
    metadata = record.get("oauth_metadata")
    endpoint = metadata.get("revocation_endpoint") if isinstance(metadata, dict) else None
    tokens = record.get("tokens")
    pairs: list[tuple[str, str]] = []
    for hint in ("refresh_token", "access_token"):
        token = tokens.get(hint) if isinstance(tokens, dict) else None
        if isinstance(token, str) and token:
            pairs.append((hint, token))
    if not pairs:
        return "there was no token to revoke"
    if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
        return "its authorization server offers no revocation endpoint"
    try:
        client = OAuthClientInformationFull.model_validate(record.get("client_info") or {})
        context = OAuthContext(server_url=str(record.get("server_url") or ""),
                               client_metadata=OAuthClientMetadata(redirect_uris=client.redirect_uris),
                               storage=None, redirect_handler=None, callback_handler=None,  # type: ignore[arg-type]
                               client_info=client)  # for prepare_token_auth: the client's authentication
    except ValidationError:
        return "the stored client registration is damaged"
    problems: list[str] = []
    with httpx2.Client(timeout=timeout, follow_redirects=False) as http:
        for hint, token in pairs:
            data: dict[str, str] = {"token": token, "token_type_hint": hint, "client_id": client.client_id or ""}
            try:
                data, headers = context.prepare_token_auth(data, {"Content-Type": "application/x-www-form-urlencoded"})
                response = http.post(endpoint, data=data, headers=headers)
            except httpx2.TransportError as err:  # down or hung: the other token would wait as long
                problems.append(f"cannot reach {endpoint} ({err or type(err).__name__})")
                break
            except (httpx2.HTTPError, OAuthTokenError) as err:
                problems.append(f"{hint.replace('_', ' ')}: {err or type(err).__name__}")
                continue
            if response.status_code != 200:  # RFC 7009 §2.2: 200 whether or not the token was valid
                problems.append(f"{hint.replace('_', ' ')}: HTTP {response.status_code}")
    return "; ".join(problems) or None


def explain(name: str, error: BaseException, *, asked: bool = True) -> str:
    """One sentence for a failed login (``asked``: the browser had been sent to the login page)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    again = f"{login_hint(name)} again"
    text = str(error)
    if isinstance(error, LoginFailed):
        return text
    if isinstance(error, OAuthFlowError) and "State parameter mismatch" in text:
        return (f"the browser came back with an answer to another login (state mismatch); nothing was "
                f"filed; {again}")
    if isinstance(error, OAuthTokenError):
        return f"the authorization server refused the token request: {text}; nothing was filed; {again}"
    if isinstance(error, OAuthRegistrationError):
        return f"the authorization server refused to register cox as a client: {text}"
    if isinstance(error, OAuthFlowError):
        return f"the login failed: {text}; {again}"
    if isinstance(error, httpx2.TransportError):
        where = _request_url(error)
        return f"cannot reach {where or 'the server'} ({error or type(error).__name__}); is it up? {again}"
    if text.startswith("cannot connect to "):
        return f"{text}; is it up? {again}"
    if isinstance(error, TimeoutError) or "did not start within" in text:
        return f"the login did not finish in time; {again}"
    return f"the login failed: {text or type(error).__name__}; {again}"


def describe_where(name: str, where: str | None, store: TokenStore) -> str:
    if where == "keyring":
        return f"in the OS keyring as {keyring_service(name)}"
    return f"in {store.home / 'mcp-auth' / (name + '.json')} (no OS keyring available)"
