#!/usr/bin/env python3
"""Accuracy-energy and accuracy-memory Pareto fronts of a ContinualKit results file.

Usage: python3 plot_pareto.py RESULTS.h5 OUT.png [--accuracy prequential_acc|acc|final_acc]

Groups runs by variant name without its trailing "-s<seed>" (or "_s<seed>"), averages over seeds,
prints a markdown table (mean ± std) with the Pareto-optimal groups marked, and draws the two
fronts: higher accuracy and lower cost (training energy in J; peak training memory in bytes).
Accuracy defaults to the prequential accuracy when the file has scheduled runs, else ACC.
"""
import argparse
import os
import re
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def load(path):
    """The summary with a `group` column: for sweep files, the variant plus every swept value
    except the seed (so seeds are averaged); for `variants` files, the name without a trailing
    "-s<seed>" / "_s<seed>"."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from continualkit_analysis import load_summary, group_columns, config_label
    df = load_summary(path)
    columns = group_columns(df)
    swept = [c for c in columns if c not in ("variant", "name")]
    if swept:
        df["group"] = [config_label(tuple(row), columns) for row in df[columns].itertuples(index=False)]
    else:
        df["group"] = df["name"].map(lambda n: re.sub(r"([-_]s\d+|_seed=\d+)$", "", n))
    return df


def pareto(points):
    """Indices of points (cost, accuracy) not dominated: no other has cost <= and accuracy >=, one strictly."""
    keep = []
    for i, (c, a) in enumerate(points):
        dominated = any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for j, (c2, a2) in enumerate(points) if j != i)
        if not dominated:
            keep.append(i)
    return keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--accuracy", default=None)
    args = ap.parse_args()
    df = load(args.results)
    df = df[df["status"] == "completed"]
    metric = args.accuracy or ("prequential_acc" if df["prequential_acc"].notna().any() else "acc")
    cols = list(dict.fromkeys([metric, "final_acc", "acc_int8", "energy_j", "training_sessions", "peak_memory_bytes"]))
    g = df.groupby("group")[cols].agg(["mean", "std", "count"])
    groups = list(g.index)
    acc = g[(metric, "mean")].to_numpy()
    energy = g[("energy_j", "mean")].to_numpy()
    memory = g[("peak_memory_bytes", "mean")].to_numpy()
    front_e = set(pareto(list(zip(energy, acc))))
    front_m = set(pareto(list(zip(memory, acc))))

    print(f"| variant | seeds | {metric} | final acc | int8 acc | energy (J) | sessions | peak memory (B) | Pareto (E / M) |")
    print("|---|---|---|---|---|---|---|---|---|")
    order = np.argsort(energy)
    for i in order:
        r = g.iloc[i]
        def ms(c, fmt="{:.4f}"):
            m, s = r[(c, "mean")], r[(c, "std")]
            return (fmt.format(m) + " ± " + fmt.format(0 if np.isnan(s) else s)) if not np.isnan(m) else "–"
        print(f"| {groups[i]} | {int(r[(metric, 'count')])} | {ms(metric)} | {ms('final_acc')} | {ms('acc_int8')} | "
              f"{ms('energy_j', '{:.3g}')} | {ms('training_sessions', '{:.1f}')} | {ms('peak_memory_bytes', '{:.0f}')} | "
              f"{'E' if i in front_e else '-'} / {'M' if i in front_m else '-'} |")

    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, cost, front, label in [(axes[0], energy, front_e, "training energy (J)"),
                                   (axes[1], memory, front_m, "peak training memory (bytes)")]:
        ax.scatter(cost, acc, color="tab:gray")
        for i, name in enumerate(groups):
            ax.annotate(name, (cost[i], acc[i]), fontsize=7, xytext=(3, 3), textcoords="offset points")
        f = sorted(front, key=lambda i: cost[i])
        ax.plot(cost[f], acc[f], "o-", color="tab:red", label="Pareto front")
        if (cost > 0).all():
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(metric)
        ax.legend()
        ax.grid(alpha=0.3)
    axes[0].set_title("accuracy vs energy")
    axes[1].set_title("accuracy vs memory")
    fig.tight_layout()
    fig.savefig(args.out, dpi=130)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
