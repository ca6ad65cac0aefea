"""Attacks on ``cox serve`` from outside the page: a cross-origin POST without the token, a
DNS-rebinding Host header, and a token of another ``cox serve`` process. Each must be refused
before a session, a model call or a tool runs: the scripted model would write a marker file in
the workspace (a session in accept-edits mode writes without asking) and record every request it
got; neither appears until the person's own request, sent last as the control, runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.web.served import Served, script

WRITE = [{"tool_calls": [{"name": "write", "input": {"path": "marker.txt", "content": "pwned"}}]}, {"text": "wrote"}]


@pytest.fixture(scope="module")
def victim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served, Path]]:
    root = tmp_path_factory.mktemp("web-attack")
    ws = root / "ws"
    ws.mkdir()
    dump = root / "requests.json"
    v = Served(ws, script(root / "v.json", WRITE, {}), root, extra_env={"COX_SCRIPTED_DUMP": str(dump)})
    other_root = root / "other"
    other_root.mkdir()
    other = Served(ws, script(root / "o.json", [], {}), other_root)
    yield v, other, dump
    assert v.stop() == 0 and other.stop() == 0


def _turn(url: str, sid: str) -> str:
    return f"{url}/api/agent/sessions/{sid}/turns"


def _nothing_ran(ws: Path, dump: Path) -> None:
    assert not (ws / "marker.txt").exists(), "a refused request ran a tool"
    assert not dump.exists(), "a refused request reached the model"


def test_outside_requests_are_refused_before_anything_runs(victim: tuple[Served, Served, Path]) -> None:
    v, other, dump = victim
    ws = Path(v.proc.args[v.proc.args.index("--cwd") + 1])  # type: ignore[union-attr, index]
    sid = v.session(mode="accept-edits")  # the person's session, waiting for a prompt
    prompt = json.dumps({"prompt": "write the marker"})
    # 1. a page on another site posts the way a form can: no token, its own Origin, text/plain
    for headers in ({"Origin": "https://evil.example", "Content-Type": "text/plain"},
                    {"Content-Type": "application/x-www-form-urlencoded"}):
        r = httpx.post(_turn(v.url, sid), content=prompt, headers=headers)
        assert r.status_code == 403, r.text
        r = httpx.post(f"{v.url}/api/agent/sessions", content="{}", headers=headers)
        assert r.status_code == 403
    _nothing_ran(ws, dump)
    # 2. DNS rebinding: evil.example now resolves to 127.0.0.1; the page (and its token) is not served to it
    rebound = {"Host": f"evil.example:{v.port}"}
    page = httpx.get(f"{v.url}/", headers=rebound)
    assert page.status_code == 403 and v.token not in page.text
    r = httpx.post(_turn(v.url, sid), content=prompt,
                   headers={**rebound, "X-Cox-Token": v.token, "Origin": f"http://evil.example:{v.port}"})
    assert r.status_code == 403 and "Host" in r.json()["error"]
    _nothing_ran(ws, dump)
    # 3. a token that looks right: another cox serve process's (a process on this machine that read its page)
    assert other.token != v.token and len(other.token) == len(v.token)
    r = httpx.post(_turn(v.url, sid), content=prompt, headers={"X-Cox-Token": other.token})
    assert r.status_code == 403 and "X-Cox-Token" in r.json()["error"]
    _nothing_ran(ws, dump)
    # the control: the person's own page posts the same prompt, and it runs
    frames = v.turn(sid, "write the marker")
    assert frames[-1] == ("done", frames[-1][1]) and frames[-1][1]["stop"] == "end_turn"
    assert (ws / "marker.txt").read_text() == "pwned"
    assert dump.exists()
