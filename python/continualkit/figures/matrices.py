"""Figures of the accuracy matrix: its heat map, the forgetting curves of each experience, and the
summary metrics against a swept value."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt  # the package's __init__ chose the Agg backend first
import numpy as np
import pandas as pd

from ..stats import aggregate, seed_stats
from .common import (FORGETTING_NOTE, MATRIX_LABELS, MAX_CELLS, MAX_LINES, MAX_PANELS, METRIC_LABELS,
                     MIN_N_BAND, OKABE_ITO, _block_labels, _block_mean, _blocks, _conf_matrices, _configs,
                     _experiment, _footnote, _grid, _n_label, _summary, _wrap, phase_styles, style)


# ---------------------------------------------------------------------------------------------
def accuracy_heatmap(path, configurations=None, metric="accuracy_matrix", df=None, max_cells=MAX_CELLS):
    """R[i][j] (mean over seeds) of each configuration, one panel each (at most MAX_PANELS: pass
    `configurations` or use `pages`). Streams longer than `max_cells` experiences are averaged
    into blocks of consecutive experiences (labelled first–last index); values are annotated
    only up to 8 × 8 cells."""
    df = _summary(path, df)
    confs = _configs(df, configurations)[:MAX_PANELS]
    fig, axes = _grid(len(confs), panel=(2.7, 2.6), layout="constrained")
    cols = min(len(confs), 3)
    im = None
    for p, (ax, conf) in enumerate(zip(axes, confs)):
        da = _conf_matrices(path, df, conf, metric)
        mean = da.mean("run").values * 100
        T = mean.shape[0]
        blocks = _blocks(T, max_cells)
        m = _block_mean(mean, blocks)
        labels = _block_labels(list(da.evaluated_name.values), blocks)
        im = ax.imshow(m, vmin=0, vmax=100, cmap="viridis", aspect="equal")
        k = len(blocks)
        step = max(1, math.ceil(k / 10))
        ax.set_xticks(range(0, k, step))
        ax.set_xticklabels([labels[i] for i in range(0, k, step)] if p + cols >= len(confs) else [],
                           rotation=45, ha="right")
        ax.set_yticks(range(0, k, step))
        ax.set_yticklabels([labels[i] for i in range(0, k, step)] if p % cols == 0 else [])
        if k <= 8:
            for i in range(k):
                for j in range(k):
                    if np.isfinite(m[i, j]):
                        ax.text(j, i, f"{m[i, j]:.0f}", ha="center", va="center", fontsize=6,
                                color="white" if m[i, j] < 60 else "black")
        ax.set_title(f"{_wrap(conf)} ({_n_label(da)})" + (f"\n{T} exps in {k} blocks" if k < T else ""), fontsize=8)
        if p + cols >= len(confs):
            ax.set_xlabel("evaluated on experience")
        if p % cols == 0:
            ax.set_ylabel("after training through")
        ax.spines[:].set_visible(False)
    if im is not None:
        cb = fig.colorbar(im, ax=axes, shrink=0.8, pad=0.02)
        cb.set_label(f"{MATRIX_LABELS.get(metric, metric)} (%)")
    fig.suptitle(f"{_experiment(df)}: {MATRIX_LABELS.get(metric, metric)} matrix R[i][j], mean over seeds", fontsize=10)
    return fig


def forgetting_curves(path, configurations=None, metric="accuracy_matrix", df=None, max_lines=MAX_LINES):
    """Accuracy on each experience j over training (R[i][j] for i ≥ j), mean over seeds with a
    95 % CI band, one panel per configuration; the black line is the mean over the experiences
    seen so far. With more than `max_lines` experiences, evenly spaced ones are drawn."""
    df = _summary(path, df)
    confs = _configs(df, configurations)[:MAX_PANELS]
    fig, axes = _grid(len(confs), panel=(2.9, 2.2))
    cols = min(len(confs), 3)
    handles, legends, panel_names, panel_ticks = {}, [], [], []
    for p, (ax, conf) in enumerate(zip(axes, confs)):
        da = _conf_matrices(path, df, conf, metric)
        panel_handles = []
        R = da.values * 100  # run, i, j
        n, T, _ = R.shape
        names = list(da.evaluated_name.values)
        js = np.unique(np.linspace(0, T - 1, min(T, max_lines)).round().astype(int))
        x = np.arange(T)
        styles = phase_styles([names[j] for j in js])
        for k, j in enumerate(js):
            st = styles[k]
            xs = x[j:]
            ys = [seed_stats(R[:, i, j]) for i in xs]
            mean = np.array([s["mean"] for s in ys])
            h, = ax.plot(xs, mean, color=st["color"], linestyle=st["linestyle"], lw=1.2,
                         marker=st["marker"] if T <= 12 else None, ms=3, label=names[j])
            if n >= MIN_N_BAND:
                lo = np.clip([s["ci_low"] for s in ys], 0, 100)
                hi = np.clip([s["ci_high"] for s in ys], 0, 100)
                ax.fill_between(xs, lo, hi, color=st["color"], alpha=0.12, lw=0)
            handles.setdefault(names[j], h)
            panel_handles.append((names[j], h))
        seen = np.array([[R[r, i, : i + 1].mean() for i in range(T)] for r in range(n)])
        h, = ax.plot(x, seen.mean(0), color="black", lw=2.0, label="mean over seen experiences")
        handles.setdefault("mean over seen experiences", h)
        legends.append(panel_handles)
        panel_names.append(tuple(nm for nm, _ in panel_handles))
        step = max(1, math.ceil(T / 8))
        ax.set_xticks(x[::step])
        bottom = p + cols >= len(confs)
        ax.set_xticklabels([names[i] for i in x[::step]] if bottom else [], rotation=35, ha="right")
        panel_ticks.append((ax, [names[i] for i in x[::step]]))
        ax.set_ylim(0, 100)
        ax.set_title(f"{_wrap(conf)} ({_n_label(da)})", fontsize=8)
        if bottom:
            ax.set_xlabel("after training through")
        if p % cols == 0:
            ax.set_ylabel(f"{MATRIX_LABELS.get(metric, metric)} on experience (%)")
        ax.grid(axis="y", alpha=0.3)
    if len({tuple(t) for _, t in panel_ticks}) > 1:
        # Panels train through different streams (schedules, seeds): an x axis labelled only on
        # the bottom row would be read as every panel's. Label each panel, with room for it.
        for ax, labels in panel_ticks:
            ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=6)
            ax.set_xlabel("after training through", fontsize=7)
        fig.subplots_adjust(hspace=0.75)
    foot_y = -0.01
    if len(set(panel_names)) == 1:   # the same experiences everywhere: one shared legend
        ncol = min(6, len(handles))
        legend_y = -0.02 - 0.03 * math.ceil(len(handles) / ncol)
        fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=ncol,
                   frameon=False, bbox_to_anchor=(0.5, legend_y))
        foot_y = legend_y - 0.01
    else:                            # streams differ between panels: each panel names its own lines
        for ax, ph in zip(axes, legends):
            ax.legend([h for _, h in ph], [nm for nm, _ in ph], fontsize=5, ncol=2, frameon=False, loc="lower left",
                      handlelength=1.5, columnspacing=0.8, labelspacing=0.2)
    fig.suptitle(f"{_experiment(df)}: accuracy on each experience over training", fontsize=9)
    fig.tight_layout()
    _footnote(fig, FORGETTING_NOTE, foot_y)
    return fig


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and s.notna().any()


def metrics_vs_swept(path, x=None, metrics=("acc", "bwt", "forgetting"), df=None):
    """ACC, BWT and forgetting (mean, 95 % CI over seeds) against a swept value `x` (default: the
    first numeric swept column except the seed), one line per other configuration; log x axis
    when the values span more than a factor 20. Without such a column, a dot plot per
    configuration (one row each, so any number of configurations stays readable)."""
    df = _summary(path, df)
    ok = df[df["status"] == "completed"]
    metrics = [m for m in metrics if m in ok.columns and ok[m].notna().any()]
    swept = [c for c in df.attrs.get("swept_columns", []) if c != "seed" and c in ok.columns and _numeric(ok[c])]
    if x is None and swept:
        x = swept[0]
    if x is None or x not in ok.columns:
        return _dotplot(ok, metrics, df)
    others = [c for c in df.attrs.get("group_by", []) if c != x and c in ok.columns]
    fig, axes = plt.subplots(1, len(metrics), figsize=(2.7 * len(metrics) + 0.8, 2.8), squeeze=False)
    keyed = ok.assign(_line=ok[others].astype(str).agg("_".join, axis=1) if others else "all")
    lines = list(dict.fromkeys(keyed["_line"]))
    vals = ok[x].dropna()
    logx = bool(len(vals) and vals.min() > 0 and vals.max() / vals.min() > 20)
    span = float(vals.max() - vals.min()) if len(vals) else 1.0
    dodge = 0.06 if logx else 0.012
    for ax, m in zip(axes.flat, metrics):
        for k, line in enumerate(lines):
            g = keyed[keyed["_line"] == line]
            xs = sorted(v for v in g[x].unique() if pd.notna(v))
            st = [seed_stats(g[g[x] == v][m] * 100) for v in xs]
            mean = np.array([s["mean"] for s in st])
            err = np.array([s["ci_half"] if np.isfinite(s["ci_half"]) else 0 for s in st])
            s = style(k)
            off = (k - (len(lines) - 1) / 2) * dodge
            xd = [v * (1 + off) if logx else v + off * span for v in xs]   # dodge so error bars do not overlap
            ax.errorbar(xd, mean, yerr=err, color=s["color"], linestyle=s["linestyle"], marker=s["marker"], ms=3,
                        capsize=2, lw=1.1, label=_wrap(line, 30))
        if logx:
            ax.set_xscale("log")
        ticks = sorted(ok[x].dropna().unique())
        if len(ticks) <= 8:
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{v:g}" for v in ticks])
            ax.minorticks_off()
        ax.set_xlabel(x)
        ax.set_ylabel(METRIC_LABELS.get(m, m))
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if len(lines) > 1:
        fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.9), frameon=False)
    fig.suptitle(f"{_experiment(df)}: metrics against {x} (mean, 95% CI over seeds)", fontsize=10)
    fig.tight_layout()
    return fig


def _dotplot(ok, metrics, df):
    agg = aggregate(df, metrics)
    confs = list(agg.index)
    h = max(2.0, 0.22 * len(confs) + 1.0)
    fig, axes = plt.subplots(1, len(metrics), figsize=(2.4 * len(metrics) + 1.8, min(h, 12)), sharey=True,
                             squeeze=False)
    y = np.arange(len(confs))[::-1]
    for k, (ax, m) in enumerate(zip(axes.flat, metrics)):
        mean = agg[(m, "mean")].to_numpy() * 100
        err = np.nan_to_num(agg[(m, "ci_half")].to_numpy() * 100)
        ax.errorbar(mean, y, xerr=err, fmt="o", color=OKABE_ITO[k % 7], ms=3.5, capsize=2, lw=1)
        ax.set_xlabel(METRIC_LABELS.get(m, m))
        ax.grid(axis="x", alpha=0.3)
        ax.set_ylim(-0.7, len(confs) - 0.3)
    axes.flat[0].set_yticks(y)
    axes.flat[0].set_yticklabels([_wrap(c, 40) for c in confs], fontsize=6.5 if len(confs) > 20 else 7)
    fig.suptitle(f"{_experiment(df)}: metrics per configuration (mean, 95% CI over seeds)", fontsize=10)
    fig.tight_layout()
    return fig

