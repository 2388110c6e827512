"""Publication figures from a results file. Every function takes the file's path (and options),
returns the matplotlib Figure, and `save(fig, base, formats)` writes PDF/SVG/PNG (300 dpi).

Conventions: Okabe–Ito colours (colour-blind safe), experiment name in every title, units on
every axis, means over seeds with Student-t 95 % intervals (the numbers of `aggregate`), sizes
capped whatever the number of experiences or configurations (long streams are averaged into at
most MAX_CELLS blocks, many configurations are split over several panels or pages).
"""
from __future__ import annotations

import math
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import metrics as M  # noqa: E402
from .io import (federation, federation_runs, is_federated, load_summary, local_only_configuration,  # noqa: E402
                 metric_matrix, personalisation_gains, population, prequential)
from .stats import aggregate, seed_stats  # noqa: E402

#: Okabe & Ito (2008) colour-blind-safe palette, yellow last (weak on white).
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7", "#000000", "#F0E442"]
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
#: Heatmaps and curves never show more cells/ticks than this per axis.
MAX_CELLS = 20
#: Panels per figure (pages beyond it).
MAX_PANELS = 9
#: CI bands need at least this many seeds (with 2, t(0.975, 1) = 12.7 makes a band cover the axis).
MIN_N_BAND = 3
#: Lines per panel in forgetting curves.
MAX_LINES = 8
DPI = 300
#: Pareto plots name up to this many points beside them; more get numbers and a key.
MAX_NAMED_POINTS = 12

METRIC_LABELS = {"acc": "ACC (%)", "bwt": "BWT (points)", "forgetting": "forgetting (points)",
                 "fwt": "FWT (points)", "learning_accuracy": "learning accuracy (%)",
                 "balanced_acc": "balanced accuracy (%)", "macro_f1": "macro-F1 (%)",
                 "auroc": "AUROC (%)", "auprc": "AUPRC (%)", "prequential_acc": "prequential accuracy (%)",
                 "final_acc": "final ACC (%)", "acc_int8": "int8 ACC (%)"}
MATRIX_LABELS = {"accuracy_matrix": "accuracy", "balanced_accuracy": "balanced accuracy",
                 "macro_f1": "macro-F1", "auroc": "AUROC", "auprc": "AUPRC"}


