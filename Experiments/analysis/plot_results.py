#!/usr/bin/env python3
"""Plot a ContinualKit results file to PNGs.

    python plot_results.py results/tiny_sweep.h5 plots/ [--x optimizer.lr]

A configuration is a variant plus its values of every swept column except seed
(`df.attrs["group_by"]`), so only seeds are pooled. Writes, per configuration,
`heatmap_<variant>[_<column>=<value>…].png` (mean accuracy matrix over its completed runs),
`acc_bwt_vs_<x>.png` (ACC and BWT against a swept value, one line per configuration of the other
swept columns, error bars = std over seeds; x defaults to the first numeric swept column other
than seed, e.g. a memory budget or λ; without one, a bar chart per configuration) and
`accuracy_curves.png` (mean accuracy on the experiences seen so far after each experience, ± std,
one line per configuration).
"""
import argparse
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import continualkit_analysis as ck  # noqa: E402


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


def numeric_swept(df):
    return [c for c in df.attrs.get("swept_columns", []) if c != "seed" and c in df and np.issubdtype(df[c].dtype, np.number)]


def line_groups(done, x, columns=None):
    """The lines of an ACC/BWT-vs-x plot: one per configuration of every grouping column except x;
    each line's points are (x value, rows of the seeds at that value)."""
    columns = [c for c in (ck.group_columns(done) if columns is None else columns) if c != x]
    return ck.config_groups(done, columns)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("outdir")
    p.add_argument("--x", help="swept column for the x axis (default: first numeric swept column except seed)")
    args = p.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    df = ck.load_summary(args.file)
    done = df[df.status == "completed"]
    if done.empty:
        print("no completed runs to plot", file=sys.stderr)
        return 1
    written = []
    runs = {rid: ck.load_run(args.file, rid) for rid in done.run_id}

    columns = ck.group_columns(df)

    # 1. Accuracy-matrix heatmap per configuration (variant + swept values except seed).
    for variant, rows in ck.config_groups(done, columns):
        mats = np.stack([runs[r]["accuracy"] for r in rows.run_id])
        R = mats.mean(axis=0)
        names = runs[rows.run_id.iloc[0]]["experience_names"] or [str(i) for i in range(R.shape[0])]
        fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2, 1.0 * len(names) + 1.5))
        im = ax.imshow(R * 100, vmin=0, vmax=100, cmap="viridis")
        for i in range(R.shape[0]):
            for j in range(R.shape[1]):
                ax.text(j, i, f"{R[i, j] * 100:.0f}", ha="center", va="center",
                        color="white" if R[i, j] < 0.6 else "black", fontsize=8)
        ax.set_xticks(range(len(names)), [f"{j}:{n}" for j, n in enumerate(names)], rotation=45, ha="right")
        ax.set_yticks(range(len(names)), [f"{i}:{n}" for i, n in enumerate(names)])
        ax.set_xlabel("evaluated on experience j")
        ax.set_ylabel("after training on experience i")
        ax.set_title(f"{variant}: accuracy (%), mean of {len(rows)} runs")
        fig.colorbar(im, ax=ax, label="accuracy (%)")
        fig.tight_layout()
        out = os.path.join(args.outdir, f"heatmap_{safe(variant)}.png")
        fig.savefig(out, dpi=100)
        plt.close(fig)
        written.append(out)

    # 2. ACC and BWT against a swept value (error bars over seeds).
    candidates = numeric_swept(df)
    x = args.x or (candidates[0] if candidates else None)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric, label in zip(axes, ["acc", "bwt"], ["ACC (%)", "BWT (points)"]):
        if x is not None:
            for variant, rows in line_groups(done, x, columns):
                if rows[x].isna().all():  # a variant that does not sweep x (e.g. naive): a reference line
                    m, s = rows[metric].mean() * 100, rows[metric].std() * 100
                    line = ax.axhline(m, linestyle="--", color="gray", label=f"{variant} (no {x})")
                    if not np.isnan(s):
                        ax.axhspan(m - s, m + s, color=line.get_color(), alpha=0.1)
                    continue
                g = rows.groupby(x)[metric].agg(["mean", "std"]).sort_index()
                ax.errorbar(g.index, g["mean"] * 100, yerr=g["std"].fillna(0) * 100, marker="o", capsize=3, label=variant)
            values = done[x].dropna()
            if len(values) and values.min() > 0 and values.max() / values.min() >= 10:
                ax.set_xscale("log")
            ax.set_xlabel(x)
        else:
            bars = ck.config_groups(done, columns)
            means = [rows[metric].mean() * 100 for _, rows in bars]
            stds = [0 if np.isnan(rows[metric].std()) else rows[metric].std() * 100 for _, rows in bars]
            ax.bar(range(len(bars)), means, yerr=stds, capsize=3)
            ax.set_xticks(range(len(bars)), [name for name, _ in bars], rotation=30, ha="right")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    if x is not None:
        axes[0].legend(fontsize=8)
    fig.suptitle("mean ± std over seeds")
    fig.tight_layout()
    out = os.path.join(args.outdir, f"acc_bwt_vs_{safe(x) if x else 'variant'}.png")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    written.append(out)

    # 3. Accuracy over experiences.
    fig, ax = plt.subplots(figsize=(7, 4))
    for variant, rows in ck.config_groups(done, columns):
        curves = np.stack([ck.seen_accuracy_curve(runs[r]["accuracy"]) for r in rows.run_id]) * 100
        m, s = curves.mean(axis=0), curves.std(axis=0, ddof=1) if len(curves) > 1 else np.zeros(curves.shape[1])
        t = np.arange(len(m))
        ax.plot(t, m, marker="o", label=variant)
        ax.fill_between(t, m - s, m + s, alpha=0.2)
    ax.set_xlabel("after training on experience i")
    ax.set_ylabel("mean accuracy on experiences 0..i (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(args.outdir, "accuracy_curves.png")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    written.append(out)

    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
