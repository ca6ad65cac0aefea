"""How long the checkpoint around a bash call takes: it is paid on every bash and MCP call.

Generates a 10,000-file repository (committed, so the user's objects serve as alternates), then
prints (never asserts):
- the cold snapshot (first ever: the private index is built, every file hashed);
- the warm snapshot with one changed file (target ≤ 200 ms, issue 4) -- median and worst of 15;
- ``changes_since`` with one changed file (the after-snapshot, the diff and one archived pre-image);
- ``pre_images`` of one 4 KiB file (what an edit pays);
- the same warm snapshot in a plain folder (no repository, no alternates);
- the size of the private object store after all that.

Run: ``.venv/bin/python bench/checkpoints.py [files]``
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cox.actors.store.checkpoints import Checkpointer
from cox.actors.store.layout import Layout

ROUNDS = 15


def git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent), GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, env=env, check=True,
                   capture_output=True, timeout=600)


def generate(root: Path, files: int) -> list[Path]:
    """A source-tree-like layout: 100 folders in two levels, ~1 KiB text files, a .gitignore."""
    rng = random.Random(7)
    paths = []
    for i in range(files):
        d = root / f"pkg{i % 10}" / f"mod{(i // 10) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"file{i}.py"
        p.write_text("".join(f"line {j} {rng.random()}\n" for j in range(40)))
        paths.append(p)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    (root / "build").mkdir()
    (root / "build" / "artifact.bin").write_bytes(os.urandom(1024))
    return paths


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def du(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def bench(root: Path, layout: Layout, paths: list[Path], label: str) -> None:
    cp = Checkpointer(layout, root)
    print(f"{label}: {len(paths)} files")
    print(f"  cold snapshot                 {ms(timed(cp.snapshot))}")
    warm = []
    for i in range(ROUNDS):
        paths[i * 37 % len(paths)].write_text(f"changed {i}\n")
        warm.append(timed(cp.snapshot))
    print(f"  warm snapshot, 1 file changed {ms(statistics.median(warm))} median, {ms(max(warm))} worst"
          "   (target <= 200 ms)")
    since = []
    for i in range(ROUNDS):
        tree = cp.snapshot()
        paths[i * 53 % len(paths)].write_text(f"again {i}\n")
        since.append(timed(lambda t=tree, n=i: cp.changes_since("bench", n, f"c{n}", t)))
    print(f"  changes_since, 1 file changed {ms(statistics.median(since))} median")
    pre = [timed(lambda n=i: cp.pre_images("bench", 1000 + n, "e", [paths[n]])) for i in range(ROUNDS)]
    print(f"  pre_images of one file        {ms(statistics.median(pre))} median")
    print(f"  private object store          {du(cp.repo_dir / 'objects') / 1024:7.1f} KiB, "
          f"index {(cp.repo_dir / 'cox-index').stat().st_size / 1024:.0f} KiB")
    cp.close()


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    ok, why = Checkpointer.available()
    if not ok:
        print(f"skipped: {why}")
        return
    print(why)
    tmp = Path(tempfile.mkdtemp(prefix="cox-bench-cp-"))
    try:
        layout = Layout(tmp / "cox-home").ensure()
        repo = tmp / "repo"
        repo.mkdir()
        t = time.perf_counter()
        paths = generate(repo, files)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        print(f"(generated and committed in {time.perf_counter() - t:.1f} s)")
        bench(repo, layout, paths, "git repository (alternates)")
        plain = tmp / "plain"
        plain.mkdir()
        bench(plain, layout, generate(plain, files), "plain folder (no repository)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
