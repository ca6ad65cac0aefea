"""OAuth for HTTP MCP servers, end to end.

A loopback authorization server (``servers/authserver.py``: RFC 8414 metadata, dynamic
registration, authorize with PKCE, token with refresh, introspection) protects a real
streamable-HTTP MCP server process (``servers/httpserver.py``: 401 + ``WWW-Authenticate`` and
RFC 9728 metadata, from the mcp SDK's server side). ``cox mcp login`` runs as a subprocess with
``BROWSER`` set to a script that follows the login URL like a browser would
(``servers/browser.py``). No test touches the real home or the real keyring: ``COX_HOME`` is a
temporary folder and ``PYTHON_KEYRING_BACKEND`` is keyring's ``fail`` backend, so tokens go to the
0600 file; the keyring path itself is tested with an in-memory backend class.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from keyring.backend import KeyringBackend
from keyring.compat import properties

from cox.actors.mcp.auth import LoginFailed, LoginRequired, login, refresh_margin
from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.state import McpServerCrashed
from cox.actors.mcp.supervisor import fetch_tools, start_mcp
from cox.actors.mcp.tokens import KEYRING_USER, TokenStore, auth_status, keyring_service
from cox.actors.mcp.trust import TrustStore
from cox.supervisors import SupervisorHandle
from tests.mcp.servers import browser
from tests.mcp.servers.authserver import AuthServer, no_os_keyring
from tests.mcp.servers.httpproc import HttpMcp

pytestmark = pytest.mark.xdist_group("headless")

BROWSER = Path(__file__).parent / "servers" / "browser.py"


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with no_os_keyring(monkeypatch):
        yield


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    with AuthServer() as server:
        yield server


@pytest.fixture
def protected(auth: AuthServer) -> Iterator[HttpMcp]:
    with HttpMcp(auth_url=auth.url) as server:
        yield server


def follow(url: str) -> bool:
    """``open_browser`` for in-process logins: the browser stand-in, called directly."""
    argv = sys.argv
    sys.argv = ["browser", url]
    try:
        browser.main()
    finally:
        sys.argv = argv
    return True


def record_file(cox_home: Path, name: str) -> Path:
    return cox_home / "mcp-auth" / f"{name}.json"


# -- the subprocess path: cox mcp login, cox run, cox doctor, cox mcp logout ----------------------------


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    shim = tmp_path / "browser.sh"
    if not shim.exists():
        shim.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{BROWSER}' \"$@\"\n")
        shim.chmod(0o755)
    return {**os.environ, "HOME": str(tmp_path), "BROWSER": str(shim),
            "COX_TEST_BROWSER_LOG": str(tmp_path / "browser.log"), **extra}


def _cox(tmp_path: Path, *argv: str, cwd: Path | None = None, timeout: float = 90, **env: str
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *argv], cwd=cwd or tmp_path,
                          env=_env(tmp_path, **env), capture_output=True, text=True, timeout=timeout)


def _configure(cox_home: Path, url: str, name: str = "prot") -> None:
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(f'[mcp.servers.{name}]\nurl = "{url}"\n')


def _run_echo(tmp_path: Path, text: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    script = tmp_path / f"s-{text}.json"
    script.write_text(json.dumps({"replies": [
        {"tool_calls": [{"id": "m1", "name": "mcp__prot__echo", "input": {"text": text}}]},
        {"text": "done"},
    ]}))
    p = _cox(tmp_path, "run", "--script", str(script), "-p", "go", "--permission-mode", "bypassPermissions",
             "--output-format", "stream-json", cwd=ws)
    events = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return p, events


def test_login_run_refresh_logout_doctor(tmp_path: Path, cox_home: Path, auth: AuthServer, protected: HttpMcp):
    _configure(cox_home, protected.url)

    # Before any login: the headless run skips the server with the hint and goes on.
    p, events = _run_echo(tmp_path, "before")
    assert p.returncode == 0, p.stderr
    assert "run `cox mcp login prot`" in p.stderr
    assert "mcp__prot__echo" not in events[0]["tools"]
    assert events[-1]["type"] in ("result", "turn_done") or events
    assert "/register" not in " ".join(auth.requests), "a headless run must not register a client"

    # Doctor before the login: none.
    d = _cox(tmp_path, "doctor")
    assert any("mcp auth prot" in line and line.rstrip().endswith("none") for line in d.stdout.splitlines()), d.stdout

    # Log in through the "browser".
    p = _cox(tmp_path, "mcp", "login", "prot", "--timeout", "30")
    assert p.returncode == 0, p.stderr + p.stdout
    assert "log in at http://127.0.0.1:" in p.stderr and "/authorize?" in p.stderr
    assert "logged in to mcp server 'prot'" in p.stdout and "mcp-auth" in p.stdout
    visited = (tmp_path / "browser.log").read_text().splitlines()
    assert visited[0].startswith(f"{auth.url}/authorize?") and "code_challenge_method=S256" in visited[0]
    assert visited[1].startswith("http://127.0.0.1:") and "/callback?code=" in visited[1]
    assert auth.grants == ["authorization_code"]
    path = record_file(cox_home, "prot")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(path.read_text())
    assert record["server_url"] == protected.url and record["tokens"]["access_token"].startswith("at-")

    # A run calls the tool with the token.
    p, events = _run_echo(tmp_path, "with a token")
    assert p.returncode == 0, p.stderr
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    assert done["result"]["status"] == "ok" and "with a token" in done["result"]["visible"], done

    d = _cox(tmp_path, "doctor")
    row = [line for line in d.stdout.splitlines() if "mcp auth prot" in line]
    assert row and row[0].startswith("ok") and row[0].rstrip().endswith("ok (expires in 3h)"), d.stdout

    # The token expires: the next run refreshes it (refresh_token grant) and the call goes through.
    auth.expire_access_tokens()
    record = json.loads(path.read_text())
    old_access = record["tokens"]["access_token"]
    record["expires_at"] = time.time() - 5
    path.write_text(json.dumps(record))
    p, events = _run_echo(tmp_path, "after refresh")
    assert p.returncode == 0, p.stderr
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    assert done["result"]["status"] == "ok" and "after refresh" in done["result"]["visible"], done
    assert auth.grants == ["authorization_code", "refresh_token"]
    refreshed = json.loads(path.read_text())
    assert refreshed["tokens"]["access_token"] != old_access and refreshed["expires_at"] > time.time()

    # Expired and the refresh refused: doctor says expired.
    auth.expire_access_tokens()
    auth.token_error = True
    refreshed["expires_at"] = time.time() - 5
    path.write_text(json.dumps(refreshed))
    d = _cox(tmp_path, "doctor")
    row = [line for line in d.stdout.splitlines() if "mcp auth prot" in line]
    assert row and row[0].startswith("warn") and row[0].rstrip().endswith("expired"), d.stdout
    assert "its login expired or was revoked; run `cox mcp login prot`" in d.stdout
    auth.token_error = False

    # Logout forgets the token; the next headless run warns and goes on.
    p = _cox(tmp_path, "mcp", "logout", "prot")
    assert p.returncode == 0 and "logged out of mcp server 'prot'" in p.stdout
    assert not path.exists()
    p = _cox(tmp_path, "mcp", "logout", "prot")
    assert p.returncode == 0 and "no login stored" in p.stdout
    p, events = _run_echo(tmp_path, "after logout")
    assert p.returncode == 0, p.stderr
    assert "run `cox mcp login prot`" in p.stderr
    assert "mcp__prot__echo" not in events[0]["tools"]
    d = _cox(tmp_path, "doctor")
    row = [line for line in d.stdout.splitlines() if "mcp auth prot" in line]
    assert row and row[0].rstrip().endswith("none"), d.stdout


def test_login_cli_failures_say_what_to_do(tmp_path: Path, cox_home: Path, auth: AuthServer, protected: HttpMcp):
    _configure(cox_home, protected.url)
    # The user closes the browser: a bounded wait, then a clear message.
    p = _cox(tmp_path, "mcp", "login", "prot", "--timeout", "1", COX_TEST_BROWSER="close")
    assert p.returncode == 1
    assert "no answer from the browser within 1s" in p.stderr and "run `cox mcp login prot` again" in p.stderr
    assert "Traceback" not in p.stderr, "the SDK's traceback goes to the log file"
    assert not record_file(cox_home, "prot").exists()
    # Unknown and stdio servers are usage errors.
    p = _cox(tmp_path, "mcp", "login", "nope")
    assert p.returncode == 2 and "no mcp server named 'nope'" in p.stderr


# -- in-process: the flow's failure modes lose nothing --------------------------------------------------


def _spec(server: HttpMcp) -> McpServerSpec:
    return McpServerSpec("prot", Origin.USER, url=server.url)


def test_failed_logins_keep_the_previous_token(cox_home: Path, auth: AuthServer, protected: HttpMcp,
                                               monkeypatch: pytest.MonkeyPatch):
    store = TokenStore(cox_home)
    spec = _spec(protected)
    said: list[str] = []
    result = login(spec, store=store, timeout=10, open_browser=follow, say=said.append)
    assert result.where == "file" and result.tools >= 4
    assert any("log in at" in s for s in said)
    before = record_file(cox_home, "prot").read_text()

    def attempt(**kw: Any) -> str:
        with pytest.raises(LoginFailed) as info:
            login(spec, store=store, say=lambda _s: None, **{"timeout": 10, "open_browser": follow, **kw})
        assert record_file(cox_home, "prot").read_text() == before, "a failed login must not lose the token"
        return str(info.value)

    monkeypatch.setenv("COX_TEST_BROWSER", "tamper")
    assert "state mismatch" in attempt()
    monkeypatch.setenv("COX_TEST_BROWSER", "close")
    assert "no answer from the browser within 0.5s" in attempt(timeout=0.5)
    monkeypatch.setenv("COX_TEST_BROWSER", "follow")
    auth.deny = True
    assert "refused the login: access_denied" in attempt()
    auth.deny = False
    auth.token_error = True
    text = attempt()
    assert "refused the token request" in text and "invalid_grant" in text
    auth.token_error = False
    auth.stop()  # the authorization server is down
    text = attempt()
    assert text.startswith(f"cannot connect to {auth.url}/") and "is it up? run `cox mcp login prot` again" in text
    protected.kill()  # and the MCP server too
    text = attempt()
    assert text.startswith(f"cannot connect to {protected.url}") and "is it up?" in text


def test_a_browser_that_cannot_be_opened_still_prints_the_url(cox_home: Path, auth: AuthServer,
                                                              protected: HttpMcp):
    said: list[str] = []
    with pytest.raises(LoginFailed, match="no answer from the browser"):
        login(_spec(protected), store=TokenStore(cox_home), timeout=0.5, open_browser=lambda _u: False,
              say=said.append)
    assert any(s.startswith("mcp server 'prot': log in at http://") for s in said)
    assert any("open the URL above yourself" in s for s in said)


def test_headless_connection_never_waits_and_never_registers(cox_home: Path, auth: AuthServer, protected: HttpMcp):
    started = time.monotonic()
    with pytest.raises(LoginRequired, match=r"needs a login; run `cox mcp login prot`"):
        fetch_tools(_spec(protected), startup_timeout_s=90)
    assert time.monotonic() - started < 45  # it did not wait for the start-up timeout
    assert auth.requests == [], "no discovery, registration or browser for a headless connection"


def test_session_skips_a_server_that_needs_login_and_does_not_restart_it(
        root: SupervisorHandle, cox_home: Path, auth: AuthServer, protected: HttpMcp, tmp_path: Path):
    spec = _spec(protected)
    manager = start_mcp(root, {"prot": spec}, timeout_s=10, startup_timeout_s=10,
                        trust=TrustStore(tmp_path / "trust.json"))
    manager.wait_settled(10)
    status = manager.state()[0]["status"]
    assert status == "failed: needs a login; run `cox mcp login prot`"
    assert manager.tools() == {}
    time.sleep(0.5)
    children = {c["name"]: c for c in manager.handle.which_children()}
    assert children["prot"]["restarts"] == 0, "a server waiting for a login is not restarted"
    with pytest.raises(McpServerCrashed) as waiting:  # and a caller is not told it is
        manager.connection("prot", timeout=0.5)
    assert str(waiting.value) == ("mcp server 'prot' is not available (failed: needs a login; run "
                                  "`cox mcp login prot`)")
    # Logged in from elsewhere: reconnect picks the token up.
    login(spec, store=TokenStore(cox_home), timeout=10, open_browser=follow, say=lambda _s: None)
    manager.reconnect("prot")
    conn = manager.connection("prot", timeout=10)
    assert "echo: hi" in conn.call_tool("echo", {"text": "hi"}).content[0].text  # type: ignore[union-attr]
    assert "mcp__prot__echo" in manager.tools()


def _echo(manager: Any, text: str) -> Any:
    """One call of the server's echo tool the way a session makes it (``McpTool.call``)."""
    from cox.actors.tools.base import ToolEnv
    from cox.protocol.types import ToolCall
    from cox.supervisors import CancelScope

    tool = manager.tools()["mcp__prot__echo"]
    env = ToolEnv(roots=[Path.cwd()], cwd=Path.cwd(), cancel=CancelScope())
    return tool.call(ToolCall(id="e", name=tool.name, input={"text": text}), env)


