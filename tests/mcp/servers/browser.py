"""A stand-in for a web browser, for ``BROWSER``: open the URL it is given and follow redirects
the way a browser would (including the last one, to cox's loopback listener), without any UI.

``COX_TEST_BROWSER_LOG`` gets one line per URL visited. ``COX_TEST_BROWSER`` changes what the
"user" does: ``follow`` (default), ``close`` (open nothing: the user closed the page),
``tamper`` (the redirect to cox comes back with a different ``state``).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def visit(url: str) -> tuple[int, str | None]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, None
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Location")


def main() -> int:
    url = sys.argv[1]
    mode = os.environ.get("COX_TEST_BROWSER", "follow")
    log = os.environ.get("COX_TEST_BROWSER_LOG")
    if mode == "close":
        return 0
    for _ in range(5):
        if log:
            with open(log, "a") as f:
                f.write(url + "\n")
        status, location = visit(url)
        if location is None:
            return 0
        if mode == "tamper" and "state=" in location:
            parts = urlsplit(location)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            query["state"] = "not-the-state-cox-sent"
            location = urlunsplit(parts._replace(query=urlencode(query)))
        url = location
    return 0


if __name__ == "__main__":
    sys.exit(main())
