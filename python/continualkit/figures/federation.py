"""Federated figures: accuracy over rounds per configuration (personal and global models, ε of
the DP configurations) and the personalisation gain over local-only training."""
from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt  # the package's __init__ chose the Agg backend first
import numpy as np

from ..io import federation, federation_runs, local_only_configuration, personalisation_gains
from ..stats import seed_stats
from .common import (MAX_PANELS, METRIC_LABELS, MIN_N_BAND, OKABE_ITO, _configs, _experiment, _footnote,
                     _mean_band, _summary, _wrap, style)


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

