"""Property: however a read-only command spells a denied path — quotes, escapes, globs, ``./``
and ``..`` detours, ``$HOME``/``~``/``/proc/self/root``, a redirect — it never runs unasked."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cox.policy.bash import classify
from cox.policy.permission import Engine
from cox.protocol.types import ToolCall


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Engine]:
    base = tmp_path_factory.mktemp("props")
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("k\n")
    (home / ".ssh" / "known_hosts").write_text("h\n")
    root = base / "ws"
    root.mkdir()
    (root / ".env").write_text("e\n")
    return home, Engine.compile([], [], ["Read(./.env)"], home=home, roots=[root])


def _char(ch: str, how: int) -> str:
    if how == 1:
        return f"'{ch}'"
    if how == 2:
        return f'"{ch}"'
    if how == 3:
        return "\\" + ch
    if how == 4 and ch not in "./":
        return "?"
    if how == 5 and ch not in "./":
        return f"[{ch}]"
    return ch


@st.composite
def spelling(draw: st.DrawFn, home: str) -> str:
    target = draw(st.sampled_from([".ssh/id_rsa", ".env"]))
    if target == ".env":
        prefix = draw(st.sampled_from(["", "./", "$PWD/", "~+/", "/proc/self/cwd/", "src/../", ".//"]))
    else:
        name = home.rsplit("/", 1)[1]
        prefix = draw(st.sampled_from(["~/", "$HOME/", '"$HOME"/', "${HOME}/", home + "/", "/proc/self/root" + home + "/",
                                       home + "/../" + name + "/", "~/./", home + "//", "//" + home.lstrip("/") + "/"]))
    hows = draw(st.lists(st.integers(0, 5), min_size=len(target), max_size=len(target)))
    return prefix + "".join(_char(c, h) for c, h in zip(target, hows, strict=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), command=st.sampled_from(["cat {}", "head -n1 {}", "grep x {}", "cat < {}", "wc -l {}",
                                                "cat -- {}", "sort {} | head"]))
def test_no_spelling_of_a_denied_path_runs_unasked(box: tuple[Path, Engine], data: st.DataObject, command: str) -> None:
    home, engine = box
    line = command.format(data.draw(spelling(str(home))))
    c = classify(line)
    call = ToolCall(id="c", name="bash", input={"command": line}, risk=c.risk, subject=line,
                    segments=list(c.segments), opaque=c.opaque)
    assert engine.decide(call).kind != "allow", line
