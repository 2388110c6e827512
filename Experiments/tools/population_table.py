#!/usr/bin/env python3
"""Strategy orderings on real people beside the synthetic habit stream (issue 27).

    python3 Experiments/tools/population_table.py results/real_har.h5 results/habit_strategies_population.h5 ...

For every file and configuration (variant, seeds pooled): the mean ± std of ACC and BWT over
every (person, seed) pair of its population runs (`runs/<id>/population/metrics/<m>`; federated
variants: the evaluated clients' personal values), the number of pairs, and the rank of the
configuration by mean ACC within its file. Last, for every pair of files, Kendall's τ between
the ACC orderings of the configurations they share (scipy), and which pairs of configurations
swap order."""
import itertools
import sys

import h5py
import numpy as np
from scipy.stats import kendalltau

sys.path.insert(0, __file__.rsplit("/Experiments/", 1)[0] + "/python")
from continualkit.io import configuration_name  # noqa: E402


def per_configuration(path):
    out = {}
    with h5py.File(path, "r") as f:
        for rid, g in f["runs"].items():
            if "population" not in g or "metrics" not in g["population"]:
                continue
            name = configuration_name(g.attrs["name"])
            m = g["population"]["metrics"]
            d = out.setdefault(name, {"acc": [], "bwt": []})
            for k in d:
                d[k].extend(np.asarray(m[k][()], dtype=float).tolist())
    return out


def main(paths):
    tables = {p: per_configuration(p) for p in paths}
    for p, t in tables.items():
        order = sorted(t, key=lambda c: -np.nanmean(t[c]["acc"]))
        print(f"\n{p}\n\n| rank | configuration | ACC % | BWT pts | person×seed pairs |\n|---|---|---|---|---|")
        for r, c in enumerate(order, 1):
            a, b = np.asarray(t[c]["acc"]) * 100, np.asarray(t[c]["bwt"]) * 100
            print(f"| {r} | {c} | {np.nanmean(a):.1f} ± {np.nanstd(a, ddof=1):.1f} | "
                  f"{np.nanmean(b):+.1f} ± {np.nanstd(b, ddof=1):.1f} | {np.sum(~np.isnan(a))} |")
    for p, q in itertools.combinations(paths, 2):
        shared = [c for c in tables[p] if c in tables[q]]
        if len(shared) < 3:
            continue
        x = [np.nanmean(tables[p][c]["acc"]) for c in shared]
        y = [np.nanmean(tables[q][c]["acc"]) for c in shared]
        tau = kendalltau(x, y).statistic
        swaps = [f"{a}/{b}" for (i, a), (j, b) in itertools.combinations(enumerate(shared), 2)
                 if (x[i] - x[j]) * (y[i] - y[j]) < 0]
        print(f"\n{p} vs {q}: Kendall tau of ACC orderings over {len(shared)} configurations = {tau:.2f}; "
              f"pairs in opposite order: {', '.join(swaps) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
