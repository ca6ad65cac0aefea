"""Start-up reads the config without resolving annotations through ``typing.get_type_hints``
(``cox.protocol.record.type_hints``), and builds the table of ``COX_*`` variables only when one is
set (``cox.config.loader``): together ~2 ms of every ``cox run``; and the record codec compiles no
JSON encoder for an event written only a few times. Counted in a real run."""

from __future__ import annotations

from pathlib import Path

from tests.provider.test_startup_imports import scripted_run

COUNT_TYPE_HINTS = """
import atexit, runpy, sys, typing
calls = []
real = typing.get_type_hints
def counted(obj, *args, **kwargs):
    calls.append(getattr(obj, "__qualname__", repr(obj)))
    return real(obj, *args, **kwargs)
typing.get_type_hints = counted
import cox.config.loader as loader
codec = sys.modules["cox.protocol.record"]
generated = []
real_generate = codec._json_encoder
codec._json_encoder = lambda plan: generated.append(plan) or real_generate(plan)
atexit.register(lambda: print(f"TYPE_HINTS {calls} {loader.env_vars.cache_info().currsize}", file=sys.stderr))
atexit.register(lambda: print(f"ENCODERS {len(generated)}", file=sys.stderr))
sys.argv = ["cox", *sys.argv[1:]]
runpy.run_module("cox.surfaces.cli", run_name="__main__")
"""


def test_start_up_resolves_no_annotation_with_get_type_hints(tmp_path: Path) -> None:
    out = scripted_run(tmp_path, COUNT_TYPE_HINTS)
    line = next(x for x in out.stderr.splitlines() if x.startswith("TYPE_HINTS"))
    calls, table = line.split(" ", 1)[1].rsplit(" ", 1)
    assert calls == "[]", f"typing.get_type_hints ran at start-up for {calls}"
    assert table == "0", "the table of COX_* variables was built though none is set"


def test_start_up_generates_no_json_encoder(tmp_path: Path) -> None:
    """The few events written once at start-up (session_started, user_message …) are written by
    the loop over their fields; a class's encoder is compiled after its GENERATE_AFTER-th use."""
    out = scripted_run(tmp_path, COUNT_TYPE_HINTS)
    line = next(x for x in out.stderr.splitlines() if x.startswith("ENCODERS"))
    assert line == "ENCODERS 0"
