#!/usr/bin/env python3
"""Why FedPer falls below FedAvg at Dirichlet(0.5): a results file of
Experiments/federated_fedper_clients.json (FedAvg and FedPer over 10, 20 and 40 clients sharing
the same 4,000 training digits, at Dirichlet 0.1 and 0.5) as two markdown tables: one row per
Dirichlet alpha and client count, then one per alpha separating a client's data size from its skew.

    python3 Experiments/tools/fedper_clients.py results/federated_fedper_clients.h5

Columns: training digits per client and the clients' label entropy (bits; means over clients and
seeds: the skew FedPer's private head faces), both methods' personal ACC (mean over a run's
clients, then mean ± std over seeds), FedPer − FedAvg with a paired t-test over seeds (both
methods of one seed see the same partition: the partition's seed is the run's) in the verdict
wording of continualkit.verdicts, and how many clients (over every seed) FedPer's personal model
beats, ties and loses to FedAvg's global model. The second table fits each client's gain (points)
on log2 of its training digits and its label entropy over every client of one alpha, with a
constant per client count and HC1 standard errors: within a Dirichlet split a client's size and
skew move together (a large share of one label makes a client both larger and more skewed), so
neither alone separates them.
"""
import os
import sys

import h5py
import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import federation_runs   # noqa: E402
from continualkit.verdicts import ALPHA as ALPHA_TEST, seed_stats   # noqa: E402
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
    FedAvg's (points), training digits, label entropy, the client count; and the paired test
    over seeds (both methods of a seed share the partition)."""
    fedavg, fedper = (part[part["variant"] == v].set_index("seed").sort_index() for v in ("fedavg", "fedper"))
    if list(fedavg.index) != list(fedper.index):
        raise SystemExit(f"FedAvg seeds {list(fedavg.index)} and FedPer seeds {list(fedper.index)} differ")
    test = seed_test(fedper["personal_acc"].to_numpy() * 100, fedavg["personal_acc"].to_numpy() * 100)
    gains, sizes, entropies = [], [], []
    for seed in fedavg.index:
        acc_a, n, h = clients(f, fedavg.loc[seed, "run_id"])
        acc_p, n_p, _ = clients(f, fedper.loc[seed, "run_id"])
        if not np.array_equal(n, n_p):
            raise SystemExit(f"seed {seed}: FedAvg and FedPer saw different partitions")
        gains.append((acc_p - acc_a) * 100)
        sizes.append(n)
        entropies.append(h)
    return tuple(np.concatenate(x) for x in (gains, sizes, entropies)) + (test,)


def seed_test(fedper, fedavg):
    """Means ± std over seeds, the mean paired difference and the paired t-test's two-sided p
    (scipy.stats.ttest_rel), with the verdict of continualkit.verdicts' wording at 0.05."""
    p = float(stats.ttest_rel(fedper, fedavg).pvalue) if len(fedper) > 1 else float("nan")
    diff = float(np.mean(fedper - fedavg))
    significant = p < ALPHA_TEST
    verdict = ("holds" if diff > 0 else "fails") + ("" if significant else " (not significant)")
    return dict(fedper=seed_stats(fedper.tolist()), fedavg=seed_stats(fedavg.tolist()), diff=diff, p=p, verdict=verdict)


def row(alpha, users, gain, size, entropy, t):
    """The first table's row of one alpha and client count."""
    return (f"| {alpha:g} | {users} | {size.mean():.0f} | {entropy.mean():.2f} "
            f"| {mean_std(t['fedavg'])} | {mean_std(t['fedper'])} | {t['diff']:+.2f} "
            f"| {t['verdict']} (p = {t['p']:.2g}) | {np.sum(gain > 0)} / {np.sum(gain == 0)} / {np.sum(gain < 0)} |")


def fit(alpha, gain, size, entropy, count):
    """The second table's row: least squares of a client's gain (points) on log2 of its training
    digits and its label entropy, over every client of one alpha, with a constant per client
    count (so size is compared within a split, not across the 10-, 20- and 40-client files) and
    heteroscedasticity-robust standard errors (HC1: small clients' accuracies are noisier)."""
    dummies = [(count == c).astype(float) for c in np.unique(count)]
    x = np.column_stack([np.log2(size), entropy] + dummies)
    beta, *_ = np.linalg.lstsq(x, gain, rcond=None)
    e = gain - x @ beta
    bread = np.linalg.inv(x.T @ x)
    cov = bread @ (x.T * e ** 2) @ x @ bread * gain.size / (gain.size - x.shape[1])
    se = np.sqrt(np.diag(cov))
    r2 = 1 - e @ e / ((gain - gain.mean()) @ (gain - gain.mean()))
    return f"| {alpha:g} | {gain.size} | {beta[0]:+.2f} ± {se[0]:.2f} | {beta[1]:+.2f} ± {se[1]:.2f} | {r2:.2f} |"


def main(path):
    runs = federation_runs(path)
    if USERS not in runs.columns or ALPHA not in runs.columns:
        raise SystemExit(f"{path}: no swept {USERS} and {ALPHA} (a results file of federated_fedper_clients.json?)")
    print("| α | clients | training digits per client | label entropy (bits) | FedAvg personal ACC "
          "| FedPer personal ACC | FedPer − FedAvg | FedPer > FedAvg (paired) | clients: FedPer wins / ties / loses |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    runs[ALPHA], runs[USERS] = runs[ALPHA].astype(float), runs[USERS].astype(int)
    fits = []
    with h5py.File(path, "r") as f:
        for alpha, by_alpha in runs.groupby(ALPHA, sort=True):
            pooled = []
            for users, part in by_alpha.groupby(USERS, sort=True):
                *arrays, t = paired(f, part)
                print(row(alpha, users, *arrays, t))
                pooled.append(arrays + [np.full(arrays[0].size, users)])
            fits.append(fit(alpha, *(np.concatenate(a) for a in zip(*pooled))))
    print("\n| α | clients (all counts and seeds) | gain per doubling of a client's digits (points) "
          "| gain per bit of label entropy (points) | R² |")
    print("|---:|---:|---:|---:|---:|")
    print("\n".join(fits))


if __name__ == "__main__":
    main(sys.argv[1])
