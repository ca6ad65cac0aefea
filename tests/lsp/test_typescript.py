"""TypeScript through typescript-language-server (from npm, package.json): a type error's
diagnostics, then references across two files from the same server."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.tools.diagnostics import DiagnosticsTool
from cox.actors.tools.navigate import ReferencesTool
from cox.protocol.types import ToolStatus
from cox.supervisors import shutdown

from .conftest import call, env_of, make_pool, need

pytestmark = pytest.mark.usefixtures("servers_on_path")


def test_typescript_diagnostics_and_references(tmp_path: Path) -> None:
    need("typescript-language-server")
    (tmp_path / "a.ts").write_text("export function area(w: number, h: number): number {\n  return w * h;\n}\n")
    (tmp_path / "b.ts").write_text('import { area } from "./a";\nexport const s: string = area(1, 2);\n')
    pool = make_pool(tmp_path, quiet_ms=300)
    try:
        env = env_of(tmp_path, pool)
        result = call(DiagnosticsTool(), env, path="b.ts")
        assert result.status is ToolStatus.OK, result.visible
        lines = result.visible.splitlines()
        assert lines[0] == "b.ts:2:14: error: Type 'number' is not assignable to type 'string'. [typescript 2322]"
        assert lines[-1] == "b.ts: 1 error"
        refs = call(ReferencesTool(), env, path="a.ts", line=1, col=17)
        assert refs.visible.splitlines() == [
            "a.ts:1:17: export function area(w: number, h: number): number {",
            'b.ts:1:10: import { area } from "./a";',
            "b.ts:2:26: export const s: string = area(1, 2);",
        ]
    finally:
        pool.close()
        shutdown()
