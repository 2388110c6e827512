#!/usr/bin/env python3
"""Runs the quickstart experiment and checks its HDF5 file from Python (h5py, pandas, xarray).

Recomputes ACC, BWT, FWT, forgetting and learning accuracy from each run's stored accuracy
matrix with the definitions of docs/concepts.md (Metrics) and compares them with the stored metric values, checks
the /summary table loads into pandas, and that xarray sees named dimensions.

Usage: check_results.py [--bin PATH_TO_continual] [--keep]   (exit 0 = all checks passed)
Without --bin it uses this checkout's .build/release or .build/debug binary, else `continual`
on the PATH.
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_binary(explicit):
    if explicit:
        return explicit
    for c in (".build/release/continual", ".build/debug/continual"):
        p = os.path.join(ROOT, c)
        if os.access(p, os.X_OK):
            return p
    on_path = shutil.which("continual")
    if on_path:
        return on_path
    sys.exit("no continual binary: run `swift build` first, put `continual` on the PATH, or pass --bin")


def metrics_from_matrix(R, b):
    T = R.shape[0]
    acc = R[T - 1].mean()
    learning = np.mean([R[j, j] for j in range(T)])
    if T == 1:
        return dict(acc=acc, bwt=math.nan, fwt=math.nan, forgetting=math.nan, learning_accuracy=learning)
    bwt = np.mean([R[T - 1, j] - R[j, j] for j in range(T - 1)])
    fwt = np.mean([R[j - 1, j] - b[j] for j in range(1, T)])
    forgetting = np.mean([R[:T - 1, j].max() - R[T - 1, j] for j in range(T - 1)])
    return dict(acc=acc, bwt=bwt, fwt=fwt, forgetting=forgetting, learning_accuracy=learning)


def close(a, b, tol=1e-12):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin")
    parser.add_argument("--keep", action="store_true", help="keep the results file")
    args = parser.parse_args()
    binary = find_binary(args.bin)
    out_dir = tempfile.mkdtemp(prefix="ck-check-")
    path = os.path.join(out_dir, "quickstart.h5")
    run = subprocess.run([binary, "run", os.path.join(ROOT, "Experiments/quickstart.json"), "--output", path],
                         cwd=ROOT, capture_output=True, text=True)
    print(run.stdout)
    if run.returncode != 0:
        sys.exit(f"continual run failed ({run.returncode}): {run.stderr}")

    failures = []
    with h5py.File(path, "r") as f:
        for key in ("toolkit_version", "schema_version", "created_utc", "experiment_json"):
            if key not in f.attrs:
                failures.append(f"root attribute {key} missing")
        if not isinstance(f.attrs["experiment_json"], str):
            failures.append("experiment_json should read as str")
        runs = f["runs"]
        names = []
        for run_id in runs:
            g = runs[run_id]
            names.append(g.attrs["name"])
            R = g["accuracy_matrix"][:]
            b = g["baseline_random"][:]
            T = R.shape[0]
            if R.shape != (T, T) or R.dtype != np.float64:
                failures.append(f"{run_id}: accuracy_matrix has shape {R.shape} dtype {R.dtype}")
            expected = metrics_from_matrix(R, b)
            stored = g["metrics"].attrs
            for k, v in expected.items():
                if not close(float(stored[k]), float(v)):
                    failures.append(f"{run_id} {k}: stored {stored[k]} recomputed {v}")
            fpe = g["forgetting_per_experience"][:]
            if not np.allclose(fpe, [R[:T - 1, j].max() - R[T - 1, j] for j in range(T - 1)], atol=1e-12):
                failures.append(f"{run_id}: forgetting_per_experience mismatch")
            if g["test_sizes"][:].sum() <= 0:
                failures.append(f"{run_id}: test_sizes empty")
            print(f"run {g.attrs['name']:<8} {run_id}: ACC {expected['acc']:.4f} BWT {expected['bwt']:+.4f} "
                  f"FWT {expected['fwt']:+.4f} forgetting {expected['forgetting']:.4f}  (recomputed = stored)")
        if sorted(names) != ["joint", "naive"]:
            failures.append(f"unexpected runs {names}")

    df = pd.DataFrame(h5py.File(path, "r")["summary"][:])
    for col in ("run_id", "name", "strategy", "status"):
        df[col] = df[col].str.decode("utf-8")
    if len(df) != 2 or set(df["status"]) != {"completed"}:
        failures.append(f"summary table unexpected:\n{df}")
    naive = df[df.name == "naive"].iloc[0]
    joint = df[df.name == "joint"].iloc[0]
    if not naive.bwt < 0:
        failures.append(f"naive should forget (BWT < 0), got {naive.bwt}")
    if not joint.bwt > naive.bwt:
        failures.append(f"joint should forget less than naive: {joint.bwt} vs {naive.bwt}")
    print(df[["name", "strategy", "acc", "bwt", "fwt", "forgetting", "train_seconds"]].to_string(index=False))

    try:
        import xarray as xr
        ds = xr.open_dataset(path, engine="h5netcdf", group=f"runs/{df.run_id[0]}", phony_dims="sort")
        dims = ds["accuracy_matrix"].dims
        if dims != ("trained_through", "experience"):
            failures.append(f"xarray dims {dims}")
        else:
            print(f"xarray: accuracy_matrix dims {dims}")
    except ImportError:
        print("xarray/h5netcdf not installed: skipping the xarray check")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"check_results: all checks passed ({path})")
    if not args.keep:
        os.remove(path)


if __name__ == "__main__":
    main()
