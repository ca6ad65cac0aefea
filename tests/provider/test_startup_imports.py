"""Import discipline on the path to the first request: ``cox run -p`` against a model API must not
import a provider SDK, httpx, the MCP SDK, pydantic, urwid or tree-sitter when nothing asks for them
(each costs 50 ms to 1 s at launch). Read from ``python -X importtime`` of a real run. Nor may it
build cox's classes with ``dataclasses.dataclass``, which compiles their methods at import: they
are built by ``cox.slim`` (counted in a real run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.provider import COX_CPU_PROBE
from tests.provider.loopback import Loopback, Reply
from tests.provider.test_anthropic_session import message

HEAVY = ("anthropic", "openai", "httpx", "mcp", "mcp_types", "urwid", "tree_sitter", "tree_sitter_bash", "pygments",
         "keyring", "pydantic", "pydantic_core", "starlette", "uvicorn")

OFF_THE_PATH = {
    "logging.handlers", "pickle",  # cox.surfaces.logs rotates its file itself
    "tomllib",  # parsed only when a TOML config or settings file is there (none in this run)
    "cox.config.claude", "cox.config.lines", "cox.config.project",  # with the first config or settings file read
    "cox.hooks.session", "cox.hooks.spec", "cox.hooks.trust",  # no hook found: no session object, parsing, trust
    "cox.actors.store.archive", "cox.actors.store.post_images",  # with the first archived output / edit
    "cox.actors.store.later_messages",  # the archive's, checkpoints' and readers' messages: with the first sent
    "secrets", "hmac",  # random tags come from os.urandom
    "ctypes",  # the folder watcher loads libc when it starts watching, not at import
    # the bash classifier (tree of cox.policy.bash) loads with the first bash line judged, not with the engine
    "cox.policy.bash", "cox.policy.shell", "cox.policy.bashread", "cox.policy.words", "cox.policy.braces",
    "cox.policy.evaluation", "cox.policy.scripts", "shlex",
    "tempfile",  # the home's probe is cox.atomic's exclusive create; tools make temp files when they run
    "hashlib",  # content ids are hashed with the first write (checkpoints), hook hashes with a repository's hooks
    "concurrent.futures",  # hooks run in parallel and MCP elicitations settle with the first of either
    "cox.hooks.run", "cox.hooks.answer", "cox.hooks.sandbox",  # no hook configured: how one runs is not loaded
    "inspect", "copy", "ast", "dis",  # dataclasses uses them only in dataclass() and asdict() (cox.lightimport)
    "platform",  # uuid asks it one question at import, answered by cox.lightimport
    "traceback", "tokenize",  # logging formats exceptions with traceback only when it logs one (cox.lightimport)
    "cox.policy.sandbox",  # with the first command (the env_keep setting read at start-up is cox.policy.env_keep)
    "cox.actors.session.resume",  # only a resumed session rebuilds its history
    "cox.actors.session.watchdog",  # made when a turn's tick first finds a child dead
    "cox.agents.frontmatter",  # with the first agent or skill file found (none in this run)
}
"""Light modules kept off the start-up path (a few ms each), so that none creeps back."""


def test_a_headless_run_imports_nothing_heavy(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with Loopback() as api:
        api.add(Reply(message([{"type": "text", "text": "hello there"}], "end_turn")))
        env.update(COX_HOME=str(tmp_path / "home"), ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=api.url)
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "cox.surfaces.cli", "run", "-p", "hi"],
                             cwd=ws, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "hello there" in out.stdout
    modules = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "cox.actors.session.actor" in modules  # the table is the real one
    heavy = sorted(name for name in modules if name.split(".")[0] in HEAVY)
    assert heavy == []
    light = sorted(modules & OFF_THE_PATH)
    assert light == [], f"imported on the way to the first request, though nothing there needs them: {light}"


# The first request carries only the tools' specs (cox.actors.tools.catalog): no tool's
# implementation, no LSP or MCP module, no subagent machinery is imported before it leaves.
# Stopped where bench/provider.py's CPU probe stops: when the transport sends the first request.

AT_FIRST_REQUEST = """
import os, sys
def listed_exit(code, exit=os._exit):
    print("AT_FIRST_REQUEST " + " ".join(sorted(m for m in sys.modules if m.startswith("cox."))),
          file=sys.stderr, flush=True)
    exit(code)