def _logged_in_session(root: SupervisorHandle, cox_home: Path, protected: HttpMcp, tmp_path: Path) -> Any:
    spec = _spec(protected)
    login(spec, store=TokenStore(cox_home), timeout=10, open_browser=follow, say=lambda _s: None)
    manager = start_mcp(root, {"prot": spec}, timeout_s=10, startup_timeout_s=10,
                        trust=TrustStore(tmp_path / "trust.json"))
    manager.wait_settled(10)
    assert manager.state() == [{"name": "prot", "status": "ready"}]
    first = _echo(manager, "first")
    assert first.ok and "echo: first" in first.visible, first.visible
    return manager


def _restarts(manager: Any) -> int:
    return int({c["name"]: c for c in manager.handle.which_children()}["prot"]["restarts"])


def test_a_token_revoked_mid_session_is_refreshed_and_the_call_goes_through(
        root: SupervisorHandle, cox_home: Path, auth: AuthServer, protected: HttpMcp, tmp_path: Path):
    manager = _logged_in_session(root, cox_home, protected, tmp_path)
    before = json.loads(record_file(cox_home, "prot").read_text())["tokens"]
    auth.revoke_server_side()  # the access token is dead; cox's clock says it has 3h left
    result = _echo(manager, "after the revocation")
    assert result.ok and "echo: after the revocation" in result.visible, result.visible
    assert auth.grants == ["authorization_code", "refresh_token"]
    after = json.loads(record_file(cox_home, "prot").read_text())["tokens"]
    assert after["access_token"] != before["access_token"], "the refreshed token is filed"
    assert after["refresh_token"] != before["refresh_token"], "and the rotated refresh token with it"
    assert manager.state() == [{"name": "prot", "status": "ready"}] and _restarts(manager) == 0
    # The same at a connection's start (a new process with a token revoked meanwhile).
    auth.revoke_server_side()
    assert fetch_tools(_spec(protected), startup_timeout_s=10)
    assert auth.grants == ["authorization_code", "refresh_token", "refresh_token"]


