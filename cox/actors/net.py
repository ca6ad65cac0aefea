"""Aborting an HTTP response from another thread.

``response.close()`` alone can block (or leave a ``recv`` waiting) while the server sends
nothing; shutting the socket down first wakes the blocked reader at once (RUNTIME.md), over TLS
too. Used by the provider streams and web_fetch when a turn is interrupted.
"""

from __future__ import annotations

import socket
from typing import Any


def abort_response(response: Any) -> None:
    stream = response.extensions.get("network_stream")
    sock = None
    if stream is not None:
        try:
            sock = stream.get_extra_info("socket")
        except Exception:
            sock = None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    try:
        response.close()
    except Exception:  # closing a half-dead stream may complain; the read is woken either way
        pass
