"""Reading a scenario file (the HDF5 layout `continual scenario export` writes, docs/scenarios.md
"HDF5 scenario layout"; also `datasets/digits.h5`, `datasets/mnist1d.h5` and the per-user files of
`continualkit datasets`) into numpy arrays, as one stream or one stream per user.

Experiences are taken in the order of their `index` attribute (as the Swift reader and
`datasets/check_export.py` do); samples in stored order, or per user ordered by session, then
time (stable), as `DatasetScenario` orders a person's rows (docs/real-users.md)."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

import h5py
import numpy as np


@dataclass
class Split:
    features: np.ndarray          # float32 [n, D]
    labels: np.ndarray            # int64 [n]
    keys: dict = field(default_factory=dict)   # per-sample 1-D key columns (user, session, time, routes…)

    def __len__(self):
        return len(self.labels)

    def take(self, index) -> "Split":
        return Split(self.features[index], self.labels[index], {k: v[index] for k, v in self.keys.items()})


@dataclass
class Experience:
    index: int
    name: str
    metadata_json: str
    train: Split
    test: Split


@dataclass
class ScenarioFile:
    path: str
    name: str
    head: str                     # "binary" | "multiclass"
    classes: int
    feature_names: list
    experiences: list             # [Experience]
    attrs: dict                   # every root attribute (strings and numbers)
    sha256: str                   # of the file's bytes

    @property
    def experience_names(self):
        return [e.name for e in self.experiences]


def _plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    return v


def _strings(ds):
    return [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in ds[()]]


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read(path: str) -> ScenarioFile:
    """The whole file. Raises ValueError naming what is missing when it is not in the layout."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file")
    with h5py.File(path, "r") as f:
        attrs = {k: _plain(v) for k, v in f.attrs.items()}
        if attrs.get("format") != "continualkit-scenario" or "experiences" not in f:
            raise ValueError(f"{path}: not a scenario file (root attribute format = \"continualkit-scenario\" and "
                             "group /experiences expected; write one with `continual scenario export`)")
        groups = sorted(f["experiences"].values(), key=lambda g: int(g.attrs.get("index", 0)))
        exps = []
        for g in groups:
            splits = {}
            for s in ("train", "test"):
                if s not in g or "features" not in g[s] or "labels" not in g[s]:
                    raise ValueError(f"{path}: {g.name}/{s} needs features and labels")
                sg = g[s]
                x = np.asarray(sg["features"][()], dtype=np.float32)
                y = np.asarray(sg["labels"][()], dtype=np.int64)
                keys = {}
                for k, d in sg.items():
                    if k in ("features", "labels") or not isinstance(d, h5py.Dataset) or d.ndim != 1 or len(d) != len(y):
                        continue
                    v = d[()]
                    keys[k] = np.array(_strings(d)) if v.dtype.kind in "SO" else np.asarray(v)
                splits[s] = Split(x, y, keys)
            exps.append(Experience(int(g.attrs.get("index", len(exps))), _plain(g.attrs.get("name", f"experience_{len(exps)}")),
                                   _plain(g.attrs.get("metadata_json", "{}")) or "{}", splits["train"], splits["test"]))
        names = _strings(f["feature_names"]) if "feature_names" in f else \
            [f"x{i}" for i in range(exps[0].train.features.shape[1])] if exps else []
    if not exps:
        raise ValueError(f"{path}: no experiences")
    labels = np.concatenate([np.concatenate([e.train.labels, e.test.labels]) for e in exps])
    classes = int(attrs.get("classes", 0) or 0) or int(labels.max()) + 1
    head = str(attrs.get("head", "binary" if classes == 2 else "multiclass"))
    return ScenarioFile(path, str(attrs.get("name", os.path.splitext(os.path.basename(path))[0])), head, classes,
                        names, exps, attrs, file_sha256(path))


def _order(split: Split, session: str | None, time: str | None) -> np.ndarray:
    keys = [split.keys[c] for c in (time, session) if c and c in split.keys]   # lexsort: last key is primary
    return np.lexsort(keys) if keys else np.arange(len(split))


def users_of(sc: ScenarioFile, user_column: str) -> list:
    """The users of the file in the Swift side's order: integer ids numerically, others as text."""
    vals = set()
    for e in sc.experiences:
        for s in (e.train, e.test):
            if user_column not in s.keys:
                raise ValueError(f"{sc.path}: no per-sample column {user_column!r} in {e.name} "
                                 f"(has: {', '.join(s.keys) or 'none'})")
            vals.update(s.keys[user_column].tolist())
    vals = list(vals)
    try:
        return sorted(vals, key=lambda v: int(v))
    except (TypeError, ValueError):
        return sorted(vals, key=str)


def per_user(sc: ScenarioFile, user, user_column: str, session_column: str | None = None,
             time_column: str | None = None) -> list:
    """One person's stream: their rows of every experience, ordered by session, then time.
    Raises ValueError naming the person and experience when a split is empty (as the Swift side)."""
    out = []
    for e in sc.experiences:
        parts = {}
        for s in ("train", "test"):
            split = getattr(e, s)
            mine = np.flatnonzero(split.keys[user_column] == user)
            sub = split.take(mine)
            if len(sub) == 0:
                raise ValueError(f"user {user!r} has no {s} rows in experience {e.index} ({e.name})")
            parts[s] = sub.take(_order(sub, session_column, time_column))
        out.append(Experience(e.index, e.name, e.metadata_json, parts["train"], parts["test"]))
    return out


def scenario_summary(sc: ScenarioFile) -> dict:
    """What a results file records about the scenario a baseline ran on (config JSON)."""
    opts = sc.attrs.get("options_json") or ""
    try:
        opts = json.loads(opts) if opts else None
    except ValueError:
        pass
    return {"file": os.path.basename(sc.path), "sha256": sc.sha256, "name": sc.name, "head": sc.head,
            "classes": sc.classes, "dimension": len(sc.feature_names), "experiences": len(sc.experiences),
            "options": opts, "toolkit_version": str(sc.attrs.get("toolkit_version", ""))}