def test_a_revoked_login_whose_refresh_is_refused_fails_the_call_with_the_login_sentence(
        root: SupervisorHandle, cox_home: Path, auth: AuthServer, protected: HttpMcp, tmp_path: Path):
    manager = _logged_in_session(root, cox_home, protected, tmp_path)
    auth.revoke_server_side(refresh=True)  # the refresh token too: only a new login helps
    sentence = "its login expired or was revoked; run `cox mcp login prot`"
    result = _echo(manager, "after the revocation")
    assert not result.ok and result.visible == f"mcp server 'prot': {sentence}", result.visible
    assert auth.grants == ["authorization_code", "refresh_token"], "the refresh grant is tried once"
    # The board is updated by the server's actor as its connection ends, just after the call's
    # answer: give it a moment (bounded).
    deadline = time.monotonic() + 5
    while manager.state() != [{"name": "prot", "status": f"failed: {sentence}"}] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert manager.state() == [{"name": "prot", "status": f"failed: {sentence}"}]
    again = _echo(manager, "once more")  # the server is skipped, not restarted: the same sentence
    assert not again.ok and again.visible == f"mcp server 'prot': {sentence}", again.visible
    time.sleep(0.3)
    assert _restarts(manager) == 0 and auth.grants == ["authorization_code", "refresh_token"]
    # A new login, and the session's server comes back.
    login(_spec(protected), store=TokenStore(cox_home), timeout=10, open_browser=follow, say=lambda _s: None)
    manager.reconnect("prot")
    manager.connection("prot", timeout=10)
    back = _echo(manager, "logged in again")
    assert back.ok and "echo: logged in again" in back.visible, back.visible


