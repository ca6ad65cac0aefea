"""The ACP agent: JSON-RPC methods of the ``agent-client-protocol`` package, answered by cox.

``initialize`` says what cox can do (load session, image and embedded-context prompts, MCP over
stdio and HTTP) and, where no provider key is set, how to authenticate (which variable to set).
``session/new`` and ``session/load`` open an ordinary cox session in the client's folder — the
same ``prepare`` / ``session_tools`` / ``open_session`` as ``cox run`` and the TUI, with the
approval policy ``on-request`` so every approval is the client's ``request_permission``; load
replays the stored rollout as updates first. ``session/prompt``, ``session/cancel`` and
``session/set_mode`` go to that session (``session.AcpSession``).

Opening a session blocks (config, MCP start-up, the store): it runs in a worker thread, so the
connection keeps answering other sessions meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandInput,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SetSessionModeResponse,
    UnstructuredCommandInput,
)

from cox.policy.sanitize import sanitize

from .content import user_turn
from .session import AcpSession, mode_state
from .updates import Translator

__all__ = ["CoxAgent"]

log = logging.getLogger(__name__)

SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")
"""A session id as cox writes them (a ULID; Claude Code's UUID spelling of one): nothing that
could name a path."""
KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")
AUTH = [AuthMethodAgent(id="anthropic-api-key", name="Anthropic API key",
                        description="set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the agent's environment"),
        AuthMethodAgent(id="openai-api-key", name="OpenAI API key",
                        description="set OPENAI_API_KEY in the agent's environment")]


class CoxAgent:
    """One ``cox acp`` process: its sessions by id, on one ``App`` (one store)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        """Flags of ``cox acp`` every session gets (``--script``, ``--model``, ``--permission-mode``)."""
        self.conn: Any = None
        self.app: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self.client_caps: Any = None
        self.clients: dict[str, Any] = {}
        """Per session: its ``bridge.Client`` (the client's fs and terminal, as its tools use them)."""
        self.to_trust: dict[str, dict[str, Any]] = {}
        """Per new session: the client's MCP servers whose launch is not trusted (asked after the answer)."""

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # --- set-up -----------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        from cox import __version__

        self.client_caps = client_capabilities
        keyless = "--script" not in self.argv and not any(os.environ.get(k) for k in KEYS)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True)),
            auth_methods=AUTH if keyless else [],
            agent_info=Implementation(name="cox", title="cox", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        if any(os.environ.get(k) for k in KEYS):
            return AuthenticateResponse()
        wanted = "OPENAI_API_KEY" if method_id == "openai-api-key" else "ANTHROPIC_API_KEY"
        raise RequestError.auth_required({"message": f"no provider key: set {wanted} in the environment the "
                                          "editor starts `cox acp` with (its agent_servers env), then restart it"})

    def _open(self, cwd: str, resume: str | None, mcp_servers: Any) -> tuple[Any, Any, Any]:
        """A cox session's handle, its ``Prepared`` and its commands (a worker thread)."""
        from cox.surfaces.claude_code.flags import settle
        from cox.surfaces.cli import _parser
        from cox.surfaces.commands import (
            Refused,
            prepare,
            session_commands,
            session_hooks,
            session_tools,
            store_ready,
        )

        argv = ["run", "--cwd", cwd, *self.argv, *(["--resume", resume] if resume else [])]
        args = _parser(argv).parse_args(argv)
        settle(args)
        try:
            prep = prepare(args, approval_default="on-request")
        except Refused as exc:
            if "key" in str(exc) and ("ANTHROPIC" in str(exc) or "OPENAI" in str(exc)):
                raise RequestError.auth_required({"message": str(exc)}) from None
            raise RequestError.invalid_params({"message": str(exc)}) from None
        if mcp_servers:
            from .mcp import client_servers, untrusted

            given = client_servers(mcp_servers, prep.cwd)
            prep.extra_mcp.update(given)
            self.to_trust[prep.settings.session_id] = untrusted(given, prep.cwd)
        if self.app is None:
            from cox.surfaces.runtime import App

            self.app = App(prep.home)
            store_ready(self.app)
        tools, deferred = session_tools(self.app, prep)
        if self.client_caps is not None:
            from .bridge import Client, bridged
            from .terminal import terminal_update

            sid = prep.settings.session_id
            client = self.clients[sid] = Client(lambda: self.conn, self.loop, sid)
            tools = bridged(tools, self.client_caps, client,
                            announce=lambda call_id, tid: terminal_update(self.sessions[sid], call_id, tid))
        hooks = session_hooks(prep)
        commands = session_commands(prep, tools, hooks)
        handle = self.app.open_session(prep.settings, prep.provider, tools, prep.engine, prep.resumed,
                                       hooks=hooks, deferred=deferred)
        return handle, prep, commands

    async def _start(self, cwd: str, resume: str | None, mcp_servers: Any) -> AcpSession:
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"message": f"cwd must be an absolute path, got {cwd!r}"})
        self.loop = asyncio.get_running_loop()
        try:
            handle, prep, commands = await asyncio.to_thread(self._open, cwd, resume, mcp_servers)
        except RequestError:
            raise
        except (Exception, SystemExit) as exc:  # a bug, a store that cannot start: said, and the agent goes on
            log.exception("opening a session failed")
            from cox.surfaces.commands import _startup_failure

            raise RequestError.internal_error({"message": _startup_failure(exc, None)
                                               if isinstance(exc, Exception) else "the session could not start"}) from None
        s = prep.settings
        mode = "architect" if s.preset == "architect" else s.permission_mode.value
        session = AcpSession(self.conn, handle, prep, mode=mode, commands=commands,
                             client=self.clients.get(prep.settings.session_id))
        self.sessions[session.id] = session
        return session

    def _later(self, session: AcpSession) -> None:
        """After the answer: the slash commands (the client wants the session id first)."""
        async def send() -> None:
            from acp import helpers as h

            listed = [AvailableCommand(name="init", description="write AGENTS.md: how to build, test and work in "
                                                                "this repository")]
            for c in session.commands.catalog.commands.values() if session.commands else []:
                hint = AvailableCommandInput(root=UnstructuredCommandInput(hint=c.argument_hint)) \
                    if c.argument_hint else None
                listed.append(AvailableCommand(name=c.name, description=sanitize(c.description or c.name),
                                               input=hint))
            try:
                await self.conn.session_update(session.id, h.update_available_commands(listed))
            except Exception:
                log.exception("available_commands_update failed")
            asking = self.to_trust.pop(session.id, None)
            if asking:
                from .mcp import offer_trust

                await offer_trust(self.conn, session.id, session.prep.config, session.prep.cwd, asking)

        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(send()))

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        session = await self._start(cwd, None, mcp_servers)
        self._later(session)
        return NewSessionResponse(session_id=session.id, modes=mode_state(session.mode))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        if not SESSION_ID.fullmatch(session_id):
            raise RequestError.invalid_params({"message": f"{session_id!r} is not a cox session id; `cox sessions` "
                                               "lists them"})
        if session_id in self.sessions:
            raise RequestError.invalid_params({"message": f"session {session_id} is already open here"})
        from cox.actors.store.layout import Layout, cox_home
        from cox.actors.store.rollout import read_rollout
        from cox.protocol.messages import ProtocolError, decode_event

        path = Layout(cox_home()).rollout(session_id)
        if not path.is_file():
            raise RequestError.invalid_params({"message": f"no stored session {session_id}; `cox sessions` lists them"})
        session = await self._start(cwd, session_id, mcp_servers)
        replay = Translator(replay=True)
        for raw in read_rollout(path).events:
            try:
                event = decode_event(raw)
            except ProtocolError:
                continue
            for update in replay.updates(event):
                await self.conn.session_update(session.id, update)
        self._later(session)
        return LoadSessionResponse(modes=mode_state(session.mode))

    # --- a session's requests -------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"no session {session_id} in this cox acp; open it with "
                                               "session/new or session/load"})
        return session

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        turn = user_turn(prompt)
        if turn.text.lstrip().startswith("/") and session.commands is not None:
            turn = await asyncio.to_thread(self._slash, session, turn)
        return await session.prompt(turn)

    def _slash(self, session: AcpSession, turn: Any) -> Any:
        from cox.protocol import messages as m
        from cox.surfaces.commands import Refused, slash_turn

        try:
            got = slash_turn(turn.text, session.commands, session.prep)
        except Refused as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        if got.model:
            session.handle.submit(m.SetModel(model=got.model))
        return m.UserTurn(text=got.text, images=turn.images, allow=got.allow)  # the person's own command's allowed-tools

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse | None:
        await self._session(session_id).set_mode(mode_id)
        return SetSessionModeResponse()

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception:
                log.exception("closing session %s failed", session.id)
        self.sessions.clear()
        if self.app is not None:
            await asyncio.to_thread(self.app.close)
