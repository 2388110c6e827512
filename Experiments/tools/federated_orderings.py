#!/usr/bin/env python3
"""The orderings the personalised-FL and client-drift papers report on label-skewed MNIST-like
data, checked on a results file of Experiments/federated_mnist_pfl.json (or of its tuned twin,
federated_mnist_pfl_tuned.json) by the strict rule of
continualkit.verdicts (Welch test at 0.05 over seeds): one markdown table per Dirichlet alpha.

    python3 Experiments/tools/federated_orderings.py results/federated_mnist_pfl.h5

Each row: the paper's claim (higher > lower, on personal or global ACC), our means ± std over
seeds, the verdict and Welch p. Personal ACC: the model each phone predicts with, on its own test
share; global ACC: the final global model on the same shares (docs/federated.md).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import federation_runs   # noqa: E402
from continualkit.verdicts import order        # noqa: E402

PERSONALISED = ["ditto", "fedrep", "apfl", "per_fedavg_fo", "pfedme", "fedper", "fedavg_finetune"]
# (higher, lower, measure, who reports it)
CLAIMS = ([(m, "fedavg", "personal_acc", "pFL papers: personalised beats FedAvg's global model on skewed clients") for m in PERSONALISED]
          + [(m, "local_only", "personal_acc", "pFL papers: personalised beats training alone") for m in PERSONALISED]
          + [("scaffold", "fedavg", "global_acc", "SCAFFOLD (Karimireddy et al. 2020): corrects client drift"),
             ("fedprox", "fedavg", "global_acc", "FedProx (Li et al. 2020): steadier under heterogeneity"),
             ("fednova", "fedavg", "global_acc", "FedNova (Wang et al. 2020): normalised heterogeneous local steps")])


def mean_std(s):
    """A seed_stats cell: mean ± std, or — when nothing ran."""
    return "—" if s["n"] == 0 else f"{s['mean']:.2f} ± {s['std']:.2f}"


def p_text(p):
    """A Welch p cell: two significant digits, or — when there is none (NaN)."""
    return "—" if p != p else f"{p:.2g}"


def by_alpha(runs):
    """The runs with an `alpha` column and the variant's base name: from the swept
    `federation.partition.alpha` (federated_mnist_pfl.json), else from variants named
    `NAME_alpha=A` (federated_mnist_pfl_tuned.json, whose knobs are selected per alpha)."""
    runs = runs.copy()
    swept = "federation.partition.alpha"
    if swept in runs.columns:
        runs["alpha"] = runs[swept].astype(float)
        return runs
    parts = runs["variant"].str.rsplit("_alpha=", n=1, expand=True)
    if parts.shape[1] != 2 or parts[1].isna().any():
        raise SystemExit("no swept federation.partition.alpha and not every variant is named NAME_alpha=A")
    runs["variant"], runs["alpha"] = parts[0], parts[1].astype(float)
    return runs


def ordering_table(part, heading, skip_unrun=False):
    """The claims' table for the runs of one alpha (`part`), as markdown lines under `heading`;
    a claim whose higher variant has no run is a "not run" row, or left out with `skip_unrun`."""
    lines = [heading, "", "| claim (higher > lower) | measure | higher | lower | verdict | p |", "|---|---|---|---|---|---|"]
    present = set(part["variant"])
    for hi, lo, measure, who in CLAIMS:
        if skip_unrun and hi not in present:
            continue
        h = (part[part["variant"] == hi][measure] * 100).tolist()
        l = (part[part["variant"] == lo][measure] * 100).tolist()
        o = order(h, l)
        lines.append(f"| {hi} > {lo} | {measure.replace('_', ' ')} | {mean_std(o['a'])} | {mean_std(o['b'])} | {o['verdict']} | {p_text(o['p'])} |")
    return lines


def main(path):
    runs = by_alpha(federation_runs(path))
    for a in sorted(runs["alpha"].unique()):
        print("\n".join(ordering_table(runs[runs["alpha"] == a], f"#### Dirichlet α = {a:g}")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
