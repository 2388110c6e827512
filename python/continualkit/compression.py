"""The compression Pareto study (issue 31, `Experiments/compression.json`): accuracy against what a
phone pays, one panel row per scenario, for whatever variants a results file holds.

The study file runs both scenarios; its variants are named `SCENARIO.TECHNIQUE` (`habit.dense`,
`digits.dense`). Rows are grouped by the scenario each run's recorded configuration names
(`config_json`), and the technique (the part after the first `.`) keys the variants across
scenarios, so one number marks one technique in every panel. Several files (one scenario each,
as the study was once split) are read as one.

Per run it reads ACC and forgetting (`metrics`), the training energy of the whole stream (the
joules one personalisation costs, `costs.training_energy_j`), peak training memory
(`costs.peak_memory_bytes`; for `early_exit` runs without the bytes of its τ-sweep records,
which only the study keeps), the parameters the phone stores (non-zero ones for pruned runs, the factors for low-rank runs, the
model's plus an early-exit head's otherwise), the bytes of the stored model (4 per stored
parameter in float32: values only, a sparse format's indices are not counted) and the energy of
one prediction (`costs.prediction_energy_j`; for `early_exit` runs the cascade's at the run's
threshold, from the plugin group). Early-exit runs also give their threshold sweep (ACC against
joules per prediction, one point per τ).

int8 points: a run evaluated in int8 (`quantization` in its configuration: the dense and `qat`
variants) adds a second point, `TECHNIQUE+int8`, its final model after weight-only int8
post-training quantisation, measured by the run itself (`device/quantization`): ACC is the
int8 model's mean final accuracy over the experiences (`accuracy_int8_mean`, the summary's
`acc_int8`); stored bytes are `model_bytes_int8` (1 B per weight plus float32 per-channel or
per-tensor scales and float32 biases); the energy per prediction is the run's cost model with the
int8 weights moved instead of the float32 ones (`prediction_bytes − model_bytes_float32 +
model_bytes_int8` bytes; FLOPs charged at the float32 rate, activations stay float32);
training energy and peak memory are the float run's (quantising after training costs one pass
over the weights, not counted). Forgetting of the int8 model is not measured (the run evaluates
it once, after the last experience): NaN in the table, the smallest marker in the figure.

    continualkit pareto results/compression.h5 -o figures/
"""
from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from .figures import OKABE_ITO, plt, save, pareto_front, unit_scale, _footnote, _place_labels
from .io import configuration_name

#: (column, axis label, unit) of the cost panels, left to right.
PANELS = (("training_j", "training energy per personalisation", "J"),
          ("peak_memory_bytes", "peak training memory", "B"),
          ("stored_bytes", "model bytes stored", "B"),
          ("prediction_j", "energy per prediction", "J"))

NOTE = ("Points: mean over seeds (marker area ∝ forgetting, legend); filled and joined: the Pareto front "
        "(nothing cheaper is as accurate). Numbers key the variants (right); points too close to label apart "
        "share one label (\"2,5,9\"). Diamonds: int8 models (weight-only post-training quantisation of the run's "
        "final model; forgetting not measured, smallest marker). Last panel: early-exit "
        "threshold sweep τ (line, from the exit head alone at τ = 0 to the full model at τ > 1; the numbered "
        "early_exit point is the cascade at the run's τ); the other "
        "variants share the full-size model's prediction energy in the run's cost model.")


def _s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _scenario_label(config: dict) -> str:
    s = config.get("scenario", {})
    if isinstance(s, str):
        return s
    label = s.get("type", "?")
    if "setting" in s:
        label += f" ({s['setting']})"
    return label


def _variant(g, config: dict) -> str:
    v = _s(g.attrs.get("variant", "")) if "variant" in g.attrs else ""
    if v:
        return v
    name = configuration_name(_s(g.attrs.get("name", "")))
    return name.split("_scenario=")[0]


def technique(variant: str) -> str:
    """`habit.dense` → `dense`: the study's variants are named SCENARIO.TECHNIQUE (the scenario
    itself is read from the run's configuration); a name without a `.` is the technique."""
    return variant.split(".", 1)[1] if "." in variant else variant


