"""Attack: a hostile model writes (and reads) outside the workspace through ``cox acp``'s client
fs bridge.

The editor (the ACP client) offers ``fs/write_text_file`` and approves everything, and the
session runs in ``bypassPermissions``: the only guard left is the file tools' confinement, which
runs before anything is sent to the client. Every way out — an absolute path, ``..``, a symlink
in the workspace pointing out, an ``apply_patch`` adding a file outside — must land neither on
disk nor in the client's buffers; no read out of it is asked of the client or shown."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from tests.acp.driver import Editor, agent, run, script


def test_a_write_outside_the_workspace_reaches_neither_the_buffer_nor_the_disk(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "link").symlink_to(outside, target_is_directory=True)
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "key").write_text("SECRET-5521")
    (ws / "key").symlink_to(secrets / "key")
    patch = f"*** Begin Patch\n*** Add File: {outside / 'm4'}\n+pwned\n*** End Patch\n"
    calls = [
        {"id": "x1", "name": "write", "input": {"path": str(outside / "m1"), "content": "pwned"}},
        {"id": "x2", "name": "write", "input": {"path": "../outside/m2", "content": "pwned"}},
        {"id": "x3", "name": "write", "input": {"path": "link/m3", "content": "pwned"}},
        {"id": "x4", "name": "apply_patch", "input": {"patch": patch}},
        {"id": "x5", "name": "edit", "input": {"path": "link/../../outside/m5", "old_string": "",
                                                "new_string": "pwned"}},
        {"id": "r1", "name": "read", "input": {"path": str(secrets / "key")}},
        {"id": "r2", "name": "read", "input": {"path": "key"}},
        {"id": "r3", "name": "read", "input": {"path": "../secrets/key"}},
        {"id": "ok", "name": "write", "input": {"path": "inside.txt", "content": "fine"}},
    ]
    s = script(tmp_path / "s.json", [{"tool_calls": [c]} for c in calls] + [{"text": "done"}])
    editor = Editor(["allow_always"] * 10, fs=True)

    async def go() -> None:
        async with agent(editor, ws, s, "--permission-mode", "bypassPermissions") as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("go")])

    run(go())
    assert list(outside.iterdir()) == []
    assert editor.buffers == {str(ws / "inside.txt"): "fine"}  # the bridge works; nothing else passed it
    statuses = {u.tool_call_id: u.status for u in editor.of("tool_call_update") if u.status}
    assert statuses == {"x1": "failed", "x2": "failed", "x3": "failed", "x4": "failed", "x5": "failed",
                        "r1": "failed", "r2": "failed", "r3": "failed", "ok": "completed"}
    assert editor.reads == []  # the client was never asked for a file outside the workspace
    assert "SECRET-5521" not in str([u.model_dump() for _, u in editor.updates])


def test_a_secret_in_tool_output_or_the_reply_never_reaches_the_editor(tmp_path: Path) -> None:
    """The updates are the rollout's scrubbed events: a key a command prints, or one the model
    streams split across deltas, reaches the client as «redacted»."""
    ws = tmp_path / "ws"
    ws.mkdir()
    key = "sk-" + "Q7w" * 10
    aws = "AKIA" + "Z3X9" * 4
    (ws / "creds").write_text(key + "\n")
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "c1", "name": "bash", "input": {"command": "cat creds"}}]},
        {"text": f"the key is {aws} ok", "chunk": 3},
    ])
    editor = Editor(["allow_once"])

    async def go() -> None:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("show")])

    run(go())
    seen = str([u.model_dump() for _, u in editor.updates])
    assert key not in seen and aws not in seen
    assert "«redacted»" in seen and "«redacted»" in editor.text()
