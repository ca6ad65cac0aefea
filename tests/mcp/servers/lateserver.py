"""The test server (``testserver.py``: echo, slow, crash, hang, peek, zap, oops), slow to start and
changeable between runs without changing its configuration — for the tool-listing cache tests.

``COX_TEST_INIT_DELAY`` (seconds, default 1.5): how long the process waits before it reads its
first message, so ``initialize`` is answered that much later.
``COX_TEST_READY`` (a file): gets ``time.time()`` as a line just when the server starts reading
(proof of when it became reachable).
``COX_TEST_VARIANT`` (a JSON file, read at start, optional): ``{"desc": "…"}`` changes the echo
tool's description, ``{"drop": ["echo"]}`` leaves tools out, ``{"fail": true}`` exits at once
with status 3. A file and not an environment variable, because the environment is part of the
server's configuration, and the tests change the server while its configuration stays the same.
``COX_TEST_PIDFILE`` and ``COX_TEST_MARKER`` as in ``testserver.py``.
"""

from __future__ import annotations

import json
import os
import sys
import time

variant_file = os.environ.get("COX_TEST_VARIANT")
variant: dict[str, object] = {}
if variant_file and os.path.exists(variant_file):
    with open(variant_file) as f:
        variant = json.load(f)
if variant.get("fail"):
    sys.exit(3)
if isinstance(variant.get("desc"), str):
    os.environ["COX_TEST_DESC"] = str(variant["desc"])

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testserver  # type: ignore[import-not-found]  # noqa: E402 - a sibling script, found at run time; after COX_TEST_DESC is set: it reads it when its tools are declared

drop = variant.get("drop")
for name in drop if isinstance(drop, list) else []:
    testserver.server.remove_tool(str(name))

if __name__ == "__main__":
    time.sleep(float(os.environ.get("COX_TEST_INIT_DELAY", "1.5")))
    ready = os.environ.get("COX_TEST_READY")
    if ready:
        with open(ready, "a") as f:
            f.write(f"{time.time()}\n")
    testserver.server.run()