def test_logout_revokes_the_token_at_the_authorization_server(tmp_path: Path, cox_home: Path, auth: AuthServer,
                                                               protected: HttpMcp, capsys: pytest.CaptureFixture[str]):
    import argparse

    from cox.surfaces.mcp_login import logout

    _configure(cox_home, protected.url)
    store = TokenStore(cox_home)
    path = record_file(cox_home, "prot")

    def logged_in() -> tuple[str, str, str]:
        login(_spec(protected), store=store, timeout=10, open_browser=follow, say=lambda _s: None)
        record = json.loads(path.read_text())
        access, refresh = record["tokens"]["access_token"], record["tokens"]["refresh_token"]
        assert auth.active(access) and auth.active(refresh)
        return access, refresh, record["client_info"]["client_id"]

    access, refresh, client_id = logged_in()
    p = _cox(tmp_path, "mcp", "logout", "prot")
    assert p.returncode == 0, p.stderr
    assert "logged out of mcp server 'prot': its authorization server revoked the token, and it is forgotten " \
           "here" in p.stdout, p.stdout
    assert auth.revoked == [("refresh_token", refresh, client_id), ("access_token", access, client_id)]
    assert not auth.active(access) and not auth.active(refresh)
    assert not path.exists()

    # Best effort: an authorization server that refuses, or is down, never keeps the token here.
    logged_in()
    auth.revoke_status = 503
    assert logout({}, argparse.Namespace(server="prot")) == 0
    out = capsys.readouterr().out
    assert "its token is forgotten here (not revoked at the authorization server: refresh token: HTTP 503; " \
           "access token: HTTP 503)" in out, out
    assert not path.exists()
    logged_in()
    auth.stop()
    started = time.monotonic()
    assert logout({}, argparse.Namespace(server="prot")) == 0
    out = capsys.readouterr().out
    assert f"its token is forgotten here (not revoked at the authorization server: cannot reach {auth.url}/revoke" \
           in out, out
    assert time.monotonic() - started < 15 and not path.exists()


