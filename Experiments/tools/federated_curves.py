#!/usr/bin/env python3
"""Learning curves of a federated comparison, the configurations a reader compares side by side:
one row per Dirichlet alpha, personal accuracy (the model each phone predicts with) on the left
and the global model's on the right, the mean over seeds of `federation/personal_accuracy` and
`global_accuracy` (the mean over the evaluated clients, every `evaluate_every` rounds) with the
seeds' range shaded. A configuration without a global model (local-only, FedPer, FedRep) is
absent from the right panel. `continualkit plot` draws every configuration's own panel; this
figure puts the ones the paper orderings name (and FedYogi and q-FedAvg) on the same axes; a
global model identical to one already drawn (Ditto's, APFL's and fine-tuning's are FedAvg's) is
named in the panel, not drawn again.

    python3 Experiments/tools/federated_curves.py results/federated_mnist_pfl_1000.h5 \
        -o docs/figures/federated_mnist_pfl_1000_curves.png
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt   # noqa: E402
import numpy as np                # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from federated_convergence import run_curves   # noqa: E402

SHOWN = ("local_only", "fedavg", "fedavg_finetune", "ditto", "apfl", "fedper", "fedrep", "pfedme",
         "per_fedavg_fo", "scaffold", "fednova", "fedprox", "fedyogi", "qfedavg")


def curves(path):
    """{(alpha, variant, kind): (rounds, [curve per seed])} for the configurations in SHOWN."""
    out = {}
    for variant, alpha, rounds, _, accs in run_curves(path):
        if variant not in SHOWN:
            continue
        for kind, acc in accs.items():
            if np.isfinite(acc).any():
                out.setdefault((alpha, variant, kind), (rounds, []))[1].append(acc)
    return out


def draw(data, title, output):
    alphas = sorted({a for a, _, _ in data})
    fig, axes = plt.subplots(len(alphas), 2, figsize=(10, 3.4 * len(alphas) + 1.2), squeeze=False, sharex=True)
    style = {v: (plt.cm.tab10(i % 10), "-" if i < 10 else "--") for i, v in enumerate(SHOWN)}
    present = [v for v in SHOWN if any(key[1] == v for key in data)]
    for row, alpha in enumerate(alphas):
        for col, kind in enumerate(("personal", "global")):
            ax, drawn, same = axes[row][col], [], []
            for v in SHOWN:
                if (alpha, v, kind) not in data:
                    continue
                rounds, seeds = data[(alpha, v, kind)]
                y = np.vstack(seeds)
                # Ditto's, APFL's and fine-tuning's global model is FedAvg's: one line, named.
                twin = next((d for d, dy in drawn if dy.shape == y.shape and np.array_equal(dy, y)), None)
                if twin is not None:
                    same.append((v, twin))
                    continue
                drawn.append((v, y))
                colour, dash = style[v]
                ax.plot(rounds, y.mean(0), color=colour, ls=dash, lw=1.2, label=v)
                ax.fill_between(rounds, y.min(0), y.max(0), color=colour, alpha=0.12, lw=0)
            ax.set_ylim(80, 100)
            ax.grid(alpha=0.3)
            for k, (v, twin) in enumerate(same):
                ax.text(0.98, 0.03 + 0.05 * k, f"{v}: the {twin} line", transform=ax.transAxes,
                        ha="right", va="bottom", fontsize=7, color="0.3")
            ax.set_title(f"{kind} accuracy, Dirichlet α = {alpha:g}", fontsize=9)
            ax.set_ylabel("ACC %")
            if row == len(alphas) - 1:
                ax.set_xlabel("round")
    handles = [plt.Line2D([], [], color=style[v][0], ls=style[v][1], lw=1.5) for v in present]
    fig.legend(handles, present, loc="lower center", ncol=7, fontsize=8, frameon=False)
    fig.suptitle(f"{title}\nmean over seeds, the seeds' range shaded; the y axis starts at 80 %", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(output, dpi=300)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True, help="PNG path")
    a = p.parse_args()
    name = os.path.splitext(os.path.basename(a.file))[0]
    draw(curves(a.file), f"{name}: learning curves (every 10 rounds)", a.output)
    print(a.output)


if __name__ == "__main__":
    main()
