"""Which secret-looking variables the user lets through to commands (``sandbox.env_keep``).

Its own module because every session reads it at start-up, while the sandbox itself
(``cox.policy.sandbox``, which re-exports it) is only needed with the first command.
"""

from __future__ import annotations

from pathlib import Path


def env_keep_of(config: object, cwd: Path) -> tuple[list[str], str | None]:
    """``sandbox.env_keep`` of a loaded config, unless a project's ``.cox/config.toml`` set it
    (a repository must not pull keys into its commands): then nothing, and why."""
    box = getattr(config, "sandbox", None)
    keep = [str(k) for k in getattr(box, "env_keep", ()) or ()]
    source = getattr(config, "source", None)
    where = str(source("sandbox.env_keep")) if keep and callable(source) else ""
    project = str(Path(cwd).absolute() / ".cox" / "config.toml")
    if where.startswith(project + ":") or where == project:
        return [], f"sandbox.env_keep from {project} is ignored: only your own config may pass secrets to commands"
    return keep, None
