"""The measured blocks' bookkeeping for check_docs.py: which files a block depends on, the hash
of their contents (a block is STALE when it changes), and the marker a regenerated block gets
(this checkout's commit, today's date, this machine, the new hash).

    from measured_stamp import depends_hash, stamp
"""
from __future__ import annotations

import datetime
import hashlib
import os
import platform
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def depends_files(spec: str, root=ROOT) -> list[str]:
    """Files under the `depends:` paths (tracked by git when the root is a git work tree)."""
    paths = spec.split()
    try:
        listed = subprocess.run(["git", "ls-files", "--", *paths], cwd=root, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, check=True).stdout.split("\n")
        files = [f for f in listed if f and os.path.isfile(os.path.join(root, f))]
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = []
    # In a work tree an untracked file would be hashed as absent: the block would never go stale
    # when it changes (and would go stale when it is added).
    untracked = [p for p in paths if files and os.path.isfile(os.path.join(root, p)) and p not in files]
    if untracked:
        raise ValueError(f"depends: {untracked} not tracked by git (git add it first)")
    if not files:
        for p in paths:
            full = os.path.join(root, p)
            if os.path.isfile(full):
                files.append(p)
            for dirpath, _, names in os.walk(full):
                files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names]
    missing = [p for p in paths if not os.path.exists(os.path.join(root, p))]
    if missing:
        raise ValueError(f"depends: no such path {missing}")
    return sorted(set(files))


def depends_hash(spec: str, root=ROOT) -> str:
    """sha256 over (path, content) of every file the block depends on; 16 hex digits."""
    h = hashlib.sha256()
    for f in depends_files(spec, root):
        h.update(f.encode() + b"\0")
        with open(os.path.join(root, f), "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.machine()}"


def stamp(block, root=ROOT) -> list[str]:
    """The measured marker rewritten with this checkout's commit, today's date, this machine and
    the current hash of its dependencies."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=root, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        commit = "unknown"
    f = dict(block.fields)
    f.update(commit=commit, date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
             machine=machine(), sha=depends_hash(f["depends"], root))
    keys = ["measured", "depends", "commit", "date", "machine", "sha"] + \
           [k for k in f if k not in ("measured", "depends", "commit", "date", "machine", "sha")]
    out = [f"<!-- measured: {f['measured']}"]
    out += [f"     {k}: {f[k]}" for k in keys[1:] if k in f]
    out[-1] += " -->"
    return out
