#!/usr/bin/env python3
"""Check a sweep results file from Python (CI): every /summary row equals the values recomputed
from its run's accuracy matrix (ACC, BWT, FWT vs baseline_random, forgetting, learning accuracy),
the table has one row per complete run group in sweep order, string columns decode, and (with
--plots DIR) the PNGs of plot_results.py exist.

    python check_sweep.py results/tiny_sweep.h5 --plots plots/ [--expect-runs 24]
Exit code 0 when everything matches, 1 otherwise.
"""
import argparse
import glob
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import continualkit_analysis as ck  # noqa: E402

TOLERANCE = 1e-9


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--plots", help="directory that plot_results.py wrote")
    p.add_argument("--expect-runs", type=int)
    args = p.parse_args(argv)
    problems = []
    df = ck.load_summary(args.file)
    with h5py.File(args.file, "r") as f:
        complete = [k for k, g in f["runs"].items() if int(g.attrs.get("complete", 0)) == 1]
        kind = ck._str(f.attrs.get("kind", ""))
    if kind != "sweep":
        problems.append(f"root attribute kind is {kind!r}, not 'sweep'")
    if sorted(df.run_id) != sorted(complete):
        problems.append(f"/summary has {len(df)} rows but {len(complete)} complete run groups")
    if args.expect_runs is not None and len(df) != args.expect_runs:
        problems.append(f"expected {args.expect_runs} runs, found {len(df)}")
    if list(df.sweep_index) != sorted(df.sweep_index):
        problems.append("rows are not sorted by sweep_index")
    if not all(isinstance(x, str) for x in df.run_id):
        problems.append("run_id did not decode to str")
    for c in df.attrs["swept_columns"]:
        if c not in df.columns:
            problems.append(f"swept column {c!r} missing from /summary")
    checked = 0
    for row in df.itertuples(index=False):
        row = row._asdict()
        run = ck.load_run(args.file, row["run_id"])
        if run["status"] != row["status"]:
            problems.append(f"{row['run_id']}: status {row['status']} in /summary, {run['status']} in the run group")
        if row["status"] != "completed":
            if not math.isnan(row["acc"]):
                problems.append(f"{row['run_id']}: {row['status']} run has ACC {row['acc']}")
            continue
        expected = ck.recompute_metrics(run["accuracy"], run["baseline_random"])
        for metric, value in expected.items():
            got = row[metric]
            if not (abs(got - value) <= TOLERANCE or (np.isnan(got) and np.isnan(value))):
                problems.append(f"{row['run_id']} ({row['name']}): {metric} = {got!r} in /summary, recomputed {value!r}")
            stored = run["metrics"].get(metric)
            if stored is not None and not (abs(stored - got) <= TOLERANCE or (np.isnan(stored) and np.isnan(got))):
                problems.append(f"{row['run_id']}: {metric} differs between /summary and runs/<id>/metrics")
        if row["trainable_parameters"] != run["costs"].get("trainable_parameters"):
            problems.append(f"{row['run_id']}: trainable_parameters differs from costs")
        checked += 1
    summary = ck.mean_std(df)
    if summary.empty and checked:
        problems.append("mean_std returned nothing")
    if args.plots:
        pngs = glob.glob(os.path.join(args.plots, "*.png"))
        variants = df[df.status == "completed"].variant.unique()
        needed = [f"heatmap_{ck_safe(v)}.png" for v in variants] + ["accuracy_curves.png"]
        for n in needed:
            path = os.path.join(args.plots, n)
            if not os.path.exists(path):
                problems.append(f"missing plot {path}")
            else:
                with open(path, "rb") as fh:
                    if fh.read(8) != b"\x89PNG\r\n\x1a\n":
                        problems.append(f"{path} is not a PNG")
        if not any(os.path.basename(x).startswith("acc_bwt_vs_") for x in pngs):
            problems.append("missing acc_bwt_vs_*.png")
    print(f"{args.file}: {len(df)} rows, {checked} completed runs recomputed from their accuracy matrices")
    print(summary.to_string())
    for prob in problems:
        print("FAIL:", prob)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def ck_safe(name):
    import re
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


if __name__ == "__main__":
    sys.exit(main())
