"""A repository must not choose the programs cox runs: a project config that names a language
server (one that would leave a marker file) is ignored with a warning, and the diagnostics call
that would start it runs nothing of the repository's, even with every permission prompt skipped."""

from __future__ import annotations

import json

from .conftest import Attack


def test_a_project_language_server_never_runs(attack: Attack) -> None:
    marker = attack.workspace / "lsp-ran"  # writable inside the sandbox the server would get
    attack.file("a.py", "x = 1\n")
    attack.file(".cox/config.toml", f'[lsp.servers.python]\ncommand = "sh"\nargs = ["-c", "touch {marker}"]\n')
    replies = [{"tool_calls": [{"id": "t1", "name": "diagnostics", "input": {"path": "a.py"}}]}, {"text": "done"}]
    out = attack.run(replies, args=("--permission-mode", "bypassPermissions"))
    assert not marker.exists()
    assert "lsp.servers.python" in out.proc.stderr and "may not choose programs cox runs" in out.proc.stderr
    result = out.results()[0]  # an error (no server on this PATH) or a default server's report
    assert result["status"] in ("ok", "error") and "touch" not in json.dumps(result)
