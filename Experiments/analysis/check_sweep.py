#!/usr/bin/env python3
"""Check a sweep results file from Python (CI): every /summary row equals the values recomputed
from its run's accuracy matrix (ACC, BWT, FWT vs baseline_random, forgetting, learning accuracy),
the table has one row per complete run group in sweep order, string columns decode, and (with
--plots DIR) the PNGs of plot_results.py exist. For a population run (a `population/` subgroup)
the run's matrix is the mean over users, and `forgetting` is the mean of the per-user values
(docs/scenarios.md, "Populations"): it is recomputed from `population/accuracy_matrices` (users that
completed), or skipped with a note when the matrices were not stored (`store_matrices: false`).

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
    notes = []
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
        population = population_forgetting(args.file, row["run_id"])
        if population is not None:
            if population.get("forgetting") is None:
                expected.pop("forgetting", None)
                notes.append(f"{row['run_id']} ({row['name']}): population run without stored accuracy_matrices; forgetting not checked")
            else:
                expected["forgetting"] = population["forgetting"]
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
        configs = ck.config_groups(df[df.status == "completed"], ck.group_columns(df))
        needed = [f"heatmap_{ck_safe(name)}.png" for name, _ in configs] + ["accuracy_curves.png"]
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
    for note in notes:
        print("note:", note)
    for prob in problems:
        print("FAIL:", prob)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def population_forgetting(path, run_id):
    """None for an ordinary run; for a population run {"forgetting": mean over completed users of
    each user's forgetting (None when `population/accuracy_matrices` is not stored)}."""
    with h5py.File(path, "r") as f:
        g = f["runs"][run_id]
        if "population" not in g:
            return None
        pop = g["population"]
        if "accuracy_matrices" not in pop:
            return {"forgetting": None}
        mats = np.asarray(pop["accuracy_matrices"][()], dtype=float)
        status = [ck._str(s) for s in pop["status"][()]] if "status" in pop else ["completed"] * len(mats)
    per_user = [ck.recompute_metrics(R, np.zeros(R.shape[0]))["forgetting"]
                for R, st in zip(mats, status) if st == "completed"]
    return {"forgetting": float(np.mean(per_user)) if per_user else float("nan")}


def ck_safe(name):
    import re
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


if __name__ == "__main__":
    sys.exit(main())
