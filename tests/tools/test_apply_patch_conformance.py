"""Codex CLI's 23 apply_patch scenarios, run through ``cox apply-patch``'s ``run()``.

A scenario passes when the final tree equals ``files_after`` and the command fails exactly when
``expected_error`` is set (its wording is advisory, but cox keeps Codex's first words, so it is
checked too), and on success stdout is Codex's summary byte for byte.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from cox.surfaces.patch_cli import run

TESTDATA = Path(__file__).resolve().parents[2].parent / "shared" / "testdata"
SCENARIOS = TESTDATA / "codex_apply_patch_scenarios.jsonl"

pytestmark = pytest.mark.skipif(
    not SCENARIOS.is_file(),
    reason=f"{SCENARIOS} is absent (a clone outside the workplace has no ../shared/testdata)")


def _load() -> list[dict[str, Any]]:
    if not SCENARIOS.is_file():
        return []
    return [json.loads(line) for line in SCENARIOS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file()}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def test_all_23_scenarios_are_there() -> None:
    assert len(_load()) == 23


@pytest.mark.parametrize("scenario", _load(), ids=lambda s: s["name"])
def test_codex_scenario(scenario: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _write(root, scenario["files_before"])
    out, err = io.StringIO(), io.StringIO()
    code = run(argparse.Namespace(cwd=str(root)), stdin=io.StringIO(scenario["patch"]), stdout=out, stderr=err)
    expected_error = scenario["expected_error"]

    if scenario["name"].startswith("015_"):
        # Codex applies hunk by hunk, so its created.txt survives the failing update that follows.
        # cox checks the whole patch before writing and applies all-or-nothing by design: the
        # command fails the same way, and the tree is exactly what it was (empty), not Codex's.
        assert code == 1
        assert expected_error["message_contains"] in err.getvalue()
        assert _tree(root) == scenario["files_before"] == {}
        assert scenario["files_after"] == {"created.txt": "hello\n"}  # Codex's, knowingly not ours
        return

    assert _tree(root) == scenario["files_after"]
    if expected_error is None:
        assert code == 0, err.getvalue()
        assert out.getvalue() == scenario["expected_stdout"]
        assert err.getvalue() == ""
    else:
        assert code == 1
        assert out.getvalue() == ""
        assert err.getvalue().startswith("cox: apply-patch: ")
        assert expected_error["message_contains"] in err.getvalue()
