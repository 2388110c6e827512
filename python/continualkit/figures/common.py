"""The figures' shared parts: the Okabe–Ito palette and line styles, the size caps, matplotlib's
settings, `save`, and the helpers every figure uses (configurations, blocks of a long stream, grids of
panels, footnotes, mean ± CI bands)."""
from __future__ import annotations

import math
import os
import re

import matplotlib
import matplotlib.pyplot as plt  # the package's __init__ chose the Agg backend first
import numpy as np

from ..io import load_summary, metric_matrix
from ..stats import seed_stats


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


#: Details of the figures, kept out of their short titles: the report prints them as captions and
#: `continualkit plot` as a footnote under the axes.
FORGETTING_NOTE = (f"Lines: mean over seeds; bands: 95% CI where n ≥ {MIN_N_BAND}; black: mean over the experiences "
                   "seen so far. A recurring phase keeps its colour, with its own dash and marker.")
PARETO_NOTE = "Points: mean over seeds, bars: 95% CI on both axes; filled, joined: the Pareto front."


def _footnote(fig, text, y=-0.01):
    """A caption under the figure at figure height `y` (small grey text, below a legend placed
    under the axes; saved with bbox_inches='tight', so it extends the canvas)."""
    fig.text(0.01, y, text, ha="left", va="top", fontsize=6, color="0.35", wrap=True)


def _mean_band(ax, x, Y, color, ls="-", label=None, lw=1.3, marker=None):
    st = [seed_stats(Y[:, k]) for k in range(Y.shape[1])]
    mean = np.array([s["mean"] for s in st])
    h, = ax.plot(x, mean, color=color, ls=ls, lw=lw, label=label, marker=marker, ms=2.5)
    if Y.shape[0] >= MIN_N_BAND:
        ax.fill_between(x, [s["ci_low"] for s in st], [s["ci_high"] for s in st], color=color, alpha=0.15, lw=0)
    return h

