#!/usr/bin/env python3
"""Checks that files in the ContinualKit HDF5 scenario layout read in h5py and are consistent.

Usage: python3 datasets/check_export.py FILE.h5 [FILE.h5 ...]
Exit status 0 if every file passes, 1 otherwise (each problem is printed).
Layout: docs/scenarios.md ("HDF5 scenario layout").
"""
import json
import sys

import h5py
import numpy as np


def check(path):
    problems = []
    with h5py.File(path, "r") as f:
        a = f.attrs
        if a.get("format") != "continualkit-scenario":
            return [f"root attribute format is {a.get('format')!r}"]
        if int(a["format_version"]) != 1:
            problems.append(f"format_version {a['format_version']}")
        head, classes, dim = a["head"], int(a["classes"]), int(a["dimension"])
        if head not in ("binary", "multiclass"):
            problems.append(f"head {head!r}")
        names = f["feature_names"].asstr()[:]
        if len(names) != dim:
            problems.append(f"{len(names)} feature names but dimension {dim}")
        json.loads(a["metadata_json"])
        # Numeric order (by the stored index, else the group name): "1000" sorts after "999".
        def order(g):
            e = f["experiences"][g]
            if "index" in e.attrs:
                return (int(e.attrs["index"]), g)
            return (int(g) if g.isdigit() else 1 << 62, g)
        groups = sorted(f["experiences"], key=order)
        if len(groups) != int(a["experience_count"]) or len(f["experience_names"]) != len(groups):
            problems.append("experience_count / experience_names disagree with /experiences")
        total = 0
        for i, g in enumerate(groups):
            e = f["experiences"][g]
            if int(e.attrs["index"]) != i:
                problems.append(f"{g}: index {e.attrs['index']} != {i}")
            json.loads(e.attrs["metadata_json"])
            for split in ("train", "test"):
                x = e[split]["features"][:]
                y = e[split]["labels"][:]
                if x.dtype != np.float32 or y.dtype != np.int32:
                    problems.append(f"{g}/{split}: dtypes {x.dtype}, {y.dtype}")
                if x.ndim != 2 or x.shape[1] != dim or x.shape[0] != y.shape[0]:
                    problems.append(f"{g}/{split}: shapes {x.shape} {y.shape}")
                if y.size and (y.min() < 0 or y.max() >= classes):
                    problems.append(f"{g}/{split}: labels outside 0..{classes - 1}")
                if not np.isfinite(x).all():
                    problems.append(f"{g}/{split}: non-finite features")
                total += y.size
        if total == 0:
            problems.append("no samples")
        print(f"{path}: {a['name']}, {len(groups)} experiences, {total} samples, {dim} features, "
              f"{head} ({classes} classes): {'ok' if not problems else 'FAILED'}")
    return problems


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    failed = False
    for p in paths:
        for problem in check(p):
            print(f"  {p}: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
