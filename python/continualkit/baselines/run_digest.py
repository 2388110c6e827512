"""The identity and the digest of a baseline run, as the Swift side computes them: the run id
(FNV-1a 64 of the canonical config JSON), git provenance, and the `sha256` digest of a run group
(`RunDigest.swift`'s canonical serialisation), so `continual inspect --verify` accepts the runs
`results_file` writes."""
from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess

import h5py
import numpy as np


# ----------------------------------------------------------------------------- identity
def fnv1a64(text: str) -> int:
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def run_id(config: dict) -> str:
    """16 hex digits: FNV-1a 64 of the canonical config (sorted keys), as the Swift side names runs."""
    return f"{fnv1a64(canonical_json(config)):016x}"


def git_provenance() -> tuple[str, int, str]:
    """(commit, dirty 1/0/-1, source) of the checkout this package runs from, or ("", -1, "unavailable")."""
    if os.environ.get("CONTINUALKIT_GIT_COMMIT"):
        return os.environ["CONTINUALKIT_GIT_COMMIT"], -1, "CONTINUALKIT_GIT_COMMIT"
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return commit, 1 if dirty else 0, "git"
    except (OSError, subprocess.SubprocessError):
        return "", -1, "unavailable"


# ----------------------------------------------------------------------------- run digest
class _Digest:
    """`RunDigest.swift` in Python: SHA-256 over every attribute and dataset below a run group,
    in sorted-name order, except the group's own `sha256` and `complete` and non-content
    attributes (references: DIMENSION_LIST, REFERENCE_LIST)."""

    def __init__(self):
        self.h = hashlib.sha256()

    def i64(self, values):
        values = list(values)
        if values:
            self.h.update(struct.pack(f"<{len(values)}q", *[int(v) for v in values]))

    def f64(self, values):
        values = np.asarray(values, dtype="<f8").ravel()
        self.h.update(values.tobytes())

    def text(self, s: str):
        b = s.encode("utf-8")
        self.i64([len(b)])
        self.h.update(b)

    def tag(self, kind, path):
        self.text(kind)
        self.text(path)


def _attr_class(obj, name):
    t = obj.attrs.get_id(name).get_type()
    return t.get_class()


def _strings(v):
    if isinstance(v, (bytes, str)):
        v = [v]
    out = []
    for x in np.asarray(v, dtype=object).ravel():
        out.append(x.decode("utf-8") if isinstance(x, bytes) else str(x))
    return out


def _add_attributes(d: _Digest, obj, path: str, skip=()):
    for name in sorted(obj.attrs.keys()):
        if name in skip:
            continue
        cls = _attr_class(obj, name)
        if cls == h5py.h5t.INTEGER:
            d.tag("Ai", path + "@" + name)
            d.i64(np.asarray(obj.attrs[name]).ravel().tolist())
        elif cls == h5py.h5t.FLOAT:
            d.tag("Af", path + "@" + name)
            d.f64(np.asarray(obj.attrs[name], dtype=float).ravel())
        elif cls == h5py.h5t.STRING:
            d.tag("As", path + "@" + name)
            for s in _strings(obj.attrs[name]):
                d.text(s.rstrip("\x00"))
        # references, compounds: file addresses, not content


def _add_dataset(d: _Digest, ds: h5py.Dataset):
    cls = ds.id.get_type().get_class()
    if cls == h5py.h5t.INTEGER:
        d.h.update(b"i")
        d.i64(np.asarray(ds[()]).ravel().tolist())
    elif cls == h5py.h5t.FLOAT:
        d.h.update(b"f")
        d.f64(ds[()])
    elif cls == h5py.h5t.STRING:
        d.h.update(b"s")
        for s in _strings(ds[()]):
            d.text(s)
    elif cls == h5py.h5t.COMPOUND:
        d.h.update(b"c")
        dt = ds.dtype
        kinds = []
        for name in dt.names:
            sub = dt.fields[name][0]
            kind = "int64" if sub.kind in "iu" else "float64" if sub.kind == "f" else "string"
            kinds.append(kind)
            d.text(f"{name}:{kind}")
        for row in np.atleast_1d(ds[()]):
            for v, kind in zip(row, kinds):
                if kind == "int64":
                    d.i64([0, int(v)])
                elif kind == "float64":
                    d.i64([1])
                    d.h.update(struct.pack("<d", float(v)))
                else:
                    d.i64([2])
                    d.text(v.decode("utf-8") if isinstance(v, bytes) else str(v))
    else:
        d.h.update(b"o")


def _add_group(d: _Digest, g: h5py.Group, relative: str):
    _add_attributes(d, g, relative, skip=("sha256", "complete") if relative == "" else ())
    for name in sorted(g.keys(), key=lambda s: s.encode("utf-8")):
        path = relative + "/" + name
        child = g[name]
        if isinstance(child, h5py.Group):
            d.tag("G", path)
            _add_group(d, child, path)
        else:
            d.tag("D", path)
            d.i64(list(child.shape) + [-1])
            _add_dataset(d, child)
            _add_attributes(d, child, path)


def run_digest(group: h5py.Group) -> str:
    """The hex SHA-256 `continual inspect --verify` recomputes for a run group."""
    d = _Digest()
    _add_group(d, group, "")
    return d.h.hexdigest()


# ----------------------------------------------------------------------------- writing