os._exit = listed_exit
""" + COX_CPU_PROBE

TOOLS_AT_START = {"cox.actors.tools", "cox.actors.tools.base", "cox.actors.tools.catalog",
                  "cox.actors.tools.registry", "cox.actors.tools.spelling"}
"""The tool modules the first request needs: the definition of a tool, the specs, the registry,
and Claude Code's names of the tools (``cox.agents.defs`` reads agent files with them; the agent
types are listed in the first request)."""
TOOL_CODE = ("cox.actors.tools.", "cox.actors.lsp", "cox.actors.mcp.", "cox.agents.runner", "cox.agents.graph",
             "cox.agents.evidence")


def test_the_first_request_imports_no_tool_implementation(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(COX_HOME=str(home), HOME=str(tmp_path), ANTHROPIC_API_KEY="sk-test",
               ANTHROPIC_BASE_URL="http://127.0.0.1:9")  # never reached: the probe stops at the send
    out = subprocess.run([sys.executable, "-c", AT_FIRST_REQUEST, "run", "-p", "hi"], cwd=ws, env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    line = next((x for x in out.stderr.splitlines() if x.startswith("AT_FIRST_REQUEST")), None)
    assert line is not None, out.stderr[-2000:]
    modules = set(line.split()[1:])
    assert {"cox.actors.session.actor", "cox.actors.tools.registry"} <= modules  # the tools were set up: the table is real
    code = sorted(name for name in modules - TOOLS_AT_START if name.startswith(TOOL_CODE))
    assert code == [], f"imported before the first request, though it carries only the tools' specs: {code}"


# Every cox class on the way to the first request is built by cox.slim, which compiles nothing
# at import; dataclasses.dataclass compiles ~0.4 ms of methods per class.

COUNT_DATACLASSES = """
import atexit, dataclasses, runpy, sys
built = []
real = dataclasses._process_class
def counted(cls, *args, **kwargs):
    built.append(f"{cls.__module__}.{cls.__qualname__}")
    return real(cls, *args, **kwargs)
dataclasses._process_class = counted
atexit.register(lambda: print("DATACLASSES " + " ".join(built), file=sys.stderr))
sys.argv = ["cox", *sys.argv[1:]]
@dataclasses.dataclass
class COUNTED:  # proves the counter counts
    __module__ = "cox"
