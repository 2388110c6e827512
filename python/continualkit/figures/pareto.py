"""Cost against accuracy: the Pareto figure (energy, memory, bytes, latency) with its front and
labels placed so they do not overlap."""
from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt  # the package's __init__ chose the Agg backend first
import numpy as np

from ..stats import aggregate
from .common import (MAX_NAMED_POINTS, METRIC_LABELS, OKABE_ITO, PARETO_NOTE, _configs, _experiment,
                     _footnote, _summary, _wrap)


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