def _int8_row(row: dict, q, c, d) -> dict:
    """The int8 point of a run evaluated in int8 (module docstring): its own ACC, stored bytes
    and energy per prediction; training energy and peak memory of the float run."""
    bytes_f32 = float(c["model_bytes_float32"])
    bytes_int8 = float(q.attrs["model_bytes_int8"])
    flops, pbytes = float(d["prediction_flops"]), float(d["prediction_bytes"])
    out = {k: v for k, v in row.items() if not k.startswith("sweep_") or k == "sweep_index"}
    out.update(variant=row["variant"] + "+int8", int8=True, acc=float(q.attrs["accuracy_int8_mean"]),
               forgetting=np.nan, stored_bytes=bytes_int8,
               prediction_j=flops * float(d["joules_per_flop"]) + (pbytes - bytes_f32 + bytes_int8) * float(d["joules_per_byte"]))
    return out


#: Plugin groups (suffixes of `plugins/k_<name>`) that make a results file a compression study.
TECHNIQUE_PLUGINS = ("_pruning", "_low_rank", "_early_exit", "_distillation", "_qat")


def is_study(path) -> bool:
    """Whether `path` holds a compression study `continualkit report` should draw the Pareto
    figure for: at least two completed runs with costs, one of them compressed (a pruning,
    low-rank, early-exit, distillation or QAT plugin group). An int8 evaluation alone does not
    make one (scheduled on-device runs evaluate in int8 too: device_schedules.json)."""
    with h5py.File(path, "r") as f:
        if "runs" not in f:
            return False
        costed, compressed = 0, False
        for g in f["runs"].values():
            if _s(g.attrs.get("status", "completed")) != "completed" or "costs" not in g or "metrics" not in g:
                continue
            costed += 1
            if "plugins" in g and any(k.endswith(TECHNIQUE_PLUGINS) for k in g["plugins"]):
                compressed = True
        return costed >= 2 and compressed


