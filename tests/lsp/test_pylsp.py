"""The Python fallback, python-lsp-server (pylsp, with pyflakes, as the project's set-up installs
it), in its sandbox: diagnostics, then definition across two files from the same server. Inside
the sandbox the home is read-only: jedi, under pylsp, failed to write its cache there and
answered nothing, until the servers' caches went to the sandbox's private /tmp."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.tools.diagnostics import DiagnosticsTool
from cox.actors.tools.navigate import DefinitionTool
from cox.protocol.types import ToolStatus
from cox.supervisors import shutdown

from .conftest import call, env_of, make_pool, need

pytestmark = pytest.mark.usefixtures("servers_on_path")


def test_pylsp_diagnostics_and_definition_in_its_sandbox(tmp_path: Path) -> None:
    need("pylsp")
    pytest.importorskip("pyflakes", reason="pylsp reports no diagnostics without pyflakes (the test extra has it)")
    (tmp_path / "a.py").write_text("def area(w, h):\n    return w * h\n")
    (tmp_path / "b.py").write_text("import os\nfrom a import area\n\nsize = area(2, 3) + missing\n")
    pool = make_pool(tmp_path, {"python": {"command": "pylsp"}}, quiet_ms=300)
    try:
        env = env_of(tmp_path, pool)
        result = call(DiagnosticsTool(), env, path="b.py")
        assert result.status is ToolStatus.OK, result.visible
        assert result.visible.splitlines() == [
            "b.py:4:21: error: undefined name 'missing' [pyflakes]",
            "b.py:1:1: warning: 'os' imported but unused [pyflakes]",
            "b.py: 1 error, 1 warning",
        ]
        found = call(DefinitionTool(), env, path="b.py", line=4, col=8)
        assert found.visible.splitlines() == ["a.py:1:5: def area(w, h):"], found.visible
    finally:
        pool.close()
        shutdown()
