"""``cox.lightimport``: importing cox imports ``dataclasses`` without ``inspect`` and ``copy`` ,
``logging`` without ``traceback``, ``uuid`` without ``platform``, and everything that needs them still works, from any thread. In a fresh interpreter:
this test process has imported dataclasses long ago."""

from __future__ import annotations

import subprocess
import sys

PROBE = r"""
import sys, threading
import cox, dataclasses
assert "inspect" not in sys.modules and "copy" not in sys.modules, sorted(sys.modules)
errors = []
def build(i):
    try:
        cls = dataclasses.make_dataclass(f"C{i}", [("x", int), ("y", list)])
        assert cls.__doc__ == f"C{i}(x: int, y: list)", cls.__doc__  # inspect.signature, through the stand-in
        obj = cls(1, [[2]])
        copied = dataclasses.asdict(obj)  # copy.deepcopy, through the stand-in
        assert copied == {"x": 1, "y": [[2]]} and copied["y"] is not obj.y
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=build, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors, errors
import copy, inspect
assert type(inspect) is type(sys) and type(copy) is type(sys)  # every other importer gets the real modules
assert inspect.signature is sys.modules["inspect"].signature
print("ok")
"""


def test_cox_imports_dataclasses_without_inspect_and_copy_and_dataclasses_still_work() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_a_host_that_imported_dataclasses_first_keeps_it_as_it_was() -> None:
    probe = ("import sys, dataclasses, inspect\nimport cox\n"
             "assert dataclasses.inspect is inspect, dataclasses.inspect\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


UUID_PROBE = r"""
import os, sys
import cox, uuid
assert "platform" not in sys.modules, "the stand-in stayed, or something imported platform"
import platform
assert type(platform) is type(sys) and platform.python_version(), platform  # the real module
assert uuid._LINUX == (platform.system() == "Linux") and uuid._AIX == (platform.system() == "AIX")
assert len({uuid.uuid4() for _ in range(3)}) == 3
print("ok")
"""


def test_cox_imports_uuid_without_platform_and_uuid_knows_its_system() -> None:
    out = subprocess.run([sys.executable, "-c", UUID_PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_a_host_that_imported_platform_first_keeps_it() -> None:
    probe = "import platform, sys\nimport cox, uuid\nassert uuid.platform is platform\nprint('ok')"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


LOGGING_PROBE = r"""
import io, sys, threading
import cox, logging
assert "traceback" not in sys.modules and "tokenize" not in sys.modules, sorted(sys.modules)
out = io.StringIO()
log = logging.getLogger("probe")
log.addHandler(logging.StreamHandler(out))
def fail():
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("caught")  # formats the traceback: through the stand-in
threads = [threading.Thread(target=fail) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
text = out.getvalue()
assert text.count("Traceback (most recent call last)") == text.count("ValueError: boom") == 4, text
log.info("x", stack_info=True)
import traceback
assert type(traceback) is type(sys) and traceback.format_exc  # everyone else gets the real module
print("ok")
"""


def test_cox_imports_logging_without_traceback_and_logging_still_formats_one() -> None:
    out = subprocess.run([sys.executable, "-c", LOGGING_PROBE], capture_output=True, text=True, timeout=60,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
