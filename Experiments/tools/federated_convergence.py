#!/usr/bin/env python3
"""Rounds to converge, per configuration, from the learning curves a federated results file
stores (`federation/personal_accuracy` and `global_accuracy`, the mean over the evaluated clients
at every `evaluate_every` rounds), by one stated rule:

    A(r) = the mean of the curve over the evaluations in (r - 50, r]   (a 50-round running mean)
    rounds to converge = the first evaluated round r >= 50 with A(r + 100) - A(r) < 0.1 point

i.e. the round after which the smoothed accuracy gains less than 0.1 point over the next 100
rounds (issue 43's rule, smoothed because one evaluation moves by a few tenths between rounds).
A run whose curve has not met it by round R - 100 (the last round the rule can be checked at) is
counted as not converged. A curve can meet the rule on a temporary plateau and rise again, so the
table also gives each configuration's gain over its last 100 rounds, A(R) - A(R - 100): the
largest over its seeds, and how many seeds still gain >= 0.1 point there. Personal: the model each
phone predicts with; global: the global model (share = all only). Runs are grouped by configuration and Dirichlet alpha (the swept
federation.partition.alpha, or variants named NAME_alpha=A, as federated_orderings.py reads them).

    python3 Experiments/tools/federated_convergence.py results/federated_mnist_pfl.h5
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import load_summary   # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from federated_orderings import by_alpha       # noqa: E402

WINDOW, HORIZON, GAIN = 50, 100, 0.1


def running_mean(rounds, acc, r):
    """A(r): the mean of the curve over its evaluations in (r - WINDOW, r]."""
    return np.nanmean(acc[(rounds > r - WINDOW) & (rounds <= r)])


def converged_round(rounds, acc):
    """The rule above on one curve (rounds: 1-based evaluated rounds; acc in %), or None."""
    rounds, acc = np.asarray(rounds, dtype=float), np.asarray(acc, dtype=float)
    if acc.size == 0 or not np.isfinite(acc).any():
        return None
    smooth = np.array([running_mean(rounds, acc, r) for r in rounds])
    for i, r in enumerate(rounds):
        if r < WINDOW:
            continue
        later = np.nonzero(rounds >= r + HORIZON)[0]
        if later.size == 0:
            return None
        if smooth[later[0]] - smooth[i] < GAIN:
            return int(r)
    return None


def final_gain(rounds, acc):
    """A(R) - A(R - HORIZON): the smoothed gain over a curve's last HORIZON rounds (nan if none)."""
    rounds, acc = np.asarray(rounds, dtype=float), np.asarray(acc, dtype=float)
    if acc.size == 0 or not np.isfinite(acc).any():
        return float("nan")
    last = rounds.max()
    return float(running_mean(rounds, acc, last) - running_mean(rounds, acc, last - HORIZON))


def run_curves(path):
    """Each completed run of a federated results file, in the file's order: (configuration,
    alpha, evaluated rounds (1-based), rounds run, {"personal": curve, "global": curve} in %; a
    curve is all nan where the configuration has no such model)."""
    summary = load_summary(path)
    ok = by_alpha(summary[summary["status"] == "completed"] if "status" in summary.columns else summary)
    with h5py.File(path, "r") as f:
        for _, run in ok.iterrows():
            fg = f["runs"][run["run_id"]]["federation"]
            yield (run["variant"], run["alpha"], fg["evaluated_round"][()] + 1, len(fg["round"][()]),
                   {kind: fg[f"{kind}_accuracy"][()] * 100 for kind in ("personal", "global")})


def main(path):
    rows = {}
    for variant, alpha, rounds, total, accs in run_curves(path):
        entry = rows.setdefault((variant, alpha), {"personal": [], "global": [], "R": total,
                                                   "personal_gain": [], "global_gain": []})
        for kind, acc in accs.items():
            entry[kind].append(converged_round(rounds, acc) if np.isfinite(acc).any() else np.nan)
            entry[f"{kind}_gain"].append(final_gain(rounds, acc))
    print("| configuration | α | n | rounds to converge, personal | rounds to converge, global | "
          f"last {HORIZON} rounds' gain, personal | last {HORIZON} rounds' gain, global |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, alpha), e in sorted(rows.items(), key=lambda kv: (kv[0][1], list(rows).index(kv[0]))):
        cells = [cell(e[kind], e["R"]) for kind in ("personal", "global")]
        gains = [gain_cell(e[f"{kind}_gain"]) for kind in ("personal", "global")]
        print(f"| {name} | {alpha:g} | {len(e['personal'])} | {cells[0]} | {cells[1]} | {gains[0]} | {gains[1]} |")
    print()


def gain_cell(gains):
    """The largest last-horizon gain over the seeds, and how many seeds gain >= GAIN there."""
    g = [x for x in gains if np.isfinite(x)]
    if not g:
        return "—"
    rising = sum(x >= GAIN for x in g)
    return f"{max(g):+.2f}" + (f" ({rising} of {len(g)} ≥ {GAIN})" if rising else "")


def cell(values, R):
    """mean ± std of the converged rounds, or how many runs had not converged by R - 100."""
    if all(isinstance(x, float) and np.isnan(x) for x in values):
        return "—"
    met = [x for x in values if x is not None]
    if len(met) < len(values):
        return f"not by {R - HORIZON} in {len(values) - len(met)} of {len(values)}" + (f" (others {np.mean(met):.0f})" if met else "")
    return f"{np.mean(met):.0f} ± {np.std(met, ddof=1):.0f}" if len(met) > 1 else f"{met[0]:.0f}"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
