"""Writes the toolkit's HDF5 scenario layout (docs/scenarios.md, `ScenarioArchive.swift`) with the
per-sample columns of real per-user data (docs/real-users.md), deterministically, and computes
the content digest stored in the file.

Determinism: datasets are written without HDF5 modification times (`track_times=False`),
groups and attributes in a fixed order, and every value comes from a deterministic computation,
so two conversions of the same source give byte-identical files (tested). The content digest
(`content_digest`, "sha256:…") covers every dataset's path, dtype, shape and bytes and every
attribute except itself, walked in sorted order; `digest(path)` recomputes it from any file.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

FORMAT = "continualkit-scenario"
FORMAT_VERSION = 1
COLUMNS = ("user", "session", "time")


def _canonical(value) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, np.ndarray):
        return value.dtype.str.encode() + repr(value.shape).encode() + np.ascontiguousarray(value).tobytes()
    if isinstance(value, (np.integer, int)):
        return b"i" + str(int(value)).encode()
    if isinstance(value, (np.floating, float)):
        return b"f" + float(value).hex().encode()
    return b"s" + str(value).encode("utf-8")


def digest(path: str) -> str:
    """The content digest of a scenario file: sha256 over every dataset (path, dtype, shape, little-
    endian bytes; strings as UTF-8) and every attribute but `content_digest`, in sorted path order."""
    import h5py
    h = hashlib.sha256()
    with h5py.File(path, "r") as f:
        items = []
        f.visititems(lambda name, obj: items.append(name))
        for name in [""] + sorted(items):
            obj = f[name] if name else f
            h.update(b"\0path:" + name.encode())
            if isinstance(obj, h5py.Dataset):
                if obj.dtype.kind == "O" or h5py.check_string_dtype(obj.dtype):
                    h.update(b"str:" + json.dumps([s for s in obj.asstr()[()].tolist()]).encode())
                else:
                    a = obj[()]
                    a = a.astype(a.dtype.newbyteorder("<"))
                    h.update(_canonical(a))
            for key in sorted(obj.attrs.keys()):
                if key == "content_digest":
                    continue
                h.update(b"\0attr:" + key.encode() + b"=" + _canonical(obj.attrs[key]))
    return "sha256:" + h.hexdigest()


def write(path: str, *, name: str, classes: int, class_names: list[str], feature_names: list[str],
          experiences: list[dict], metadata: dict[str, str], attributes: dict[str, str], compress: bool = False) -> str:
    """Writes the file atomically (a temporary name, then rename) and returns its content digest.

    `experiences`: dicts with `name`, `metadata` (str → str) and `train` / `test` dicts holding
    `features` [n, D], `labels` [n] and optionally the columns `user`, `session` [n] (int) and
    `time` [n] (float seconds). `compress`: features and labels gzip level 9 with shuffle (still
    byte-identical across conversions)."""
    import h5py
    d = len(feature_names)
    tmp = f"{path}.tmp-{os.getpid()}"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    vlen = h5py.string_dtype("utf-8")
    try:
        with h5py.File(tmp, "w", track_order=False) as f:
            a = f.attrs
            a["format"] = FORMAT
            a["format_version"] = np.int64(FORMAT_VERSION)
            a["name"] = name
            a["head"] = "binary" if classes == 2 else "multiclass"
            a["classes"] = np.int64(classes)
            a["dimension"] = np.int64(d)
            a["experience_count"] = np.int64(len(experiences))
            a["metadata_json"] = json.dumps(metadata, sort_keys=True, separators=(",", ":"))
            a["options_json"] = ""
            a["toolkit_version"] = metadata.get("converter", "continualkit")
            for k in sorted(attributes):
                a[k] = attributes[k]
            f.create_dataset("feature_names", data=np.array(feature_names, dtype=object), dtype=vlen, track_times=False)
            f.create_dataset("class_names", data=np.array(class_names, dtype=object), dtype=vlen, track_times=False)
            f.create_dataset("experience_names", data=np.array([e["name"] for e in experiences], dtype=object),
                             dtype=vlen, track_times=False)
            g = f.create_group("experiences")
            width = max(3, len(str(max(len(experiences) - 1, 0))))
            for i, e in enumerate(experiences):
                eg = g.create_group(str(i).zfill(width))
                eg.attrs["index"] = np.int64(i)
                eg.attrs["name"] = e["name"]
                eg.attrs["metadata_json"] = json.dumps(e["metadata"], sort_keys=True, separators=(",", ":"))
                for split in ("train", "test"):
                    s = eg.create_group(split)
                    part = e[split]
                    x = np.asarray(part["features"], dtype=np.float32).reshape(-1, d)
                    packed = {"compression": "gzip", "compression_opts": 9, "shuffle": True} if compress else {}
                    s.create_dataset("features", data=x, track_times=False, **packed)
                    s["features"].attrs["axis0"] = "sample"
                    s["features"].attrs["axis1"] = "feature (see /feature_names)"
                    s.create_dataset("labels", data=np.asarray(part["labels"], dtype=np.int32), track_times=False, **packed)
                    for col in COLUMNS:
                        if col in part:
                            dtype = np.float64 if col == "time" else np.int32
                            s.create_dataset(col, data=np.asarray(part[col], dtype=dtype), track_times=False)
        content = digest(tmp)
        with h5py.File(tmp, "r+") as f:
            f.attrs["content_digest"] = content
        os.replace(tmp, path)
        return content
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
