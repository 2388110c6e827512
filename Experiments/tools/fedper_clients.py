#!/usr/bin/env python3
"""Why FedPer falls below FedAvg at Dirichlet(0.5): a results file of
Experiments/federated_fedper_clients.json (FedAvg and FedPer over 10, 20 and 40 clients sharing
the same 4,000 training digits, at Dirichlet 0.1 and 0.5) as two markdown tables: one row per
Dirichlet alpha and client count, then one per alpha separating a client's data size from its skew.

    python3 Experiments/tools/fedper_clients.py results/federated_fedper_clients.h5

Columns: training digits per client and the clients' label entropy (bits; means over clients and
seeds: the skew FedPer's private head faces), both methods' personal ACC (mean over a run's
clients, then mean ± std over seeds), FedPer − FedAvg with the Welch verdict of
continualkit.verdicts, the share of clients (over every seed) on which FedPer's personal model
beats FedAvg's global model, and the correlation over those clients between FedPer's per-client
gain and the client's training digits. The second table fits each client's gain (points) on
log2 of its training digits and its label entropy, over every client of one alpha: within a
Dirichlet split a client's size and skew move together (a large share of one label makes a
client both larger and more skewed), so the correlation alone cannot separate them. Both methods of one seed and client count see the same
partition (the partition's seed is the run's), so the per-client comparison is paired.
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import federation_runs   # noqa: E402
from continualkit.verdicts import order        # noqa: E402
from federated_orderings import mean_std       # noqa: E402  (this folder)

USERS = "population.users"
ALPHA = "federation.partition.alpha"


def clients(f, run_id):
    """Per client of one run: final personal accuracy (its model on its own test share, mean over
    experiences), training digits, label entropy in bits."""
    g = f["runs"][run_id]
    acc = np.asarray(g["population"]["accuracy_matrices"][()], dtype=float)
    final = np.array([np.nanmean(m[-1]) for m in acc])
    counts = np.asarray(g["federation"]["partition_label_counts"][()], dtype=float)
    shares = counts / counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(shares > 0, shares * np.log2(shares), 0.0), axis=1)
    return final, counts.sum(axis=1), entropy


def paired(f, part):
    """Per client over the seeds of one alpha and client count: FedPer's personal accuracy minus
    FedAvg's (points), training digits, label entropy; and the Welch order over seeds."""
    fedavg, fedper = (part[part["variant"] == v].sort_values("seed") for v in ("fedavg", "fedper"))
    o = order((fedper["personal_acc"] * 100).tolist(), (fedavg["personal_acc"] * 100).tolist())
    gains, sizes, entropies = [], [], []
    for (_, a), (_, p) in zip(fedavg.iterrows(), fedper.iterrows()):
        acc_a, n, h = clients(f, a["run_id"])
        acc_p, n_p, _ = clients(f, p["run_id"])
        if not np.array_equal(n, n_p):
            raise SystemExit(f"seed {a['seed']}: FedAvg and FedPer saw different partitions")
        gains.append((acc_p - acc_a) * 100)
        sizes.append(n)
        entropies.append(h)
    return tuple(np.concatenate(x) for x in (gains, sizes, entropies)) + (o,)


def row(alpha, users, gain, size, entropy, o):
    """The first table's row of one alpha and client count."""
    r = np.corrcoef(gain, size)[0, 1] if gain.size > 2 else np.nan
    return (f"| {alpha:g} | {users} | {size.mean():.0f} | {entropy.mean():.2f} "
            f"| {mean_std(o['b'])} | {mean_std(o['a'])} | {o['a']['mean'] - o['b']['mean']:+.2f} "
            f"| {o['verdict']} (p = {o['p']:.2g}) | {np.mean(gain > 0) * 100:.0f} % of {gain.size} | {r:+.2f} |")


def fit(alpha, gain, size, entropy):
    """The second table's row: least squares of a client's gain (points) on log2 of its training
    digits and its label entropy, over every client of one alpha (all client counts and seeds),
    with the coefficients' standard errors (ordinary, homoscedastic)."""
    x = np.column_stack([np.ones_like(gain), np.log2(size), entropy])
    beta, *_ = np.linalg.lstsq(x, gain, rcond=None)
    residual = gain - x @ beta
    dof = gain.size - x.shape[1]
    se = np.sqrt(np.diag(residual @ residual / dof * np.linalg.inv(x.T @ x)))
    r2 = 1 - residual @ residual / ((gain - gain.mean()) @ (gain - gain.mean()))
    return (f"| {alpha:g} | {gain.size} | {beta[1]:+.2f} ± {se[1]:.2f} | {beta[2]:+.2f} ± {se[2]:.2f} "
            f"| {r2:.2f} |")


def main(path):
    runs = federation_runs(path)
    if USERS not in runs.columns or ALPHA not in runs.columns:
        raise SystemExit(f"{path}: no swept {USERS} and {ALPHA} (a results file of federated_fedper_clients.json?)")
    print("| α | clients | training digits per client | label entropy (bits) | FedAvg personal ACC "
          "| FedPer personal ACC | FedPer − FedAvg | FedPer > FedAvg | clients FedPer wins "
          "| corr(gain, client's digits) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    runs[ALPHA], runs[USERS] = runs[ALPHA].astype(float), runs[USERS].astype(int)
    fits = []
    with h5py.File(path, "r") as f:
        for alpha, by_alpha in runs.groupby(ALPHA, sort=True):
            pooled = []
            for users, part in by_alpha.groupby(USERS, sort=True):
                *arrays, o = paired(f, part)
                print(row(alpha, users, *arrays, o))
                pooled.append(arrays)
            fits.append(fit(alpha, *(np.concatenate(a) for a in zip(*pooled))))
    print("\n| α | clients (all counts and seeds) | gain per doubling of a client's digits (points) "
          "| gain per bit of label entropy (points) | R² |")
    print("|---:|---:|---:|---:|---:|")
    print("\n".join(fits))


if __name__ == "__main__":
    main(sys.argv[1])