def phase_styles(names) -> list[dict]:
    """Style of each experience in `names` such that a recurring phase ("morning", then
    "morning #2") keeps its colour and gets a different line style and marker per recurrence:
    colour by the name without its " #k" suffix (in order of first appearance), dash and marker
    by the recurrence."""
    bases, seen, out = [], {}, []
    for nm in names:
        base = re.sub(r"\s*#\d+$", "", str(nm))
        if base not in bases:
            bases.append(base)
        k = seen.get(base, 0)
        seen[base] = k + 1
        i = bases.index(base)
        out.append(dict(color=OKABE_ITO[i % 6], linestyle=LINESTYLES[(k + i // 6) % 4],
                        marker=MARKERS[(k + i // 6) % 8]))
    return out


def style(i: int) -> dict:
    """Colour, line style and marker of series i: the six Okabe–Ito colours that are neither
    black (kept for means/references) nor yellow (weak on white) first, then line styles and
    markers, so up to 24 series stay distinguishable."""
    return dict(color=OKABE_ITO[i % 6], linestyle=LINESTYLES[(i // 6) % 4], marker=MARKERS[(i // 6) % 8])


plt.rcParams.update({
    "font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "axes.spines.top": False, "axes.spines.right": False,
    "figure.dpi": 100, "savefig.dpi": DPI, "pdf.fonttype": 42, "svg.fonttype": "none",
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO[:7]),
})


def save(fig, base: str, formats=("pdf", "svg", "png")) -> list[str]:
    """Write `base.<fmt>` for each format (PNG at 300 dpi), close the figure, return the paths."""
    os.makedirs(os.path.dirname(os.path.abspath(base)) or ".", exist_ok=True)
    paths = []
    for fmt in formats:
        p = f"{base}.{fmt}"
        fig.savefig(p, dpi=DPI, bbox_inches="tight", metadata=None if fmt != "png" else {"Software": "continualkit"})
        paths.append(p)
    plt.close(fig)
    return paths


def _summary(path, df):
    return df if df is not None else load_summary(path)


def _experiment(df):
    return df.attrs.get("experiment_name") or "results"


def _wrap(name: str, width: int = 28) -> str:
    if len(name) <= width:
        return name
    parts, line, out = name.replace("_", "_\u200b").split("\u200b"), "", []
    for p in parts:
        if len(line) + len(p) > width and line:
            out.append(line)
            line = ""
        line += p
    out.append(line)
    return "\n".join(out)


def _blocks(T: int, max_cells: int = MAX_CELLS):
    """Index blocks splitting range(T) into at most max_cells contiguous groups."""
    k = min(T, max_cells)
    edges = np.linspace(0, T, k + 1).round().astype(int)
    return [np.arange(edges[i], edges[i + 1]) for i in range(k)]


def _block_mean(m: np.ndarray, blocks) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.array([[np.nanmean(m[np.ix_(bi, bj)]) if np.isfinite(m[np.ix_(bi, bj)]).any() else np.nan
                          for bj in blocks] for bi in blocks])


def _block_labels(names, blocks):
    if all(len(b) == 1 for b in blocks):
        return [names[b[0]] for b in blocks]
    return [f"{b[0]}–{b[-1]}" if len(b) > 1 else str(b[0]) for b in blocks]


def _configs(df, configurations=None):
    ok = df[df["status"] == "completed"]
    confs = list(dict.fromkeys(ok["configuration"]))
    if configurations:
        missing = [c for c in configurations if c not in confs]
        if missing:
            raise KeyError(f"unknown configuration(s) {missing}; have {confs}")
        confs = list(configurations)
    return confs


def _conf_matrices(path, df, conf, metric="accuracy_matrix"):
    """The configuration's matrices (run, i, j); runs whose stream length differs from the first
    run's are left out (schedules give seeds different session counts): see `_n_label`."""
    ids = list(df[(df["configuration"] == conf) & (df["status"] == "completed")]["run_id"])
    da = metric_matrix(path, metric, run_ids=ids, summary=df)
    da.attrs["runs_total"] = len(ids)
    return da


def _n_label(da):
    n, total = da.sizes["run"], da.attrs.get("runs_total", da.sizes["run"])
    return f"n={n}" if n == total else f"n={n} of {total} seeds: stream lengths differ"


def _grid(n, max_cols=3, panel=(2.6, 2.3), layout=None):
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(panel[0] * cols + 0.6, panel[1] * rows + 0.5), squeeze=False,
                             layout=layout)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def pages(items, per_page=MAX_PANELS):
    return [items[i:i + per_page] for i in range(0, len(items), per_page)] or [[]]


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


def prequential_curves(path, df=None, which="window_accuracy"):
    """Prequential (predict-then-learn) accuracy over the stream, mean over seeds with a 95 % CI
    band per configuration; experience boundaries as dotted lines labelled with their names."""
    df = _summary(path, df)
    ds = prequential(path, df)
    if ds is None:
        raise ValueError(f"{path} has no prequential runs")
    fig, ax = plt.subplots(figsize=(6.5, 3.0))
    pos = ds["position"].values
    for k, conf in enumerate(dict.fromkeys(ds["configuration"].values)):
        sel = ds[which].values[ds["configuration"].values == conf] * 100
        n = sel.shape[0]
        mean = sel.mean(0)
        s = style(k)
        ax.plot(pos, mean, color=s["color"], linestyle=s["linestyle"], lw=1.2, label=f"{conf} (n={n})")
        if n > 1:
            sd = sel.std(0, ddof=1)
            from .stats import t975
            h = t975(n - 1) * sd / math.sqrt(n)
            # the band's half-width smoothed over ~1 % of the stream so it reads as a band, not noise
            k_ = max(1, len(pos) // 100)
            h = np.convolve(h, np.ones(k_) / k_, mode="same")
            ax.fill_between(pos, np.clip(mean - h, 0, 100), np.clip(mean + h, 0, 100), color=s["color"],
                            alpha=0.13, lw=0)
    starts = ds.attrs.get("experience_starts")
    if starts is not None:
        run_id = str(ds["run"].values[0])
        from .io import load_run
        names = load_run(path, run_id)["experience_names"]
        for j, s0 in enumerate(starts):
            ax.axvline(s0, color="grey", lw=0.6, ls=":")
            if j < len(names) and len(starts) <= 20:
                ax.text(s0, 1.0, f" {names[j]}", rotation=0, fontsize=6, va="bottom", ha="left",
                        transform=ax.get_xaxis_transform(), color="dimgray")
    ax.set_xlabel("samples seen (stream position)")
    ax.set_ylabel("windowed accuracy (%)" if which == "window_accuracy" else "cumulative accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="lower right")
    ax.set_title(f"{_experiment(df)}: prequential accuracy (mean, 95% CI over seeds)", pad=14)
    fig.tight_layout()
    return fig


def continual_eval_curves(path, df=None):
    """{configuration: [(step, training_experience, accuracy [P, T]) per run]} of the runs with a
    `continual_eval/` group (`metrics.continual_eval_every`, issue 24); {} when there are none."""
    import h5py
    df = _summary(path, df)
    ok = df[df["status"] == "completed"]
    out = {}
    with h5py.File(path, "r") as f:
        for rid, conf in zip(ok["run_id"], ok["configuration"]):
            g = f["runs"][rid]
            if "continual_eval" not in g or "accuracy" not in g["continual_eval"]:
                continue
            c = g["continual_eval"]
            out.setdefault(conf, []).append((np.asarray(c["step"][()]), np.asarray(c["training_experience"][()]),
                                             np.asarray(c["accuracy"][()], dtype=float)))
    return out


def stability_gap(path, configurations=None, df=None, experience=0, max_lines=6):
    """The stability gap (De Lange et al. 2023): accuracy on experience `experience`'s test set
    (left) and the mean accuracy over the experiences seen so far (right) every k optimizer
    steps, mean over seeds per configuration, experience boundaries dotted; the legend gives each
    configuration's min-ACC (mean over seeds). Needs runs with `metrics.continual_eval_every`."""
    df = _summary(path, df)
    curves = continual_eval_curves(path, df)
    if not curves:
        raise ValueError(f"{path} has no continual-evaluation curves (metrics.continual_eval_every)")
    confs = [c for c in (configurations or curves) if c in curves][:max_lines]
    ok = df[df["status"] == "completed"].set_index("configuration")
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.0), sharey=True)
    boundaries = None
    for k, conf in enumerate(confs):
        runs = [r for r in curves[conf] if len(r[0]) == len(curves[conf][0][0])]
        step = runs[0][0]
        first = np.stack([r[2][:, experience] for r in runs]) * 100
        seen = np.stack([np.nanmean(r[2], axis=1) for r in runs]) * 100
        st = style(k)
        label = conf
        if "min_acc" in ok.columns and conf in ok.index:
            m = np.nanmean(np.atleast_1d(ok.loc[conf, "min_acc"])) * 100
            if np.isfinite(m):
                label = f"{conf} (min-ACC {m:.1f}%)"
        for ax, Y in ((axes[0], first), (axes[1], seen)):
            ax.plot(step, np.nanmean(Y, axis=0), color=st["color"], linestyle=st["linestyle"], lw=1.1,
                    label=f"{label}, n={len(runs)}" if ax is axes[1] else None)
        if boundaries is None:
            e = runs[0][1]
            boundaries = [step[i] for i in range(1, len(e)) if e[i] != e[i - 1]]
    for ax in axes:
        for b in boundaries or []:
            ax.axvline(b, color="grey", lw=0.6, ls=":")
        ax.set_xlabel("optimizer steps (all experiences)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"accuracy on experience {experience} (%)")
    axes[1].set_ylabel("mean accuracy over seen experiences (%)")
    axes[1].yaxis.set_tick_params(labelleft=True)
    fig.legend(frameon=False, loc="lower center", ncol=2, fontsize=6.5, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(f"{_experiment(df)}: stability gap (continual evaluation, mean over seeds)", fontsize=9)
    fig.tight_layout(rect=(0, 0.05 + 0.04 * math.ceil(len(confs) / 2), 1, 1))
    return fig


def population_fan(path, run_id=None, df=None, levels=((0.05, 0.95), (0.25, 0.75))):
    """Fan chart over the users of a population run: median and quantile bands (5–95 %, 25–75 %)
    of (left) the mean accuracy over the experiences seen so far after each experience (from the
    per-user matrices, when stored) and (right) the final accuracy on each experience."""
    df = _summary(path, df)
    ok = df[df["status"] == "completed"]
    ids = [run_id] if run_id else list(ok["run_id"])
    pop = None
    for rid in ids:
        pop = population(path, rid)
        if pop is not None:
            run_id = rid
            break
    if pop is None:
        raise ValueError(f"{path} has no population run")
    conf = ok.set_index("run_id").loc[run_id, "configuration"]
    panels = []
    if "accuracy_matrices" in pop:
        mats = pop["accuracy_matrices"].values
        if "status" in pop:
            mats = mats[pop["status"].values == "completed"]
        curves = np.array([M.seen_accuracy_curve(R) for R in mats]) * 100
        panels.append(("accuracy over seen experiences (%)", "after training through", curves))
    if "final_accuracy" in pop and pop["final_accuracy"].ndim == 2:
        fa = pop["final_accuracy"].values * 100
        panels.append(("final accuracy on experience (%)", "evaluated on experience", fa))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels) + 0.4, 2.9), squeeze=False)
    names = pop.attrs.get("experience_names")
    for ax, (ylabel, xlabel, data) in zip(axes.flat, panels):
        T = data.shape[1]
        x = np.arange(T)
        for (lo, hi), alpha in zip(levels, (0.18, 0.35)):
            ax.fill_between(x, np.nanquantile(data, lo, axis=0), np.nanquantile(data, hi, axis=0),
                            color=OKABE_ITO[0], alpha=alpha, lw=0, label=f"{lo:.0%}–{hi:.0%} of users")
        ax.plot(x, np.nanmedian(data, axis=0), color=OKABE_ITO[0], lw=1.8, label="median")
        ax.plot(x, np.nanmean(data, axis=0), color=OKABE_ITO[1], lw=1.0, ls="--", label="mean")
        labels = names if names and len(names) == T else [str(i) for i in x]
        step = max(1, math.ceil(T / 8))
        ax.set_xticks(x[::step])
        ax.set_xticklabels(labels[::step], rotation=35, ha="right")
        ax.set_ylim(0, 100)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, bbox_to_anchor=(0.5, -0.06))
    n_users = panels[0][2].shape[0]
    who = "" if conf == _experiment(df) else f"{conf}, "
    fig.suptitle(f"{_experiment(df)}: {who}{n_users} users (median and quantile bands)", fontsize=10)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
COSTS = {"energy_j": ("training energy", "J"),
         "joules_per_client": ("energy per client (training + transfers)", "J"), "peak_memory_bytes": ("peak training memory", "B"),
         "model_bytes": ("model size", "B"), "buffer_bytes": ("replay buffer", "B"),
         "train_seconds": ("training time", "s"), "flops_per_prediction": ("FLOPs per prediction", "")}


def unit_scale(values, unit):
    """(factor, unit label) so that the largest |value|·factor lies in [1, 1000) (bytes: 1024)."""
    v = np.nanmax(np.abs(np.asarray(values, dtype=float))) if len(values) else 1.0
    if unit == "B":
        for f, u in ((1, "B"), (1 / 1024, "KiB"), (1 / 1024 ** 2, "MiB"), (1 / 1024 ** 3, "GiB")):
            if v * f < 1024:
                return f, u
        return 1 / 1024 ** 3, "GiB"
    if unit in ("J", "s"):
        for f, u in ((1, unit), (1e3, "m" + unit), (1e6, "µ" + unit), (1e9, "n" + unit)):
            if v * f >= 1 or f == 1e9:
                return f, u
    return 1.0, unit


def pareto_metric(ok) -> str:
    """The accuracy a file's Pareto plots use: prequential accuracy for on-device scheduled runs
    (what the user experiences), else ACC."""
    if "schedule" in ok and "prequential_acc" in ok and ok["prequential_acc"].notna().any() \
            and ok["schedule"].astype(str).str.len().gt(0).any():
        return "prequential_acc"
    return "acc"


def pareto_front(cost, acc) -> np.ndarray:
    """Indices of the non-dominated points (lower cost and higher accuracy), by increasing cost."""
    order = np.lexsort((-np.asarray(acc), np.asarray(cost)))
    front, best = [], -np.inf
    for i in order:
        if acc[i] > best:
            front.append(i)
            best = acc[i]
    return np.array(front, dtype=int)


def _place_labels(ax, xs, ys, labels, fontsize=6.5, xerr=None, yerr=None, markers=None):
    """Greedy placement: for each point try offsets at growing distances in 8 directions and keep
    the first whose box overlaps no placed label, no marker and stays inside the axes; a leader
    line joins labels placed away from their point. `markers`: (x, y, area in points², as
    `scatter`'s `s`) of the markers to keep clear of, when they are larger than the default
    8-pixel box around each labelled point. Returns the Text objects."""
    fig = ax.figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    pts = ax.transData.transform(np.column_stack([xs, ys]))
    axbox = ax.get_window_extent(r)
    placed, texts, failed = [], [], []
    marker_boxes = [matplotlib.transforms.Bbox.from_extents(px - 4, py - 4, px + 4, py + 4) for px, py in pts]
    for mx, my, area in markers if markers is not None else ():
        (px, py), = ax.transData.transform([(mx, my)])
        half = max(4.0, math.sqrt(max(area, 0.0)) / 2 * fig.dpi / 72)
        marker_boxes.append(matplotlib.transforms.Bbox.from_extents(px - half, py - half, px + half, py + half))
    # error bars are obstacles too (thin boxes along each bar)
    for i in range(len(xs)):
        if yerr is not None and yerr[i] > 0:
            (x0, y0), (x1, y1) = ax.transData.transform([(xs[i], ys[i] - yerr[i]), (xs[i], ys[i] + yerr[i])])
            marker_boxes.append(matplotlib.transforms.Bbox.from_extents(x0 - 2, y0, x0 + 2, y1))
        if xerr is not None and xerr[i] > 0:
            (x0, y0), (x1, y1) = ax.transData.transform([(xs[i] - xerr[i], ys[i]), (xs[i] + xerr[i], ys[i])])
            marker_boxes.append(matplotlib.transforms.Bbox.from_extents(x0, y0 - 2, x1, y0 + 2))
    dirs = [(1, 0.3), (1, -1), (-1, 0.3), (-1, -1), (0.2, 1), (0.2, -1.4), (1, 1), (-1, 1)]
    dirs16 = [(math.cos(a), math.sin(a)) for a in np.linspace(0, 2 * math.pi, 16, endpoint=False)]
    order = np.argsort(pts[:, 0])
    for i in order:
        (px, py), lab = pts[i], labels[i]
        t = ax.annotate(lab, (xs[i], ys[i]), xytext=(0, 0), textcoords="offset points", fontsize=fontsize)
        best = None
        # strict pass: clear of labels, markers and error bars; relaxed pass: clear of labels only
        for strict, dists in ((True, (5, 10, 16, 24, 34, 46, 60)), (False, (8, 16, 26, 38, 52, 70, 90, 115, 140))):
            for dist in dists:
                for dx, dy in (dirs if strict else dirs16):
                    t.set_position((dx * dist, dy * dist))
                    t.set_ha("left" if dx > 0.1 else "right" if dx < -0.1 else "center")
                    bb = t.get_window_extent(r)
                    gap = bb.padded(7)   # a gap to other labels, so neighbours never read as one label
                    inside = axbox.contains(bb.x0, bb.y0) and axbox.contains(bb.x1, bb.y1)
                    if not inside or any(gap.overlaps(o) for o in placed):
                        continue
                    cx, cy = (bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2
                    seg = [(px + (cx - px) * t_, py + (cy - py) * t_) for t_ in np.linspace(0.15, 0.6, 8)] \
                        if dist > 7 else []
                    if any(o.contains(sx, sy) for o in placed for sx, sy in seg):
                        continue
                    if strict and any(bb.overlaps(m) for m in marker_boxes):
                        continue
                    best = (dx * dist, dy * dist, bb)
                    break
                if best:
                    break
            if best:
                break
        if best is None:  # nothing free: keep the closest position, still inside
            t.set_position((6, 3))
            t.set_ha("left")
            best = (6, 3, t.get_window_extent(r))
            failed.append(i)
        t.set_position(best[:2])
        if math.hypot(*best[:2]) > 7:
            t.arrow_patch = None
            t.remove()
            t = ax.annotate(lab, (xs[i], ys[i]), xytext=best[:2], textcoords="offset points", fontsize=fontsize,
                            ha="left" if best[0] > 0.1 else "right" if best[0] < -0.1 else "center",
                            arrowprops=dict(arrowstyle="-", color="grey", lw=0.5, shrinkA=0, shrinkB=3))
        placed.append(best[2])
        texts.append(t)
    return texts, failed


#: Details of the figures, kept out of their short titles: the report prints them as captions and
#: `continualkit plot` as a footnote under the axes.
FORGETTING_NOTE = (f"Lines: mean over seeds; bands: 95% CI where n ≥ {MIN_N_BAND}; black: mean over the experiences "
                   "seen so far. A recurring phase keeps its colour, with its own dash and marker.")
PARETO_NOTE = "Points: mean over seeds, bars: 95% CI on both axes; filled, joined: the Pareto front."


def _footnote(fig, text, y=-0.01):
    """A caption under the figure at figure height `y` (small grey text, below a legend placed
    under the axes; saved with bbox_inches='tight', so it extends the canvas)."""
    fig.text(0.01, y, text, ha="left", va="top", fontsize=6, color="0.35", wrap=True)


def pareto(path, cost="energy_j", metric="acc", df=None, configurations=None):
    """Accuracy against a cost (default training energy; `peak_memory_bytes` for memory), one
    point per configuration at its mean over seeds with 95 % CI error bars on both axes; the
    Pareto front (nothing both cheaper and more accurate) joined by a line and its points filled;
    labels placed so they do not overlap. `configurations` limits the plot to those (e.g. one
    setting of a large table)."""
    df = _summary(path, df)
    if configurations:
        keep = _configs(df, configurations)
        attrs = dict(df.attrs)
        df = df[df["configuration"].isin(keep)].reset_index(drop=True)
        df.attrs.update(attrs)
    ok = df[df["status"] == "completed"]
    if cost not in ok.columns or not ok[cost].notna().any():
        raise ValueError(f"{path}: no {cost} column")
    name, unit = COSTS.get(cost, (cost, ""))
    agg = aggregate(df, [metric, cost])
    scale, unit = unit_scale(agg[(cost, "mean")].to_numpy(), unit)
    label = f"{name} ({unit})" if unit else name
    agg = agg[np.isfinite(agg[(metric, "mean")]) & np.isfinite(agg[(cost, "mean")])]
    x = agg[(cost, "mean")].to_numpy() * scale
    xe = np.nan_to_num(agg[(cost, "ci_half")].to_numpy() * scale)
    y = agg[(metric, "mean")].to_numpy() * 100
    ye = np.nan_to_num(agg[(metric, "ci_half")].to_numpy() * 100)
    confs = list(agg.index)
    front = pareto_front(x, y)
    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    on = np.zeros(len(x), bool)
    on[front] = True
    if (~on).any():                 # no legend entry for points that do not exist
        ax.errorbar(x[~on], y[~on], xerr=xe[~on], yerr=ye[~on], fmt="o", mfc="white", mec=OKABE_ITO[0],
                    ecolor=OKABE_ITO[0], ms=4, capsize=2, lw=0.8, label="dominated")
    ax.errorbar(x[on], y[on], xerr=xe[on], yerr=ye[on], fmt="o", color=OKABE_ITO[1], ms=4.5, capsize=2, lw=0.8,
                label="Pareto front")
    ax.step(x[front], y[front], where="post", color=OKABE_ITO[1], lw=1, alpha=0.7)
    if x.min() > 0 and x.max() / x.min() > 20:
        ax.set_xscale("log")
    pad_y = max(1.0, (y.max() - y.min()) * 0.15)
    lo_, hi_ = y.min() - pad_y - ye.max(), y.max() + pad_y + ye.max()
    if metric in METRIC_LABELS and METRIC_LABELS[metric].endswith("(%)"):
        lo_, hi_ = max(lo_, -2.0), min(hi_, 104.0)     # a percentage axis never shows 120 %
    ax.set_ylim(lo_, hi_)
    xr_ = (x.max() - x.min()) or abs(x.max()) or 1
    if ax.get_xscale() == "linear":
        ax.set_xlim(x.min() - 0.25 * xr_ - xe.max(), x.max() + 0.25 * xr_ + xe.max())
    ax.set_xlabel(label)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=7)
    ax.set_title(f"{_experiment(df)}: {METRIC_LABELS.get(metric, metric).split(' (')[0]} against "
                 f"{label.split(' (')[0]}")
    fig.tight_layout()
    _footnote(fig, PARETO_NOTE)
    numbered = len(confs) > MAX_NAMED_POINTS
    if not numbered:
        texts, failed = _place_labels(ax, x, y, [_wrap(c, 24) for c in confs], xerr=xe, yerr=ye)
        if failed:
            for t in texts:
                t.remove()
            numbered = True
    if numbered:
        # numbers at the points, names in a key beside the axes (never overlapping)
        _place_labels(ax, x, y, [str(i + 1) for i in range(len(confs))], xerr=xe, yerr=ye, fontsize=6.5)
        key = "\n".join(f"{i + 1:>2}  {c}{'  *' if on[i] else ''}" for i, c in enumerate(confs))
        fig.set_size_inches(8.2, max(4.2, 0.14 * len(confs) + 1.2))
        fig.subplots_adjust(right=0.72)
        fig.text(0.74, 0.5, key + "\n\n* on the Pareto front", fontsize=6.5, va="center", ha="left", family="monospace")
    return fig


# --------------------------------------------------------------------------------------------- federation
def _federation_series(path, runs, conf):
    """Per-seed series of one configuration: (evaluation x as rounds done, personal (run, E),
    global (run, E) or None, epsilon x, epsilon (run, R) or None, attrs of the first run)."""
    pers, glob, eps, ex, rx, attrs = [], [], [], None, None, None
    for rid in runs[runs["configuration"] == conf]["run_id"]:
        ds = federation(path, rid)
        if ds is None or "personal_accuracy" not in ds:
            continue
        x = ds["evaluated_round"].values + 1
        if ex is not None and len(x) != len(ex):
            continue
        ex, attrs = x, attrs or dict(ds.attrs)
        pers.append(ds["personal_accuracy"].values * 100)
        if "global_accuracy" in ds:
            glob.append(ds["global_accuracy"].values * 100)
        if "epsilon" in ds:
            rx = ds["round"].values + 1
            eps.append(ds["epsilon"].values)
    pers = np.array(pers)
    glob = np.array(glob) if glob and np.isfinite(glob).any() else None
    eps = np.array(eps) if eps and np.isfinite(eps).any() else None
    return ex, pers, glob, rx, eps, attrs or {}


def _mean_band(ax, x, Y, color, ls="-", label=None, lw=1.3, marker=None):
    st = [seed_stats(Y[:, k]) for k in range(Y.shape[1])]
    mean = np.array([s["mean"] for s in st])
    h, = ax.plot(x, mean, color=color, ls=ls, lw=lw, label=label, marker=marker, ms=2.5)
    if Y.shape[0] >= MIN_N_BAND:
        ax.fill_between(x, [s["ci_low"] for s in st], [s["ci_high"] for s in st], color=color, alpha=0.15, lw=0)
    return h


def _band_range(series) -> tuple[float, float]:
    """One y range for every panel, wide enough for the bands (with 3 seeds t(0.975, 2) = 4.3 makes
    them wide): a band cut by the axis would hide how uncertain a dip is."""
    ext = []
    for s_ in series:
        for Y in (s_[1], s_[2]):
            if Y is not None and len(Y):
                st = [seed_stats(Y[:, k]) for k in range(Y.shape[1])]
                ext += [v for s2 in st for v in (s2["mean"], s2["ci_low"], s2["ci_high"])]
    ext = np.array([v for v in ext if np.isfinite(v)])
    return (max(0, np.floor(ext.min() / 10) * 10), min(100, np.ceil(ext.max() / 10) * 10)) if len(ext) else (0, 100)


def _rounds_panel(ax, conf, series, base, handles):
    """One configuration's panel: personal (and global) accuracy over rounds, the local-only
    reference in grey; the lines' handles go into `handles` for the figure's legend."""
    x, pers, glob, _, _, attrs = series[conf]
    ref = series.get(base) if base else None
    if ref is not None and conf != base and ref[0] is not None and len(ref[1]):
        h, = ax.plot(ref[0], ref[1].mean(0), color="0.6", lw=1.0, label=f"{base} (personal, reference)")
        handles.setdefault("ref", h)
    same = attrs.get("personal") == "global" and attrs.get("share") == "all"
    if len(pers):
        h = _mean_band(ax, x, pers, OKABE_ITO[0], label="personal model" if not same else None, marker="o")
        handles.setdefault("personal", h)
    if glob is not None and not same:
        h = _mean_band(ax, x, glob, OKABE_ITO[1], ls="--", label="global model", marker="s")
        handles.setdefault("global", h)
    n = len(pers)
    share = attrs.get("share", "?")
    note = "phones predict with the global model" if same else \
        "phones fine-tune a copy of the global model" if share == "all" and glob is not None else \
        f"share = {share}" + ("" if glob is not None else ": no global model")
    ax.set_title(f"{_wrap(conf, 30)} (n={n})\n{note}", fontsize=7.5, linespacing=1.3)
    ax.grid(alpha=0.3)


def _epsilon_panel(ax, dp, series):
    """The DP configurations' ε after each round (mean over seeds), each labelled at its end."""
    for k, conf in enumerate(dp):
        _, _, _, rx, eps, attrs = series[conf]
        st = style(k + 2)
        ax.plot(rx, np.nanmean(eps, axis=0), color=st["color"], ls=st["linestyle"], lw=1.4, label=conf)
        ax.annotate(f"{conf}: ε = {np.nanmean(eps[:, -1]):.2f}", (rx[-1], np.nanmean(eps[:, -1])),
                    xytext=(-4, 4), textcoords="offset points", ha="right", va="bottom", fontsize=6.5,
                    color=st["color"])
    deltas = sorted({series[c][5].get("delta") for c in dp if series[c][5].get("delta") is not None})
    ax.set_ylabel("ε" + (f" at δ = {deltas[0]:g}" if len(deltas) == 1 else ""))
    ax.set_xlabel("round")
    top = max(np.nanmax(series[c][4]) for c in dp)
    ax.set_ylim(0, top * 1.18 if np.isfinite(top) and top > 0 else None)   # room for the end labels
    ax.grid(alpha=0.3)
    ax.set_title("privacy spent: ε after each round (DP configurations; mean over seeds)", fontsize=8)


def federation_rounds(path, configurations=None, df=None):
    """Federated runs: accuracy over rounds, one panel per configuration (at most MAX_PANELS:
    pass `configurations` or use `pages`): the personal models' accuracy (what each phone
    predicts with) and, where the server model is the whole model (share = all) and phones do
    not simply predict with it, the global model's, each the mean over the evaluated clients'
    current test data, mean over seeds with a 95 % CI band (n ≥ MIN_N_BAND); the local-only
    configuration's personal accuracy is drawn in grey in every other panel as the reference —
    the one run at the panel's values of the swept key paths (e.g. its Dirichlet alpha).
    A last panel shows ε (at the file's δ) over rounds for the configurations with DP noise."""
    df = _summary(path, df)
    runs = federation_runs(path, df)
    if runs.empty:
        raise ValueError(f"{path} has no federated run")
    confs = _configs(runs, configurations)[:MAX_PANELS]
    series = {c: _federation_series(path, runs, c) for c in confs}
    bases = {c: local_only_configuration(runs, like=c) for c in confs}
    for b in set(bases.values()) - set(series) - {None}:
        series[b] = _federation_series(path, runs, b)
    dp = [c for c in confs if series[c][4] is not None]
    cols = min(len(confs), 3)
    rows = math.ceil(len(confs) / cols)
    fig = plt.figure(figsize=(2.9 * cols + 0.6, 2.3 * rows + (2.3 if dp else 0) + 1.3))
    gs = fig.add_gridspec(rows + (1 if dp else 0), cols, height_ratios=[1] * rows + ([1.0] if dp else []),
                          hspace=0.7, wspace=0.12)
    lo, hi = _band_range([series[c] for c in confs])
    handles = {}
    for p, conf in enumerate(confs):
        ax = fig.add_subplot(gs[p // cols, p % cols])
        _rounds_panel(ax, conf, series, bases[conf], handles)
        ax.set_ylim(lo, hi)
        if p % cols == 0:
            ax.set_ylabel("accuracy (%)")
        else:
            ax.set_yticklabels([])
        if p + cols >= len(confs):
            ax.set_xlabel("round")
    labels = {"personal": "personal model (what each phone predicts with)", "global": "global model",
              "ref": (f"{next(iter(set(bases.values()) - {None}))}: personal model (reference)"
                      if len(set(bases.values()) - {None}) == 1
                      else "local-only at the panel's setting: personal model (reference)")}
    keys = [k for k in ("personal", "global", "ref") if k in handles]
    if dp:
        _epsilon_panel(fig.add_subplot(gs[rows, :]), dp, series)
    fig.legend([handles[k] for k in keys], [labels[k] for k in keys], loc="upper center", ncol=len(keys),
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.4 / fig.get_figheight()))
    fig.suptitle(f"{_experiment(df)}: accuracy over rounds", fontsize=9, y=1 - 0.1 / fig.get_figheight())
    _footnote(fig, "Accuracy on the evaluated clients' current test data; lines: mean over seeds, bands: 95% CI "
                   f"where n ≥ {MIN_N_BAND}.")
    # inches from the top: suptitle, then the legend, then the panels' two-line titles
    fig.subplots_adjust(top=1 - 1.3 / fig.get_figheight(), left=0.08, right=0.98, bottom=0.6 / fig.get_figheight())
    return fig


def personalisation_gain(path, baseline=None, df=None, metric="acc"):
    """Per client: personal ACC under each federated configuration minus the same client's ACC
    under the local-only configuration (matched on seed and client id; `personalisation_gains`),
    in points, one row per configuration: every client of every seed as a jittered dot, a box
    (quartiles, whiskers at 1.5 IQR) and, at the right, the median gain and the share of clients
    that gain. Raises ValueError without a local-only configuration."""
    df = _summary(path, df)
    g = personalisation_gains(path, baseline, df, metric)
    base = g.attrs["baseline"]
    confs = list(dict.fromkeys(g["configuration"]))
    if not confs:
        raise ValueError(f"{path}: no configuration to compare with {base}")
    data = [g[g["configuration"] == c]["gain"].to_numpy() * 100 for c in confs]
    fig, ax = plt.subplots(figsize=(6.6, 0.42 * len(confs) + 1.5))
    rng = np.random.default_rng(0)
    ys = np.arange(len(confs))[::-1]
    for y, d, conf in zip(ys, data, confs):
        ax.scatter(d, y + rng.uniform(-0.28, 0.28, len(d)), s=2.5, color=OKABE_ITO[0], alpha=0.25, lw=0,
                   rasterized=True)
    horizontal = {"orientation": "horizontal"} if tuple(int(v) for v in matplotlib.__version__.split(".")[:2]) >= (3, 10) \
        else {"vert": False}
    ax.boxplot(data, positions=ys, widths=0.6, showfliers=False, patch_artist=True, **horizontal,
               boxprops=dict(facecolor="none", edgecolor="black", lw=0.9), medianprops=dict(color=OKABE_ITO[1], lw=1.6),
               whiskerprops=dict(lw=0.8), capprops=dict(lw=0.8))
    ax.axvline(0, color="0.3", lw=0.8, ls="--")
    ax.set_yticks(ys)
    ax.set_yticklabels([_wrap(c, 24) for c in confs])
    ax.set_ylim(-0.6, len(confs) - 0.4)
    for y, d in zip(ys, data):
        ax.annotate(f"median {np.median(d):+.1f} pts\n{np.mean(d > 0):.0%} of clients better", (1.01, y),
                    xycoords=("axes fraction", "data"), va="center", fontsize=6.5)
    seeds = g["seed"].nunique()
    clients = g.groupby("seed")["client"].nunique().max() if len(g) else 0
    ax.set_xlabel(f"personal {METRIC_LABELS.get(metric, metric).split(' (')[0]} − the same client's under {base} "
                  "(points)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{_experiment(df)}: personalisation gain of each client over {base}\n(baseline: the same client "
                 f"and seed under {base}; {clients} clients × {seeds} seeds per row)", fontsize=9)
    fig.tight_layout()
    fig.text(0.99, 0.005, "dots: clients · box: quartiles, whiskers 1.5 IQR · orange: median", ha="right",
             va="bottom", fontsize=6, color="0.35")
    return fig


# ---------------------------------------------------------------------------------------------
#: Bounds `check_png` enforces (what CI checks on every figure).
MAX_PX = 4200
MAX_BYTES = 3_000_000


def check_png(path) -> list[str]:
    """Problems with a drawn PNG: missing, over MAX_BYTES, larger than MAX_PX or tiny, not
    300 dpi, or blank (grey-level standard deviation ≤ 10 or almost no dark pixels)."""
    from PIL import Image
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return [f"{path}: missing or empty"]
    out = []
    if os.path.getsize(path) > MAX_BYTES:
        out.append(f"{path}: {os.path.getsize(path)} bytes > {MAX_BYTES}")
    im = Image.open(path)
    w, h = im.size
    if not (300 < w <= MAX_PX and 200 < h <= MAX_PX):
        out.append(f"{path}: {w}×{h} px outside (300..{MAX_PX}) × (200..{MAX_PX})")
    dpi = im.info.get("dpi", (0, 0))
    if round(dpi[0]) != DPI:
        out.append(f"{path}: {dpi[0]:.0f} dpi, not {DPI}")
    px = np.asarray(im.convert("L"), dtype=float)
    if px.std() <= 10 or (px < 128).mean() < 0.002:
        out.append(f"{path}: looks blank (grey std {px.std():.1f})")
    return out


def draw_all(path, out_dir, formats=("pdf", "svg", "png"), df=None, verbose=False) -> dict[str, list[str]]:
    """Every figure that applies to the file, written to `out_dir`; {figure name: paths}.
    Heatmaps and forgetting curves get one page per MAX_PANELS configurations."""
    df = _summary(path, df)
    ok = df[df["status"] == "completed"]
    out = {}

    def emit(name, make):
        try:
            fig = make()
        except (ValueError, KeyError) as e:
            if verbose:
                print(f"skipped {name}: {e}")
            return
        out[name] = save(fig, os.path.join(out_dir, name), formats)

    with_matrix = [c for c in dict.fromkeys(ok["configuration"])]
    pop_ids = set()
    import h5py
    with h5py.File(path, "r") as f:
        for rid in ok["run_id"]:
            if "population" in f["runs"][rid]:
                pop_ids.add(rid)
        has_matrix = any("accuracy_matrix" in f["runs"][rid] for rid in ok["run_id"])
        has_preq = any("prequential" in f["runs"][rid] for rid in ok["run_id"])
        has_ce = any("continual_eval" in f["runs"][rid] for rid in ok["run_id"])
    conf_pages = pages(with_matrix)
    if has_matrix and with_matrix:
        for k, page in enumerate(conf_pages):
            suffix = "" if len(conf_pages) == 1 else f"_{k + 1}"
            emit(f"heatmap{suffix}", lambda page=page: accuracy_heatmap(path, page, df=df))
            emit(f"forgetting_curves{suffix}", lambda page=page: forgetting_curves(path, page, df=df))
    emit("metrics", lambda: metrics_vs_swept(path, df=df))
    if has_preq:
        emit("prequential", lambda: prequential_curves(path, df=df))
    if has_ce:
        emit("stability_gap", lambda: stability_gap(path, df=df))
    for rid in sorted(pop_ids, key=lambda r: list(ok["run_id"]).index(r))[:4]:
        name = "population" if len(pop_ids) == 1 else f"population_{ok.set_index('run_id').loc[rid, 'configuration']}"
        emit(name, lambda rid=rid: population_fan(path, rid, df=df))
    if is_federated(path, ok["run_id"]):
        fed = list(dict.fromkeys(federation_runs(path, df)["configuration"]))
        fed_pages = pages(fed)
        for k, page in enumerate(fed_pages):
            suffix = "" if len(fed_pages) == 1 else f"_{k + 1}"
            emit(f"federation_rounds{suffix}", lambda page=page: federation_rounds(path, page, df=df))
        emit("personalisation_gain", lambda: personalisation_gain(path, df=df))
    if len(dict.fromkeys(ok["configuration"])) >= 2:
        acc = pareto_metric(ok)
        if is_federated(path, ok["run_id"]):
            # a federated run's summary energy_j is not what its phones spend: use the federation's
            # per-client energy (local training + transfers), the table's mJ / client
            emit("pareto_energy", lambda: pareto(path, "joules_per_client", acc, df=federation_runs(path, df)))
        elif "energy_j" in ok and ok["energy_j"].notna().any() and (ok["energy_j"] > 0).any():
            emit("pareto_energy", lambda: pareto(path, "energy_j", acc, df=df))
        if "peak_memory_bytes" in ok and (ok["peak_memory_bytes"] > 0).any():
            emit("pareto_memory", lambda: pareto(path, "peak_memory_bytes", acc, df=df))
    return out
