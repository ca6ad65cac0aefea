"""``cox serve``: the web chat and the web agent mode on http://127.0.0.1:PORT/.

It listens on ``serve.host`` (127.0.0.1 unless your own config says otherwise; a project's
config cannot change it) and ``--port`` (else ``serve.port``, 8765; 0 picks a free one), and
prints the address on stderr once it accepts connections. Starlette and uvicorn are imported
when the command runs, never by ``cox run``.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from typing import Any

ADDRESS_LINE = "cox serve: listening on "


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="the web chat and web agent mode in your browser (loopback only)")
    p.add_argument("--port", type=int, default=None, help="the port (default serve.port, 8765; 0: a free one)")
    p.add_argument("--cwd", metavar="DIR", default=argparse.SUPPRESS, help="the workspace folder (default: here)")
    p.add_argument("--script", metavar="FILE", default=argparse.SUPPRESS,
                   help="use the scripted model with this JSON script")
    p.add_argument("--model", default=argparse.SUPPRESS, help="the default model of the page")


def base_args(args: Any) -> argparse.Namespace:
    """``cox run``'s defaults with this command line's workspace, model and script: what every
    session of this server is prepared from (``commands.prepare``)."""
    from ..cli import _parser

    base = _parser(["run"]).parse_args(["run"])
    for key in ("cwd", "script", "model", "permission_mode", "verbose", "mode"):
        value = getattr(args, key, None)
        if value is not None:
            setattr(base, key, value)
    base.approve = "on-request"
    return base


def _stopped(signum: int, frame: Any) -> None:
    """A stop signal after uvicorn's own shutdown: nothing left to do but the cleanup under way."""


def run(args: Any) -> int:
    from ..commands import Refused, prepare, store_ready
    from ..runtime import App

    base = base_args(args)
    try:
        prep = prepare(argparse.Namespace(**vars(base)), approval_default="on-request")
    except Refused as exc:
        print(f"cox: {exc}", file=sys.stderr)
        return exc.code
    host = prep.config.serve.host
    port = args.port if args.port is not None else prep.config.serve.port
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by every accepted connection: an SSE frame goes out at once instead of waiting
    # (Nagle) for the ACK of the frame before it, which the browser's delayed ACK holds 40 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        print(f"cox: cannot listen on {host}:{port} ({exc.strerror}); pass another --port (0 picks a free one)",
              file=sys.stderr)
        return 1
    import uvicorn

    from .app import Web, build, offer_of
    from .chat import Chat, system_prompt
    from .security import new_token
    from .sessions import Agents

    app = App(prep.home)
    agents = Agents(app, base)
    try:
        store_ready(app)
        web = Web(new_token(), offer_of(prep), Chat(prep.provider, system_prompt(prep.cwd, prep.home),
                                                    prep.settings.model_overrides), agents, host)
        config = uvicorn.Config(build(web), log_level="warning", lifespan="off", timeout_graceful_shutdown=3,
                                access_log=False)
        server = uvicorn.Server(config)
        shown = f"[{host}]" if ":" in host else host
        startup = server.startup

        async def started(sockets: Any = None) -> None:
            await startup(sockets)
            print(f"{ADDRESS_LINE}http://{shown}:{sock.getsockname()[1]}/", file=sys.stderr, flush=True)

        server.startup = started  # type: ignore[method-assign]
        # uvicorn stops gracefully on SIGINT/SIGTERM, then raises the signal again against the
        # handlers it found: these let that pass, so the sessions below close (their rollouts
        # synced, their locks released) and the command ends with 0.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _stopped)
        server.run(sockets=[sock])
    finally:
        agents.close()
        app.close()
        sock.close()
    return 0
