"""``cox serve``'s ASGI application: the page, the web chat and the web agent mode.

    GET  /                                             the page (this process's token written in)
    GET  /api/config                                   models, effort levels, default efforts
    POST /api/chat                                     one model response as SSE (``chat``)
    POST /api/agent/sessions                           start a session: {model, effort, thinking_display, mode}
    POST /api/agent/sessions/{id}/turns                run a turn: {prompt, effort}, answered as SSE
    POST /api/agent/sessions/{id}/approvals/{call_id}  answer an approval: {answer: yes | no | always}

Every request first passes ``security.Guard`` (Host, Origin, token, size); every body is checked
by ``validate`` (422) before a session or the model is touched. Starlette is imported here only,
so nothing but ``cox serve`` pays for it.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from .frames import Frame
from .security import Guard, allowed_hosts
from .sessions import Agents, Busy, Unknown
from .stream import END, EventStream
from .validate import (
    MAX_BODY,
    Invalid,
    Offer,
    approval_answer,
    chat_request,
    parse_body,
    session_request,
    turn_request,
)

PAGE_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline' https://fonts.googleapis.com; "
            "font-src https://fonts.gstatic.com; connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'")
"""The page runs its own inline script only, talks to this server only, and may not be framed (a
framing page could trick a click on an approval button)."""


def page(token: str) -> str:
    html = resources.files("cox.surfaces.web").joinpath("page.html").read_text(encoding="utf-8")
    return html.replace("{{COX_TOKEN}}", token)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def body_of(request: Request) -> dict[str, Any]:
    """The JSON object a POST carries, read at most 8 MB far (a body without a length too)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise Invalid(f"the request body is over {MAX_BODY // (1024 * 1024)} MB; send less")
        chunks.append(chunk)
    return parse_body(b"".join(chunks))


def relay(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Frame]) -> Any:
    """A thread-safe ``deliver``: frames onto ``queue`` (None: the end)."""

    def deliver(frame: Frame | None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, END if frame is None else frame)
        except RuntimeError:  # the loop closed (the server stopped): nobody is listening
            pass

    return deliver


class Web:
    """What the routes share: the token, the offer of models, the chat relay, the sessions."""

    def __init__(self, token: str, offer: Offer, chat: Any, agents: Agents, bound: str) -> None:
        self.token = token
        self.offer = offer
        self.chat = chat
        self.agents = agents
        self.bound = bound

    async def index(self, request: Request) -> Response:
        return HTMLResponse(page(self.token), headers={"content-security-policy": PAGE_CSP,
                                                       "x-frame-options": "DENY", "cache-control": "no-store",
                                                       "referrer-policy": "no-referrer"})

    async def config(self, request: Request) -> Response:
        return JSONResponse(self.offer.config())

    async def chat_route(self, request: Request) -> Response:
        try:
            settings = chat_request(await body_of(request), self.offer)
        except Invalid as exc:
            return error(422, str(exc))
        queue: asyncio.Queue[Frame] = asyncio.Queue()
        cancel = self.chat.start(settings, relay(asyncio.get_running_loop(), queue))
        return EventStream(queue, lambda finished: None if finished else cancel())  # type: ignore[return-value]

    async def new_session(self, request: Request) -> Response:
        try:
            settings = session_request(await body_of(request), self.offer)
        except Invalid as exc:
            return error(422, str(exc))
        try:
            bridge = await run_in_threadpool(self.agents.create, settings)
        except Unknown as exc:
            return error(422, str(exc))
        return JSONResponse({"session_id": bridge.session_id, "model": bridge.model, "effort": settings.effort,
                             "thinking_display": settings.thinking_display, "mode": request_mode(settings.mode)},
                            status_code=201)

    async def turn(self, request: Request) -> Response:
        try:
            prompt, effort = turn_request(await body_of(request))
        except Invalid as exc:
            return error(422, str(exc))
        sid = request.path_params["session_id"]
        try:  # a live session without a thread hop; a stored one is loaded in a worker thread
            live = self.agents.live(sid)
            bridge = live if live is not None else await run_in_threadpool(self.agents.get, sid)
        except Unknown as exc:
            return error(404, str(exc))
        queue: asyncio.Queue[Frame] = asyncio.Queue()
        deliver = relay(asyncio.get_running_loop(), queue)
        try:
            if bridge.cancelling:  # waits for the cancelled turn to end: not on the event loop
                await run_in_threadpool(bridge.begin, deliver, prompt, effort)
            else:
                bridge.begin(deliver, prompt, effort)
        except Busy as exc:
            return error(409, str(exc))
        except Unknown as exc:
            return error(404, str(exc))
        return EventStream(queue, bridge.closed)  # type: ignore[return-value]

    async def approval(self, request: Request) -> Response:
        try:
            decision = approval_answer(await body_of(request))
        except Invalid as exc:
            return error(422, str(exc))
        try:
            bridge = await run_in_threadpool(self.agents.get, request.path_params["session_id"])
            bridge.answer(request.path_params["approval_id"], decision)
        except Unknown as exc:
            return error(404, str(exc))
        return JSONResponse({"approval_id": request.path_params["approval_id"], "answer": decision.value})


def request_mode(permission_mode: str) -> str:
    return "accept-edits" if permission_mode == "acceptEdits" else "default"


async def not_found(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 404)
    if status == 405:
        return error(405, f"{request.method} is not allowed on {request.url.path}")
    return error(status, f"no route {request.url.path}; the routes are /, /api/config, /api/chat and "
                         "/api/agent/sessions[/{id}/turns | /{id}/approvals/{approval_id}]")


def build(web: Web) -> Any:
    """The ASGI app: the routes behind the guard."""
    routes = [
        Route("/", web.index, methods=["GET"]),
        Route("/api/config", web.config, methods=["GET"]),
        Route("/api/chat", web.chat_route, methods=["POST"]),
        Route("/api/agent/sessions", web.new_session, methods=["POST"]),
        Route("/api/agent/sessions/{session_id}/turns", web.turn, methods=["POST"]),
        Route("/api/agent/sessions/{session_id}/approvals/{approval_id}", web.approval, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    return Guard(app, web.token, allowed_hosts(web.bound))


def offer_of(prep: Any) -> Offer:
    """The models the page may pick: the configured one first, then the catalog's models of the
    same provider and the ones the config describes (a scripted run offers its model only)."""
    from cox.actors.provider.catalog import CATALOG

    kind = str(getattr(prep.provider, "name", "scripted"))
    first = prep.settings.model
    more = [] if kind == "scripted" else [n for n, info in CATALOG.items() if info.provider == kind]
    more += [n for n in prep.config.models if kind != "scripted"]
    return Offer(list(dict.fromkeys([first, *more])), kind)

