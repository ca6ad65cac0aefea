"""The sandbox's argv, built from a policy: what is bound, masked and read-only, and in which order
(later mounts cover earlier ones, so order is part of the guarantee)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cox.policy.sandbox import (
    Mask,
    SandboxPolicy,
    bwrap_argv,
    describe,
    describe_dict,
    env_keep_of,
    explain,
    fail_closed_sentence,
    harden,
    read_deny_patterns,
    scrub_env,
)
from cox.protocol.types import SandboxMode

WW = SandboxMode.WORKSPACE_WRITE


def pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    """Every ``flag SRC DEST`` of an argv, as (SRC, DEST)."""
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def singles(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def index(argv: list[str], *words: str) -> int:
    """Where the sequence ``words`` starts in argv."""
    for i in range(len(argv) - len(words) + 1):
        if tuple(argv[i:i + len(words)]) == words:
            return i
    raise AssertionError(f"{words} not in {argv}")


def test_danger_full_access_is_bare():
    assert bwrap_argv(SandboxPolicy(SandboxMode.DANGER_FULL_ACCESS), ["bash", "-c", "x"], cwd=Path("/")) == \
        ["bash", "-c", "x"]


def test_workspace_write_binds_the_private_tmp_before_the_roots():
    policy = SandboxPolicy(WW, (Path("/tmp/ws"),), tmp=Path("/tmp/cox-tmp-1"))
    argv = bwrap_argv(policy, ["true"], cwd=Path("/tmp/ws"))
    assert index(argv, "--ro-bind", "/", "/") < index(argv, "--bind", "/tmp/cox-tmp-1", "/tmp") \
        < index(argv, "--bind", "/tmp/ws", "/tmp/ws")
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--die-with-parent" in argv
    assert argv[-4:] == ["--chdir", "/tmp/ws", "--", "true"]
    assert ("/tmp", "/tmp") not in pairs(argv, "--bind"), "the host's /tmp is never bound"


def test_without_a_session_tmp_tmp_is_an_empty_tmpfs():
    argv = bwrap_argv(SandboxPolicy(WW, (Path("/w"),)), ["true"], cwd=Path("/w"))
    assert "/tmp" in singles(argv, "--tmpfs")


def test_a_read_only_rated_call_gets_nothing_writable():
    policy = SandboxPolicy(WW, (Path("/tmp/ws"),), frozen=True, tmp=Path("/tmp/t"), protected=("/tmp/ws/.git/config",))
    argv = bwrap_argv(policy, ["true"], cwd=Path("/tmp/ws"))
    assert ("/tmp/ws", "/tmp/ws") in pairs(argv, "--ro-bind")
    assert [p for p in pairs(argv, "--bind") if p[1] != "/tmp"] == []
    # /tmp is bound (so a root under it can be mounted over it) and made read-only last
    assert index(argv, "--remount-ro", "/tmp") > \
        index(argv, "--ro-bind", "/tmp/ws", "/tmp/ws")


def test_a_read_only_rated_call_outside_tmp_needs_no_extra_mounts():
    argv = bwrap_argv(SandboxPolicy(WW, (Path("/w"),), frozen=True, tmp=Path("/tmp/t")), ["true"], cwd=Path("/w"))
    assert ("/tmp/t", "/tmp") in pairs(argv, "--ro-bind") and "--remount-ro" not in argv
    assert ("/w", "/w") not in pairs(argv, "--ro-bind") + pairs(argv, "--bind")  # read-only already, under /
    ro_mode = bwrap_argv(SandboxPolicy(SandboxMode.READ_ONLY, (Path("/w"),), tmp=Path("/tmp/t")), ["true"], cwd=Path("/w"))
    assert ("/tmp/t", "/tmp") in pairs(ro_mode, "--bind"), "read-only mode keeps a writable private /tmp"


def test_protected_metadata_is_bound_read_only_after_the_workspace():
    policy = SandboxPolicy(WW, (Path("/w"),), protected=("/w/.git/config", "/w/.git/hooks", "/w/.cox"))
    argv = bwrap_argv(policy, ["true"], cwd=Path("/w"))
    ws = index(argv, "--bind", "/w", "/w")
    for p in policy.protected:
        assert index(argv, "--ro-bind", p, p) > ws


def test_masks_come_after_the_roots_dirs_as_tmpfs_files_as_dev_null():
    policy = SandboxPolicy(WW, (Path("/w"),), masks=(Mask("/home/u/.ssh", True), Mask("/w/.env", False)))
    argv = bwrap_argv(policy, ["true"], cwd=Path("/w"))
    ws = index(argv, "--bind", "/w", "/w")
    assert index(argv, "--tmpfs", "/home/u/.ssh") > ws
    assert index(argv, "--ro-bind", "/dev/null", "/w/.env") > ws


def test_masks_under_the_private_tmp_outside_every_root_are_skipped():
    policy = SandboxPolicy(WW, (Path("/tmp/ws"),), masks=(Mask("/tmp/h/.ssh", True), Mask("/tmp/ws/h/.ssh", True)))
    argv = bwrap_argv(policy, ["true"], cwd=Path("/tmp/ws"))
    assert "/tmp/h/.ssh" not in argv and "/tmp/ws/h/.ssh" in singles(argv, "--tmpfs")


def test_cox_home_is_hidden_or_read_only_under_the_roots():
    hidden = bwrap_argv(SandboxPolicy(WW, (Path("/w"),), cox_home="/w/.coxhome"), ["true"], cwd=Path("/w"))
    assert index(hidden, "--tmpfs", "/w/.coxhome") > index(hidden, "--bind", "/w", "/w")
    over = bwrap_argv(SandboxPolicy(WW, (Path("/h/ws"),), cox_home="/h", cox_home_over_roots=True), ["true"],
                      cwd=Path("/h/ws"))
    assert index(over, "--ro-bind", "/h", "/h") < index(over, "--bind", "/h/ws", "/h/ws")
    assert "/h" not in singles(over, "--tmpfs")


def test_as_root_a_user_namespace_and_no_capabilities():
    argv = bwrap_argv(SandboxPolicy(WW, drop_caps=True), ["true"], cwd=Path("/"))
    assert index(argv, "--unshare-user", "--cap-drop", "ALL") < index(argv, "--", "true")
    assert "--cap-drop" not in bwrap_argv(SandboxPolicy(WW), ["true"], cwd=Path("/"))


def test_network_allowed_keeps_the_net_namespace():
    assert "--unshare-net" not in bwrap_argv(SandboxPolicy(WW, network=True), ["true"], cwd=Path("/"))


# ------------------------------------------------------------------------ harden (reads the disk)

@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text("kube")
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".env").write_text("A=1")
    (ws / "secrets").mkdir()
    box = tmp_path / "coxhome"
    box.mkdir()
    return {"home": home, "ws": ws, "box": box, "base": tmp_path}


def test_harden_masks_builtin_and_rule_paths(tree):
    home, ws = tree["home"], tree["ws"]
    deny = read_deny_patterns([]) + ["./.env", "secrets/**", "~/nothing-here/**", "~/.*", "/etc/**"]
    p = harden(SandboxPolicy(WW, (ws,)), cwd=ws, home=home, cox_home=tree["box"], read_deny=deny, euid=1000)
    masks = {m.path: m.is_dir for m in p.masks}
    assert masks[str(home / ".ssh")] is True  # ~/.ssh/** masks the folder
    assert masks[str(home / ".kube" / "config")] is False  # a literal file is /dev/null
    assert masks[str(ws / ".env")] is False and masks[str(ws / "secrets")] is True  # relative rules, per root
    assert not any("nothing-here" in m for m in masks)  # what does not exist is skipped
    unmasked = dict(p.unmasked)
    assert "would hide" in unmasked["~/.*"] and "system" in unmasked["/etc/**"]
    assert str(home) not in masks and "/etc" not in masks
    assert p.drop_caps is False and p.cox_home == os.path.realpath(tree["box"])


def test_harden_protects_git_metadata_and_makes_what_is_missing(tree):
    ws = tree["ws"]
    p = harden(SandboxPolicy(WW, (ws,)), cwd=ws, home=tree["home"], cox_home=None, euid=0)
    for rel in (".git/config", ".git/hooks", ".git/info", ".cox"):
        assert str(ws / rel) in p.protected
        assert (ws / rel).exists()
    assert p.drop_caps is True
    assert p.pinned == (str(ws / ".git"),) and p.must_not_appear == (str(ws / ".git" / "commondir"),)
    argv = bwrap_argv(p, ["true"], cwd=ws)
    assert index(argv, "--bind", str(ws), str(ws)) < index(argv, "--bind", str(ws / ".git"), str(ws / ".git")) \
        < index(argv, "--ro-bind", str(ws / ".git" / "config"), str(ws / ".git" / "config"))


def test_submodule_git_dirs_are_protected_too(tree):
    ws = tree["ws"]
    sub = ws / ".git" / "modules" / "lib" / "core"
    (sub / "objects").mkdir(parents=True)
    (sub / "config").write_text("[core]\n")
    p = harden(SandboxPolicy(WW, (ws,)), cwd=ws, home=tree["home"], cox_home=None)
    assert str(sub / "config") in p.protected and str(sub / "hooks") in p.protected and str(sub) in p.pinned


def test_harden_for_a_description_writes_nothing(tree):
    ws = tree["ws"]
    p = harden(SandboxPolicy(WW, (ws,)), cwd=ws, home=tree["home"], cox_home=None, prepare=False)
    assert str(ws / ".cox") in p.protected and not (ws / ".cox").exists()
    assert not (ws / ".git" / "hooks").exists()


def test_a_worktree_protects_its_git_file_and_the_git_dirs_inside_the_roots(tree):
    base = tree["base"]
    main = base / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "config").write_text("[core]\n")
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = base / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    alone = harden(SandboxPolicy(WW, (wt,)), cwd=wt, home=tree["home"], cox_home=None)
    assert alone.protected == (str(wt / ".git"), str(wt / ".cox"))  # the git dirs outside are read-only anyway
    assert not (main / ".git" / "worktrees" / "wt" / "info").exists(), "nothing is made outside the roots"
    p = harden(SandboxPolicy(WW, (wt, main)), cwd=wt, home=tree["home"], cox_home=None)
    assert str(wt / ".git") in p.protected
    assert str(main / ".git" / "config") in p.protected and str(main / ".git" / "hooks") in p.protected


def test_cox_home_holding_the_workspace_is_read_only_not_hidden(tree):
    ws = tree["box"] / "ws"
    ws.mkdir()
    p = harden(SandboxPolicy(WW, (ws,)), cwd=ws, home=tree["home"], cox_home=tree["box"])
    assert p.cox_home_over_roots is True


def test_danger_full_access_is_not_hardened(tree):
    p = SandboxPolicy(SandboxMode.DANGER_FULL_ACCESS, (tree["ws"],))
    assert harden(p, cwd=tree["ws"], home=tree["home"], cox_home=None) is p


# ------------------------------------------------------------------------ environment

def test_scrub_env_removes_secret_looking_names_unless_kept():
    env = {"PATH": "/bin", "ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "ANTHROPIC_AUTH_TOKEN": "t",
           "AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "g", "DB_PASSWORD": "p", "MY_PASSWD": "p",
           "GOOGLE_APPLICATION_CREDENTIALS": "c", "NPM_TOKEN": "n", "HOME": "/h", "LANG": "C"}
    out, removed = scrub_env(env, ["NPM_TOKEN"])
    assert set(out) == {"PATH", "HOME", "LANG", "NPM_TOKEN"}
    assert removed == sorted(set(env) - set(out))
    assert scrub_env({"api_key": "x"})[0] == {}  # case does not matter


def test_env_keep_from_a_project_config_is_ignored(tmp_path: Path):
    from cox.config import load_config

    box = tmp_path / "box"
    box.mkdir()
    (box / "config.toml").write_text('[sandbox]\nenv_keep = ["NPM_TOKEN"]\n')
    cwd = tmp_path / "ws"
    (cwd / ".cox").mkdir(parents=True)
    config = load_config(cwd, cox_home=box, env={})
    assert env_keep_of(config, cwd) == (["NPM_TOKEN"], None)
    # a key the user did not list: the loader's project allowlist drops it (a subset only)
    (cwd / ".cox" / "config.toml").write_text('[sandbox]\nenv_keep = ["ANTHROPIC_API_KEY"]\n')
    config = load_config(cwd, cox_home=box, env={})
    assert any("sandbox.env_keep" in w for w in config.warnings)
    keep, why = env_keep_of(config, cwd)
    assert "ANTHROPIC_API_KEY" not in keep
    # a subset the loader keeps still comes from the repository: the sandbox passes nothing
    (cwd / ".cox" / "config.toml").write_text('[sandbox]\nenv_keep = ["NPM_TOKEN"]\n')
    config = load_config(cwd, cox_home=box, env={})
    keep, why = env_keep_of(config, cwd)
    assert keep == [] and why is not None and "only your own config" in why


# ------------------------------------------------------------------------ describe

def test_describe_names_every_part_of_the_boundary(tree):
    ws = tree["ws"]
    rows = explain(WW, roots=[ws], cwd=ws, home=tree["home"], cox_home=tree["box"], read_deny=read_deny_patterns([]),
                   env={"OPENAI_API_KEY": "sk-VALUE-9f3", "PATH": "/bin"})
    d = describe_dict(rows)
    assert d["writable"] == str(ws) and str(ws / ".git/config") in d["read-only"]
    assert str(tree["home"] / ".ssh") in d["masked"] and d["network"] == "off"
    assert d["env removed"] == "OPENAI_API_KEY" and "sk-VALUE-9f3" not in str(d)
    assert "private to the session" in d["/tmp"] and "hidden" in d["cox home"]
    frozen = describe_dict(explain(WW, roots=[ws], cwd=ws, home=tree["home"], cox_home=None, read_deny=[], env={},
                                   frozen=True))
    assert frozen["writable"] == "nothing" and frozen["read-only"] == "everything"
    assert not (ws / ".cox").exists(), "describing prepares nothing"


def test_describe_without_a_sandbox_says_what_to_do():
    rows = dict(describe(SandboxPolicy(WW), working=(False, "bwrap is not installed")))
    assert rows["sandbox"] == fail_closed_sentence("bwrap is not installed")
    assert "bubblewrap" in rows["sandbox"] and "danger-full-access" in rows["sandbox"]


def test_privileged_sockets_are_masked_with_dev_null(tree):
    import socket

    path = tree["base"] / "docker.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    try:
        p = harden(SandboxPolicy(WW, (tree["ws"],)), cwd=tree["ws"], home=tree["home"], cox_home=None,
                   sockets=(str(path), "/nonexistent/{uid}/bus"), euid=1000)
        assert Mask(str(path), False) in p.masks and not any("nonexistent" in m.path for m in p.masks)
    finally:
        s.close()


def test_a_writable_root_that_does_not_exist_is_left_out(tree):
    p = harden(SandboxPolicy(WW, (tree["ws"], tree["base"] / "gone")), cwd=tree["ws"], home=tree["home"], cox_home=None)
    assert p.writable_roots == (Path(os.path.realpath(tree["ws"])),)