def test_tokens_are_refreshed_before_they_expire(cox_home: Path, auth: AuthServer, protected: HttpMcp):
    auth.expires_in = 600  # refreshed when less than a minute is left
    store = TokenStore(cox_home)
    spec = _spec(protected)
    login(spec, store=store, timeout=10, open_browser=follow, say=lambda _s: None)
    path = record_file(cox_home, "prot")
    record = json.loads(path.read_text())
    record["expires_at"] = time.time() + 30  # still valid for the server, inside the margin
    path.write_text(json.dumps(record))
    assert fetch_tools(spec, startup_timeout_s=10)
    assert auth.grants == ["authorization_code", "refresh_token"]
    assert json.loads(path.read_text())["expires_at"] > time.time() + 500
    assert refresh_margin(600) == 60 and refresh_margin(100) == 10 and refresh_margin(None) == 0


def test_a_token_is_never_sent_to_another_url(cox_home: Path, auth: AuthServer, protected: HttpMcp):
    store = TokenStore(cox_home)
    login(_spec(protected), store=store, timeout=10, open_browser=follow, say=lambda _s: None)
    assert store.load("prot", protected.url) is not None
    assert store.load("prot", "http://127.0.0.1:1/elsewhere") is None
    assert auth_status(store.load("prot", "http://127.0.0.1:1/x")) == "none"


