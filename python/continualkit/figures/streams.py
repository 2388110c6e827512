"""Figures along the stream: prequential (test-then-train) curves, continual evaluation, the
stability gap after each switch, and a population's fan of users."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt  # the package's __init__ chose the Agg backend first
import numpy as np

from .. import metrics as M
from ..io import population, prequential
from .common import OKABE_ITO, _experiment, _summary, style


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
            from ..stats import t975
            h = t975(n - 1) * sd / math.sqrt(n)
            # the band's half-width smoothed over ~1 % of the stream so it reads as a band, not noise
            k_ = max(1, len(pos) // 100)
            h = np.convolve(h, np.ones(k_) / k_, mode="same")
            ax.fill_between(pos, np.clip(mean - h, 0, 100), np.clip(mean + h, 0, 100), color=s["color"],
                            alpha=0.13, lw=0)
    starts = ds.attrs.get("experience_starts")
    if starts is not None:
        run_id = str(ds["run"].values[0])
        from ..io import load_run
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

