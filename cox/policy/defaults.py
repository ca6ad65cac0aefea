"""The deny rules every engine starts with: credential stores in the home directory.

They apply before any mode or allow rule, so even a ReadOnly ``read`` (or ``grep``/``glob``) of
``~/.ssh/id_ed25519`` is denied, and ``bypassPermissions`` does not lift them. Writes to the same
places are denied too (an ``authorized_keys`` line is a way in). What is listed holds keys or
tokens and is never part of a task in the workspace:

- SSH and GnuPG keys: ``~/.ssh/**``, ``~/.gnupg/**``;
- cloud credentials: ``~/.aws/**``, ``~/.azure/**``, ``~/.config/gcloud/**``, ``~/.kube/config``,
  ``~/.docker/config.json``;
- tokens for git, package registries and databases: ``~/.netrc``, ``~/.git-credentials``,
  ``~/.config/gh/hosts.yml``, ``~/.npmrc``, ``~/.pypirc``, ``~/.pgpass``;
- password stores and keyrings: ``~/.password-store/**``, ``~/.local/share/keyrings/**``;
- other agents' logins: ``~/.claude/.credentials.json``, ``~/.codex/auth.json``.

Deliberately not listed: ``.env`` files in the workspace. They are the task's own material
(adding a variable, debugging a config), and the spec keeps secrets a task handles reaching the
model ("redacting model input would break tasks that legitimately handle keys"). A team that
wants them out adds ``deny = ["Read(./.env)", "Read(./.env.*)"]``.
"""

from __future__ import annotations

__all__ = ["DEFAULT_DENY", "DEFAULT_ORIGIN"]

DEFAULT_ORIGIN = "cox's built-in defaults"

_BOTH = ("~/.ssh/**", "~/.gnupg/**", "~/.aws/**")
_READ = ("~/.azure/**", "~/.config/gcloud/**", "~/.kube/config", "~/.docker/config.json",
         "~/.netrc", "~/.git-credentials", "~/.config/gh/hosts.yml", "~/.npmrc", "~/.pypirc",
         "~/.pgpass", "~/.password-store/**", "~/.local/share/keyrings/**",
         "~/.claude/.credentials.json", "~/.codex/auth.json")

DEFAULT_DENY: tuple[str, ...] = (
    *(f"Read({p})" for p in _BOTH + _READ),
    *(f"Edit({p})" for p in _BOTH),
)
