"""A web agent session survives a restart of ``cox serve``: the new process loads the unknown id
from the store (the rollout rebuilt, the session's lock claimed) and the next turn's request
carries the earlier turns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .served import Served, script, text_of


def test_a_session_survives_a_restart(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = Served(ws, script(tmp_path / "a.json", [{"text": "noted: the colour is teal"}], {}), tmp_path)
    try:
        sid = first.session()
        assert text_of(first.turn(sid, "remember teal")) == "noted: the colour is teal"
    finally:
        assert first.stop() == 0, "".join(first.stderr)
    dump = tmp_path / "requests.json"
    second = Served(ws, script(tmp_path / "b.json", [{"text": "you said teal"}], {}), tmp_path,
                    extra_env={"COX_SCRIPTED_DUMP": str(dump)})
    try:
        frames = second.turn(sid, "what colour?")
        assert text_of(frames) == "you said teal"
        assert frames[0] == ("start", {"turn": 2, "model": "scripted"})  # the stored session's next turn
        sent = json.dumps(json.loads(dump.read_text())[-1]["messages"])
        assert "remember teal" in sent and "noted: the colour is teal" in sent and "what colour?" in sent
        other = _session_elsewhere(tmp_path)
        r = second.post(f"/api/agent/sessions/{other}/turns", {"prompt": "hi"})
        assert r.status_code == 404 and "belongs to" in r.json()["error"]
    finally:
        assert second.stop() == 0, "".join(second.stderr)


def _session_elsewhere(tmp_path: Path) -> str:
    """A session stored in the same home by ``cox run`` in another folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "COX_HOME": str(tmp_path / "cox-home"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "hi", "--output-format", "json",
                          "--script", str(script(tmp_path / "c.json", [{"text": "ok"}], {}))],
                         cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60, check=True)
    return str(json.loads(out.stdout)["session_id"])