runpy.run_module("cox.surfaces.cli", run_name="__main__")
"""


def scripted_run(tmp_path: Path, prelude: str) -> subprocess.CompletedProcess[str]:
    """``cox run --script … -p hi`` started by ``prelude`` (``python -c``, which instruments the
    process and then runs cox's entry), checked to have answered."""
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text('{"model": "scripted", "replies": [{"text": "hello there"}]}')
    env = {**os.environ, "COX_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", prelude, "run", "--script", str(script), "-p", "hi"],
                         cwd=ws, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "hello there" in out.stdout
    return out


def test_a_headless_run_compiles_no_dataclass_of_cox_at_import(tmp_path: Path) -> None:
    out = scripted_run(tmp_path, COUNT_DATACLASSES)
    line = next(x for x in out.stderr.splitlines() if x.startswith("DATACLASSES"))
    built = {name for name in line.split()[1:] if name.startswith("cox.")}
    assert "cox.COUNTED" in built  # the count is the real one
    extra = sorted(built - {"cox.COUNTED"})
    assert extra == [], f"built with dataclasses.dataclass at start-up (use `from cox.slim import dataclass`): {extra}"


# The cyclic collector is paused from the process's entry until the session is open
# (cox.surfaces.startup): start-up's ~300 modules and tables would be scanned over and over.

COUNT_COLLECTIONS = """
import atexit, gc, runpy, sys
seen = []
gc.callbacks.append(lambda phase, info: seen.append(info["generation"]) if phase == "start" else None)
import cox.surfaces.startup as startup
real_pause, real_over = startup.pause, startup.over
at_open = []
def pause():
    real_pause()
    at_open.append(len(seen))
def over():
    if len(at_open) == 1:
        at_open.append((len(seen) - at_open[0], startup._paused))
    real_over()
    at_open.append((gc.isenabled(), gc.get_freeze_count()))
startup.pause, startup.over = pause, over
atexit.register(lambda: print(f"COLLECTIONS {at_open}", file=sys.stderr))
sys.argv = ["cox", *sys.argv[1:]]
runpy.run_module("cox.surfaces.cli", run_name="__main__")
"""


def test_start_up_runs_no_garbage_collection_and_freezes_what_it_built(tmp_path: Path) -> None:
    out = scripted_run(tmp_path, COUNT_COLLECTIONS)
    line = next(x for x in out.stderr.splitlines() if x.startswith("COLLECTIONS"))
    _, (collections, paused), (enabled, frozen) = eval(line.split(" ", 1)[1])[:3]  # noqa: S307  # our own repr
    assert paused, "the collector was not paused at the process's entry"
    assert collections == 0, f"{collections} garbage collections ran before the session was open"
    assert enabled, "the collector stayed off once the session was open"
    assert frozen > 10_000, f"only {frozen} objects were frozen out of later collections"


# Up to the first model request nothing builds a cox class with typing.NamedTuple (it compiles
# every field's annotation and a __new__ per class), no cox module compiles a regex while it is
# imported (cox.lazyre compiles on first use), and no permission rule's glob is compiled: the
# engine and its read guard are made at session start, their regexes with the first path checked.

COUNT_AT_FIRST_REQUEST = r"""
import json, os, re._compiler, sys, typing

named, at_import, globs = [], [], []
real_nt = typing.NamedTupleMeta.__new__
def counted_nt(meta, name, bases, ns, **kw):
    if str(ns.get("__module__", "")).startswith("cox"):
        named.append(f"{ns['__module__']}.{name}")
    return real_nt(meta, name, bases, ns, **kw)
typing.NamedTupleMeta.__new__ = counted_nt
real_compile = re._compiler.compile
def counted_compile(p, flags=0):
    f, frames = sys._getframe(1), []
    while f is not None:
        frames.append((f.f_code.co_filename, f.f_code.co_name, f.f_globals.get("__name__")))
        f = f.f_back
    # the code that asked for it: past the re package and cox.lazyre's stand-in
    asker = next(name for name, _, _ in frames if "/re/" not in name and not name.endswith("/cox/lazyre.py"))
    if "/cox/" in asker:
        if any(fn == "<module>" and "/cox/" in name and mod != "__main__" for name, fn, mod in frames):
            at_import.append(f"{asker.rsplit('/cox/', 1)[1]}: {str(p)[:40]!r}")  # a cox module is importing
        if asker.endswith(("/cox/policy/globs.py", "/cox/policy/reads.py")):
            globs.append(str(p)[:60])
    return real_compile(p, flags)
re._compiler.compile = counted_compile

# proofs that the counters count: a NamedTuple of module "cox", a regex compiled by the module
# body of a file named like a cox module, one by a function of a file named like globs.py
exec("import typing\nclass COUNTED(typing.NamedTuple):\n    a: int", {"__name__": "cox"})
exec(compile("import re; re.compile('(?:proof-at-import)')", "/x/cox/proof.py", "exec"), {"__name__": "cox.proof"})
exec(compile("def f():\n    import re; re.compile('(?:proof-glob)')", "/x/cox/policy/globs.py", "exec"), ns := {})
ns["f"]()

def counted_exit(code, exit=os._exit):  # bench/provider.py's probe exits at the first request
    print("AT_FIRST_REQUEST " + json.dumps([named, at_import, globs]), file=sys.stderr, flush=True)
    exit(code)
os._exit = counted_exit
""" + COX_CPU_PROBE


def test_before_the_first_request_no_named_tuple_no_import_regex_and_no_rule_glob(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with Loopback() as api:  # never asked: the probe stops at the first request
        env.update(COX_HOME=str(tmp_path / "home"), ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=api.url)
        out = subprocess.run([sys.executable, "-c", COUNT_AT_FIRST_REQUEST, "run", "-p", "hi"], cwd=ws, env=env,
                             capture_output=True, text=True, timeout=60, check=False)
    line = next((x for x in out.stderr.splitlines() if x.startswith("AT_FIRST_REQUEST")), None)
    assert line is not None, out.stderr[-2000:]
    named, at_import, globs = json.loads(line.split(" ", 1)[1])
    assert (named[0], at_import[0], globs[0]) == ("cox.COUNTED", "proof.py: '(?:proof-at-import)'", "(?:proof-glob)")
    assert named[1:] == [], f"built with typing.NamedTuple (use cox.slim's dataclass): {named[1:]}"
    assert at_import[1:] == [], f"compiled while imported (use cox.lazyre.compile): {at_import[1:]}"
    assert globs[1:] == [], f"permission rule regexes compiled before any path was checked: {globs[1:]}"
