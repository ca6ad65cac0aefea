"""What a repository's own settings may change: an allowlist, decided key by key.

A project's ``.cox/config.toml`` (and its ``.claude/settings*.json``) is written by whoever wrote
the repository, so it is read as a *request*: a key on the list below is kept (some only when they
narrow what your own layers allow), and every other key — including keys added to the schema
later, until someone decides about them here — is ignored with one warning naming the file, the
line and the key. Environment variables and flags are the person's own and are not restricted.

Why each key is or is not on the list (the schema is ``cox.config.schema``):

- ``core.provider``, ``core.script``: they choose which program answers as the model (a scripted
  "model" is a file of tool calls the repository wrote) and where the conversation is sent.
  Never from a project.
- ``core.model``: kept only when it stays with the provider family your layers pick (``claude-*``
  with Anthropic, ``gpt-*``/``o*`` with OpenAI): with ``provider = "auto"`` the model's family
  chooses where the traffic goes, so a project could otherwise move your code to another vendor.
- ``core.cheap_model``, ``core.think_model``: kept; they are model names sent to the provider you
  chose, never another endpoint. ``core.mode``: kept (architect mode asks for its price consent).
- ``core.max_turns``, ``budget.*``, ``mcp.max_loaded_tools`` and ``agents.max_depth``: may only be
  lowered (a cap narrows; more loaded MCP tools would make every request bigger; deeper agents
  multiply what one prompt may spend).
- ``permissions.ask`` / ``deny``: kept (they narrow). ``permissions.allow``: only an empty list.
  ``permissions.mode``, ``approval_policy`` and ``sandbox.mode``: only as strict as yours or
  stricter, and never ``bypassPermissions`` / ``acceptEdits`` / ``danger-full-access``.
- ``sandbox.network``: only ``false``. ``sandbox.writable_roots`` and ``sandbox.env_keep``: only a
  subset of yours (a root or an environment variable you did not list would widen the sandbox).
- ``mcp.servers``: never (a project's servers live in ``.mcp.json``, which has its own trust
  step); ``lsp.servers``: never (they name programs cox would run); ``hooks``: not through the config
  merge, only as ``cox.hooks`` reads them once ``cox hooks trust`` accepted them; ``models``:
  never (an entry can change the provider a model goes to, and prices feed the budget caps).
- ``tools.*``, ``context.*``, the MCP and LSP timeouts, ``lsp.after_edit*``, ``logging.level``:
  kept; they tune how cox works and choose no program, endpoint or permission.

There are no base-URL, proxy, header or key settings in cox's schema (those come from the
environment: ``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``*_API_KEY``, ``HTTPS_PROXY``); an MCP
server's ``url`` and ``headers`` sit under ``mcp.servers``, which a project may not set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode

Keys = tuple[str, ...]
Current = Callable[[Keys], Any]

__all__ = ["Keys", "entry_key", "project_verdict"]

# Keys a project may set with no condition.
_FREE: frozenset[Keys] = frozenset({
    ("core", "mode"), ("core", "cheap_model"), ("core", "think_model"),
    ("permissions", "ask"), ("permissions", "deny"),
    ("tools", "bash_timeout_s"), ("tools", "bash_max_timeout_s"), ("tools", "output_head_lines"),
    ("tools", "output_tail_lines"), ("tools", "visible_max_bytes"),
    ("context", "compact_at"), ("context", "keep_turns"), ("context", "dedup_window_turns"),
    ("context", "microcompact_after_turns"),
    ("mcp", "timeout_s"), ("mcp", "startup_timeout_s"),
    ("lsp", "timeout_s"), ("lsp", "quiet_ms"), ("lsp", "after_edit"), ("lsp", "after_edit_ms"),
    ("logging", "level"),
})

_PERMISSION_RANK = {PermissionMode.BYPASS: 0, PermissionMode.ACCEPT_EDITS: 1,
                    PermissionMode.DEFAULT: 2, PermissionMode.DONT_ASK: 3, PermissionMode.PLAN: 4}
_APPROVAL_RANK = {ApprovalPolicy.ON_REQUEST: 0, ApprovalPolicy.NEVER: 1}
_SANDBOX_RANK = {SandboxMode.DANGER_FULL_ACCESS: 0, SandboxMode.WORKSPACE_WRITE: 1, SandboxMode.READ_ONLY: 2}
RANKS: dict[Keys, dict[Any, int]] = {
    ("permissions", "mode"): _PERMISSION_RANK,
    ("permissions", "approval_policy"): _APPROVAL_RANK,
    ("sandbox", "mode"): _SANDBOX_RANK,
}
_ALWAYS_WIDENING: dict[Keys, frozenset[str]] = {
    ("permissions", "mode"): frozenset({PermissionMode.BYPASS, PermissionMode.ACCEPT_EDITS}),
    ("sandbox", "mode"): frozenset({SandboxMode.DANGER_FULL_ACCESS}),
}
_LOWER_ONLY: frozenset[Keys] = frozenset({("core", "max_turns"), ("budget", "session_usd"),
                                          ("budget", "monthly_usd"), ("mcp", "max_loaded_tools"),
                                          ("agents", "max_depth")})
_SUBSET_ONLY: dict[Keys, str] = {("sandbox", "writable_roots"): "writable roots",
                                 ("sandbox", "env_keep"): "environment variables kept in the sandbox"}

# Tables of named entries a project may never add to; one warning per entry, not per field.
_ENTRY_TABLES: dict[Keys, str] = {
    ("mcp", "servers"): "a project's MCP servers belong in .mcp.json, which has its own trust step",
    ("lsp", "servers"): "a project config may not choose programs cox runs; language servers come from {user}",
    ("hooks",): "",  # not merged; cox.hooks reads them itself and runs them once trusted (it warns until then)
    ("models",): "a project config may not change the model catalog (an entry can move a model to "
                 "another provider, and prices feed the budget caps); set it in {user}",
}
_NEVER: dict[Keys, str] = {
    ("core", "provider"): "a project config may not choose the provider, which decides where the "
                          "conversation is sent; set it in {user}, COX_CORE_PROVIDER or --provider",
    ("core", "script"): "a project config may not choose the scripted model (a repository's script "
                        "would speak as the model); pass --script FILE or set it in {user}",
}


def entry_key(path: Keys) -> Keys:
    """The key a warning names: a named entry (``mcp.servers.db``) for any field inside it."""
    for prefix in _ENTRY_TABLES:
        if path[: len(prefix)] == prefix and len(path) > len(prefix):
            return path[: len(prefix) + 1]
    return path


def project_verdict(path: Keys, value: Any, current: Current, user: str) -> str | None:
    """Why a project may not set ``path`` to ``value`` (so it is ignored), or ``None`` to keep it.
    ``current`` is the value your own layers give the key; ``user`` names your config file."""
    for prefix, reason in _ENTRY_TABLES.items():
        if path[: len(prefix)] == prefix and len(path) > len(prefix):
            return reason.format(user=user)
    if path in _NEVER:
        return _NEVER[path].format(user=user)
    if path in _FREE:
        return None
    if path == ("permissions", "allow"):
        return f"a project config may not add allow rules; put them in {user}" if value else None
    if path in RANKS:
        return narrower_rank(path, value, current)
    if path == ("sandbox", "network"):
        return "a project config may not turn network access on" if value else None
    if path in _SUBSET_ONLY:
        mine = list(current(path) or [])
        extra = [str(item) for item in value if item not in mine]
        return f"a project config may not add {_SUBSET_ONLY[path]} ({', '.join(extra)})" if extra else None
    if path in _LOWER_ONLY:
        before = current(path)
        if before is not None and value is not None and value > before:
            return f"a project config may only lower this cap (yours is {before})"
        if before is not None and value is None:
            return f"a project config may not remove this cap (yours is {before})"
        return None
    if path == ("core", "model"):
        return _model_verdict(value, current)
    return (f"a project config may set only keys known to be safe (docs/config.md, \"Project "
            f"restrictions\"); set it in {user}")


def narrower_rank(path: Keys, value: Any, current: Current) -> str | None:
    """For an ordered key (permission mode, approval policy, sandbox mode): why ``value`` would
    loosen what ``current`` gives, or ``None`` when it is as strict or stricter."""
    rank = RANKS[path]
    before = current(path)
    if value in _ALWAYS_WIDENING.get(path, ()):
        return f"a project config may not set {str(value)!r}, it widens trust"
    if rank[value] < rank[before]:
        return f"{str(value)!r} is looser than {str(before)!r} from your own settings"
    return None


def _family(provider: str) -> str:
    return "openai" if provider in ("openai", "openai-chat") else provider


def _model_verdict(value: str, current: Current) -> str | None:
    from cox.actors.provider.catalog import describe  # only when a project names a model

    mine = str(current(("core", "model")))
    theirs, ours = describe(value).provider, describe(mine).provider
    provider = str(current(("core", "provider")))
    if provider != "auto" or _family(theirs) == _family(ours):
        return None  # a fixed provider sends any model name to the same place
    return (f"{value!r} is a {theirs} model and yours ({mine!r}) is {ours}: with provider 'auto' it "
            "would send the conversation to another provider")
