#!/usr/bin/env python3
"""Markdown tables of the few-shot and poisoning experiments (issue 32), mean ± std over seeds.

    python3 Experiments/tools/few_shot_table.py results/few_shot_habit.h5
    python3 Experiments/tools/few_shot_table.py results/poisoning_habit.h5

Few-shot: held-out users' accuracy after k personalisation steps (runs/<id>/few_shot/mean_accuracy),
per method. Poisoning: clean ACC (summary acc) and attack success rate
(runs/<id>/poisoning/attack_success_rate) per variant. Standard deviations are over seeds (n - 1).
"""
import sys
from collections import OrderedDict

import h5py
import numpy as np


def fmt(values, scale=100.0):
    v = np.asarray([x for x in values if not np.isnan(x)], dtype=float) * scale
    if len(v) == 0:
        return "—"
    if len(v) == 1:
        return f"{v[0]:.2f}"
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}"


def rows(f):
    summary = f["summary"][:]
    for r in summary:
        run_id = r["run_id"].decode() if isinstance(r["run_id"], bytes) else r["run_id"]
        variant = r["variant"].decode() if isinstance(r["variant"], bytes) else r["variant"]
        status = r["status"].decode() if isinstance(r["status"], bytes) else r["status"]
        yield run_id, variant, status, r


def few_shot(f):
    groups = OrderedDict()
    by_seed = {}
    ks = None
    for run_id, variant, status, r in rows(f):
        g = f["runs"][run_id]
        if status != "completed" or "few_shot" not in g:
            groups.setdefault(variant, []).append(None)
            continue
        fs = g["few_shot"]
        ks = list(fs["k"][:])
        groups.setdefault(variant, []).append((fs["mean_accuracy"][:], int(fs.attrs["meta_rows"])))
        by_seed[(variant, int(r["seed"]))] = fs["mean_accuracy"][:]
    print("| initialisation | n | " + " | ".join(f"k = {k} (%)" for k in ks) + " | meta-training rows |")
    print("|---|---:|" + "---:|" * len(ks) + "---:|")
    for variant, runs in groups.items():
        ok = [r for r in runs if r is not None]
        cols = [fmt([r[0][i] for r in ok]) for i in range(len(ks))]
        rows_ = sorted({r[1] for r in ok})
        print(f"| {variant} | {len(ok)} | " + " | ".join(cols) + f" | {'/'.join(str(x) for x in rows_)} |")
    if "fedavg" not in groups:
        return
    # Paired by seed (same users, same initial model): each method minus FedAvg, and seeds it wins.
    print()
    print("| paired with fedavg (same seed) | " + " | ".join(f"k = {k}: Δ points, wins" for k in ks) + " |")
    print("|---|" + "---:|" * len(ks))
    for variant in groups:
        if variant == "fedavg":
            continue
        seeds = sorted(s for (v, s) in by_seed if v == variant and ("fedavg", s) in by_seed)
        cells = []
        for i in range(len(ks)):
            d = [by_seed[(variant, s)][i] - by_seed[("fedavg", s)][i] for s in seeds]
            wins = sum(x > 0 for x in d)
            cells.append(f"{fmt(d)} ({wins}/{len(d)})")
        print(f"| {variant} − fedavg | " + " | ".join(cells) + " |")


def poisoning(f):
    groups = OrderedDict()
    for run_id, variant, status, r in rows(f):
        g = f["runs"][run_id]
        asr = float(g["poisoning"].attrs["attack_success_rate"]) if "poisoning" in g else float("nan")
        groups.setdefault(variant, []).append((float(r["acc"]) if status == "completed" else float("nan"), asr))
    print("| variant | n | clean ACC (%) | attack success (%) |")
    print("|---|---:|---:|---:|")
    for variant, runs in groups.items():
        print(f"| {variant} | {len(runs)} | {fmt([a for a, _ in runs])} | {fmt([s for _, s in runs])} |")


def main():
    with h5py.File(sys.argv[1], "r") as f:
        runs = f["runs"]
        first = runs[next(iter(runs))]
        if "few_shot" in first:
            few_shot(f)
        else:
            poisoning(f)


if __name__ == "__main__":
    main()