def load_points(path) -> pd.DataFrame:
    """One row per completed run of the file `path` (or of each file of a list, in order): scenario,
    variant (the technique: `technique`), run_variant (as named in the file), seed, acc, forgetting,
    training_j, peak_memory_bytes, parameters, stored_bytes, prediction_j, int8, and for early-exit
    runs `sweep_acc` / `sweep_j` / `sweep_tau` (arrays over τ); plus one `TECHNIQUE+int8` row per
    run evaluated in int8 (module docstring)."""
    if not isinstance(path, (str, os.PathLike)):
        parts = [load_points(p) for p in path]
        parts = [p for p in parts if len(p)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    rows = []
    with h5py.File(path, "r") as f:
        for rid, g in f["runs"].items():
            if _s(g.attrs.get("status", "completed")) != "completed" or "metrics" not in g or "costs" not in g:
                continue
            config = json.loads(_s(g.attrs.get("config_json", "{}")))
            c = g["costs"].attrs
            run_variant = _variant(g, config)
            row = dict(run_id=rid, scenario=_scenario_label(config), variant=technique(run_variant),
                       run_variant=run_variant, int8=False,
                       seed=config.get("seed", np.nan), sweep_index=int(g.attrs.get("sweep_index", 0)),
                       acc=float(g["metrics"].attrs["acc"]), forgetting=float(g["metrics"].attrs["forgetting"]),
                       training_j=float(c["training_energy_j"]), peak_memory_bytes=float(c["peak_memory_bytes"]),
                       parameters=float(c["total_parameters"]), prediction_j=float(c["prediction_energy_j"]))
            plugins = g["plugins"] if "plugins" in g else {}
            for k in plugins:
                p = plugins[k]
                if k.endswith("_pruning") and "nonzero_parameters" in p:
                    row["parameters"] = float(p["nonzero_parameters"][-1])
                if k.endswith("_low_rank") and "model_parameters" in p:
                    # what the exported model stores: the factors, not the zeroed dense weights
                    row["parameters"] = float(p["model_parameters"][-1])
                if k.endswith("_early_exit") and "joules_per_prediction" in p:
                    taus = p["thresholds"][:]
                    joules = p["joules_per_prediction"][:]
                    tau = float(p.attrs["threshold"])
                    row["parameters"] += float(p.attrs["exit_head_parameters"])
                    # the τ-sweep records are the study's measurement, not the deployed cascade's memory
                    row["peak_memory_bytes"] -= float(p.attrs.get("sweep_record_bytes", 0))
                    i = int(np.argmin(np.abs(taus - tau)))
                    if abs(taus[i] - tau) < 1e-12:
                        row["prediction_j"] = float(joules[i])
                    row.update(sweep_tau=taus, sweep_j=joules, sweep_acc=p["acc"][:] if "acc" in p else None,
                               sweep_forgetting=p["forgetting"][:] if "forgetting" in p else None,
                               sweep_exit=p["final_exit_rate"][:], sweep_flops=p["flops_per_prediction"][:])
            row["stored_bytes"] = 4.0 * row["parameters"]
            rows.append(row)
            if "device" in g and "quantization" in g["device"]:
                rows.append(_int8_row(row, g["device"]["quantization"], c, g["device"].attrs))
    df = pd.DataFrame(rows)
    if len(df):
        df = df.sort_values("sweep_index", kind="stable").reset_index(drop=True)
        df["file"] = str(path)
    return df


def summarise(points: pd.DataFrame) -> pd.DataFrame:
    """Mean (and std) over seeds per scenario and variant, in the file's order."""
    cols = ["acc", "forgetting", "training_j", "peak_memory_bytes", "parameters", "stored_bytes", "prediction_j"]
    pts = points.copy()
    if "int8" not in pts:
        pts["int8"] = False
    if "stored_bytes" not in pts:
        pts["stored_bytes"] = 4.0 * pts["parameters"]
    pts["int8"] = pts["int8"].fillna(False).astype(bool)
    g = pts.groupby(["scenario", "variant"], sort=False)
    mean = g[cols].mean()
    std = g[cols].std(ddof=1).add_suffix("_std")
    out = pd.concat([mean, std, g.size().rename("n"), g["int8"].any()], axis=1).reset_index()
    return out


def markdown_table(points: pd.DataFrame) -> str:
    """The study's table: per scenario and variant, mean ± std over seeds; `*` marks points on the
    Pareto front of ACC against training energy."""
    s = summarise(points)
    lines = ["| scenario | variant | runs | ACC % | forgetting pts | training mJ | peak memory B | parameters | model B | µJ / prediction |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for scen, part in s.groupby("scenario", sort=False):
        front = set(part.index[pareto_front(part["training_j"].to_numpy(), part["acc"].to_numpy())])
        for i, r in part.iterrows():
            def ms(c, k=1.0, fmt="{:.2f}"):
                sd = r[c + "_std"]
                if not np.isfinite(r[c]):
                    return "—"
                return (fmt + " ± " + fmt).format(r[c] * k, 0.0 if not np.isfinite(sd) else sd * k)
            star = " *" if i in front else ""
            lines.append(f"| {scen} | {r['variant']}{star} | {int(r['n'])} | {ms('acc', 100)} | {ms('forgetting', 100)} | "
                         f"{ms('training_j', 1e3, '{:.3f}')} | {r['peak_memory_bytes']:.0f} | {r['parameters']:.0f} | "
                         f"{r['stored_bytes']:.0f} | "
                         f"{r['prediction_j'] * 1e6:.4f} |")
    return "\n".join(lines)


def sweep_table(points: pd.DataFrame) -> str:
    """Early-exit runs' threshold sweeps: per scenario, variant and τ, the cascade's ACC and
    forgetting (mean ± std over seeds), exit rate, FLOPs and nJ per prediction (means)."""
    if "sweep_tau" not in points:
        return ""
    ee = points[points["sweep_tau"].notna()]
    lines = ["| scenario | variant | τ | ACC % | forgetting pts | exit rate % | FLOPs / prediction | nJ / prediction |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (scen, variant), g in ee.groupby(["scenario", "variant"], sort=False):
        taus = g["sweep_tau"].iloc[0]
        def stack(col, k=1.0):
            return np.stack(list(g[col])) * k
        acc, forg = stack("sweep_acc", 100), stack("sweep_forgetting", 100)
        ex, fl, j = stack("sweep_exit", 100), stack("sweep_flops"), stack("sweep_j", 1e9)
        sd = (lambda a, i: a[:, i].std(ddof=1)) if len(g) > 1 else (lambda a, i: 0.0)
        for i, t in enumerate(taus):
            lines.append(f"| {scen} | {variant} | {t:g} | {acc[:, i].mean():.2f} ± {sd(acc, i):.2f} | "
                         f"{forg[:, i].mean():.2f} ± {sd(forg, i):.2f} | {ex[:, i].mean():.1f} | {fl[:, i].mean():.0f} | "
                         f"{j[:, i].mean():.1f} |")
    return "\n".join(lines)


def clusters(px, py, dx=9.0, dy=9.0) -> list[list[int]]:
    """Groups of points (display coordinates) closer than `dx` × `dy` to another point of the group
    (single linkage), in order of their first member: points whose number labels would overlap —
    typically variants sharing one cost (every non-exit variant's energy per prediction)."""
    n = len(px)
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i in range(n):
        for j in range(i + 1, n):
            if abs(px[i] - px[j]) < dx and abs(py[i] - py[j]) < dy:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _label_points(ax, xs, ys, numbers, extra=(), sizes=None):
    """Number labels that do not overlap: points too close to label apart share one label
    ("2,5,9", sorted) at their group's topmost point; these and the `extra` (x, y, text) labels
    (the τ sweep's, drawn green) are then placed together, clear of each other and of the
    markers (`figures._place_labels`; `sizes`: the markers' areas in points²)."""
    if not len(xs) and not len(extra):
        return
    ax.figure.canvas.draw()
    pts = ax.transData.transform(np.column_stack([xs, ys]))
    lx, ly, text = [], [], []
    for grp in clusters(pts[:, 0], pts[:, 1]):
        top = max(grp, key=lambda i: ys[i])
        lx.append(xs[top])
        ly.append(ys[top])
        text.append(",".join(str(n) for n in sorted(numbers[i] for i in grp)))
    for x, y, t in extra:
        lx.append(x)
        ly.append(y)
        text.append(t)
    markers = list(zip(xs, ys, sizes)) if sizes is not None else None
    texts, _ = _place_labels(ax, np.array(lx), np.array(ly), text, fontsize=6.5, markers=markers)
    for t in texts:
        if t.get_text().startswith("τ="):
            t.set_color(OKABE_ITO[2])
            t.set_fontsize(5.5)


def _size(forgetting_pts, scale):
    return 12 + scale * np.clip(np.nan_to_num(forgetting_pts), 0, None)


def figure(path, points: pd.DataFrame | None = None):
    """The Pareto figure: one row per scenario, one column per cost (`PANELS`)."""
    pts = load_points(path) if points is None else points
    if pts.empty:
        raise ValueError(f"{path}: no completed runs")
    s = summarise(pts)
    scenarios = list(dict.fromkeys(s["scenario"]))
    variants = list(dict.fromkeys(s["variant"]))
    number = {v: i + 1 for i, v in enumerate(variants)}
    fmax = max(1.0, float(np.nanmax(s["forgetting"].to_numpy() * 100)))
    scale = 160 / fmax
    fig, axes = plt.subplots(len(scenarios), len(PANELS), figsize=(2.85 * len(PANELS) + 1.9, 3.2 * len(scenarios)),
                             squeeze=False)
    labelled = []
    for r, scen in enumerate(scenarios):
        part = s[s["scenario"] == scen].reset_index(drop=True)
        y = part["acc"].to_numpy() * 100
        for c, (col, label, unit) in enumerate(PANELS):
            ax = axes[r][c]
            x_raw = part[col].to_numpy(dtype=float)
            k, u = unit_scale(x_raw, unit) if unit else (1.0, "")
            x = x_raw * k
            ok = np.isfinite(x) & np.isfinite(y)
            idx = np.flatnonzero(ok)
            front = idx[pareto_front(x[ok], y[ok])] if ok.any() else np.array([], int)
            on = np.zeros(len(x), bool)
            on[front] = True
            sizes = _size(part["forgetting"].to_numpy() * 100, scale)
            int8 = part["int8"].to_numpy(dtype=bool)
            for mask, marker in ((~int8, "o"), (int8, "D")):
                off, fr = ok & ~on & mask, on & mask
                ax.scatter(x[off], y[off], s=sizes[off], marker=marker, facecolors="white", edgecolors=OKABE_ITO[0],
                           linewidths=0.9, zorder=3)
                ax.scatter(x[fr], y[fr], s=sizes[fr], marker=marker, color=OKABE_ITO[1], edgecolors="black",
                           linewidths=0.4, zorder=4)
            if len(front) > 1:
                ax.step(x[front], y[front], where="post", color=OKABE_ITO[1], lw=1, alpha=0.7, zorder=2)
            xs_all, ys_all = [x[ok]], [y[ok]]
            tau_labels = []
            if col == "prediction_j" and "sweep_j" in pts:
                ee = pts[(pts["scenario"] == scen) & pts["sweep_j"].notna()]
                for v, grp in ee.groupby("variant", sort=False):
                    acc = np.nanmean(np.stack([a for a in grp["sweep_acc"] if a is not None]), axis=0) * 100
                    j = np.nanmean(np.stack(list(grp["sweep_j"])), axis=0) * k
                    taus = grp["sweep_tau"].iloc[0]
                    xs_all.append(j[np.isfinite(j)])
                    ys_all.append(acc[np.isfinite(acc)])
                    ax.plot(j, acc, "-", color=OKABE_ITO[2], lw=0.9, marker=".", ms=3, zorder=2,
                            label=f"{v}: τ sweep")
                    for t, xj, ya in zip(taus, j, acc):
                        # the ends; the run's own τ is the variant's numbered point
                        if (t == 0.0 or t > 1) and np.isfinite(xj) and np.isfinite(ya):
                            tau_labels.append((xj, ya, f"τ={t:g}"))
            xa = np.concatenate(xs_all)
            xr = (xa.max() - xa.min()) or abs(xa.max()) or 1
            ax.set_xlim(xa.min() - 0.12 * xr, xa.max() + 0.18 * xr)
            ax.xaxis.set_major_locator(MaxNLocator(4))
            ax.ticklabel_format(axis="x", style="plain", useOffset=False)
            ya = np.concatenate(ys_all)
            pad = max(1.0, (ya.max() - ya.min()) * 0.15)
            ax.set_ylim(ya.min() - pad, ya.max() + pad)
            ax.set_xlabel(f"{label} ({u})" if u else label, fontsize=7.5)
            ax.tick_params(labelsize=6.5)
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel(f"{scen}\nACC (%)", fontsize=8)
            labelled.append((ax, x[idx], y[idx], [number[v] for v in part.loc[idx, "variant"]], tau_labels, sizes[idx]))
    fig.tight_layout(rect=(0, 0.02, 0.86, 0.97))
    for ax, xs, ys, numbers, extra, area in labelled:      # after the layout: placement works in display space
        _label_points(ax, xs, ys, numbers, extra, area)
    key = "\n".join(f"{number[v]:>2}  {v}" for v in variants)
    fig.text(0.865, 0.55, "variants\n" + key, fontsize=7, va="center", ha="left", family="monospace")
    for fp in (10, 25) if fmax >= 25 else (fmax / 2, fmax):
        axes[0][-1].scatter([], [], s=_size(fp, scale), facecolors="white", edgecolors="0.3", label=f"forgetting {fp:.0f} pts")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, fontsize=6.5, loc="lower left", bbox_to_anchor=(0.865, 0.08))
    fig.suptitle("Compression for on-device personalisation: ACC against what the phone pays", fontsize=10)
    _footnote(fig, NOTE, y=0.0)
    return fig


def draw(path, out_dir: str, formats=("png", "pdf")) -> list[str]:
    """Writes `compression_pareto.*` into `out_dir` and returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    return save(figure(path), os.path.join(out_dir, "compression_pareto"), formats)