# -- the token store ------------------------------------------------------------------------------------


class MemoryKeyring(KeyringBackend):
    """An in-memory keyring backend, installed explicitly by the tests that use it. keyring
    registers every ``KeyringBackend`` subclass, so this one declares itself not viable: the
    automatic choice of a backend (in any test of this process) must never pick it."""

    @properties.classproperty
    def priority(cls) -> float:
        raise RuntimeError("a test-only backend; keyring.set_keyring() it explicitly")

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.items[(service, username)]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    import keyring

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_token_store_uses_the_keyring_when_there_is_one(cox_home: Path, memory_keyring: Any):
    store = TokenStore(cox_home)
    record = {"server_url": "http://x/mcp", "tokens": {"access_token": "a", "token_type": "Bearer"}}
    assert store.save("gh", record) == "keyring"
    assert ("cox/mcp/gh", KEYRING_USER) in memory_keyring.items and keyring_service("gh") == "cox/mcp/gh"
    assert not (cox_home / "mcp-auth" / "gh.json").exists()
    assert store.load("gh") == record and store.where("gh") == "keyring"
    assert store.delete("gh") and store.load("gh") is None and not store.delete("gh")


def test_token_store_falls_back_to_a_private_file(cox_home: Path):
    store = TokenStore(cox_home)
    assert store.save("gh", {"server_url": "u", "tokens": {"access_token": "a"}}) == "file"
    path = cox_home / "mcp-auth" / "gh.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and store.where("gh") == "file"
    path.write_text("not json")
    assert store.load("gh") is None  # a damaged file is ignored, not a crash
    assert store.delete("gh") and not path.exists()


def test_a_keyring_that_fails_falls_back_to_the_file(cox_home: Path, memory_keyring: Any):
    from keyring.errors import KeyringLocked

    def locked(*_a: Any) -> None:
        raise KeyringLocked("locked")

    memory_keyring.set_password = locked
    store = TokenStore(cox_home)
    assert store.save("gh", {"tokens": {"access_token": "a"}}) == "file"
    assert store.load("gh") == {"tokens": {"access_token": "a"}}


def test_auth_status_words():
    now = 1000.0
    assert auth_status(None, now) == "none"
    assert auth_status({"tokens": {"access_token": "a"}, "expires_at": now + 3 * 3600 - 1}, now) == "ok (expires in 3h)"
    assert auth_status({"tokens": {"access_token": "a"}, "expires_at": now + 125}, now) == "ok (expires in 2m)"
    assert auth_status({"tokens": {"access_token": "a"}, "expires_at": now - 1}, now) == "expired"
    assert auth_status({"tokens": {"access_token": "a"}}, now) == "ok"


def test_interactive_start_offers_the_login_then_starts_the_server(
        root: SupervisorHandle, cox_home: Path, auth: AuthServer, protected: HttpMcp, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    import webbrowser

    from cox.surfaces.mcp_login import login_at_start

    monkeypatch.setattr(webbrowser, "open", follow)
    manager = start_mcp(root, {"prot": _spec(protected)}, timeout_s=10, startup_timeout_s=10,
                        trust=TrustStore(tmp_path / "trust.json"))
    manager.wait_settled(10)
    assert "needs a login" in manager.state()[0]["status"]
    login_at_start(manager, wait_s=15)
    err = capsys.readouterr().err
    assert "mcp server 'prot' needs a login (Ctrl-C skips it)" in err and "log in at http://127.0.0.1:" in err
    assert "logged in to mcp server 'prot'" in err, err
    assert manager.state() == [{"name": "prot", "status": "ready"}], err
    assert "mcp__prot__echo" in manager.tools()
