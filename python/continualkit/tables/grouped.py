"""Grouped metrics (mean ± std over seeds, 95 % CI, n) and paired comparisons against a
baseline: the tables every results file gets."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..stats import aggregate, holm, paired


#: Metrics shown by default, and how they are printed: (header, scale, sign).
DEFAULT_METRICS = ("acc", "bwt", "forgetting")
FORMAT = {
    "acc": ("ACC %", 100, False), "bwt": ("BWT pts", 100, True), "fwt": ("FWT pts", 100, True),
    "forgetting": ("forgetting pts", 100, False), "learning_accuracy": ("learning acc %", 100, False),
    "balanced_acc": ("bal. acc %", 100, False), "macro_f1": ("macro-F1 %", 100, False),
    "auroc": ("AUROC %", 100, False), "auprc": ("AUPRC %", 100, False),
    "forgetting_last": ("forgetting (last) pts", 100, False), "bwt_all_pairs": ("BWT all pairs pts", 100, True),
    "energy_j": ("energy mJ", 1000, False), "peak_memory_bytes": ("peak memory KiB", 1 / 1024, False),
    "train_seconds": ("train s", 1, False), "prequential_acc": ("prequential ACC %", 100, False),
    "final_acc": ("final ACC %", 100, False), "acc_int8": ("int8 ACC %", 100, False),
    "min_acc": ("min-ACC %", 100, False), "wc_acc": ("WC-ACC %", 100, False),
}


def _steps(df: pd.DataFrame) -> dict:
    """Mean optimizer steps per experience of each configuration (the `steps_per_experience`
    summary column, issue 24), when the file records them; {} otherwise. Tables show it so that
    no comparison hides its compute budget."""
    if "steps_per_experience" not in df.columns or not df["steps_per_experience"].notna().any():
        return {}
    ok = df[df["status"] == "completed"] if "status" in df.columns else df
    return {c: float(g["steps_per_experience"].mean()) for c, g in ok.groupby("configuration", sort=False)}


def _pm(st, scale=100, sign=False, digits=2):
    if st["n"] == 0 or not np.isfinite(st["mean"]):
        return "—"
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    m = f.format(st["mean"] * scale)
    return m if not np.isfinite(st["std"]) else f"{m} ± {st['std'] * scale:.{digits}f}"


def _ci(st, scale=100, digits=1):
    if not np.isfinite(st.get("ci_half", math.nan)):
        return "—"
    return f"[{st['ci_low'] * scale:.{digits}f}, {st['ci_high'] * scale:.{digits}f}]"


def _task_aware(df: pd.DataFrame) -> dict:
    """Configurations whose runs used task identity at test time (`uses_task_labels`: a
    multi-head model or task-id routing), when the file has any; {} otherwise."""
    if "uses_task_labels" not in df.columns or not (df["uses_task_labels"] == 1).any():
        return {}
    return {c: bool((g["uses_task_labels"] == 1).any()) for c, g in df.groupby("configuration", sort=False)}


def grouped(df: pd.DataFrame, metrics=DEFAULT_METRICS, ci=True, numeric=False) -> pd.DataFrame:
    """One row per configuration (sweep order): n (completed/runs when some did not complete),
    each metric as mean ± std over seeds, and the 95 % CI of the first metric. When some runs
    used task labels at test time, a "task labels" column marks them (yes/no), so task-aware rows
    are never read as comparable with task-free ones."""
    metrics = [m for m in metrics if m in df.columns]
    aware = _task_aware(df)
    steps = _steps(df)
    agg = aggregate(df, metrics)
    if numeric:
        flat = agg.copy()
        flat.columns = [f"{m}_{s}" for m, s in flat.columns]
        flat.insert(0, "runs", [agg.attrs["runs"][c] for c in agg.index])
        if aware:
            flat.insert(1, "uses_task_labels", [int(aware.get(c, False)) for c in agg.index])
        if steps:
            flat.insert(1, "steps_per_experience", [steps.get(c, math.nan) for c in agg.index])
        return flat.reset_index()
    rows = []
    for conf in agg.index:
        runs, done = agg.attrs["runs"][conf], agg.attrs["completed"][conf]
        r = {"configuration": conf, "n": str(runs) if runs == done else f"{done}/{runs}"}
        if steps:
            r["steps/exp"] = f"{steps[conf]:.0f}" if np.isfinite(steps.get(conf, math.nan)) else "—"
        if aware:
            r["task labels"] = "yes" if aware.get(conf) else "no"
        for k, m in enumerate(metrics):
            head, scale, sign = FORMAT.get(m, (m, 1, False))
            st = {s: agg.loc[conf, (m, s)] for s in ("n", "mean", "std", "ci_low", "ci_high", "ci_half")}
            r[f"{head} (mean ± std)"] = _pm(st, scale, sign)
            if ci and k == 0:
                r[f"{head} 95% CI"] = _ci(st, scale)
        rows.append(r)
    return pd.DataFrame(rows)


def paired_table(df: pd.DataFrame, baseline: str, metrics=DEFAULT_METRICS, numeric=False) -> pd.DataFrame:
    """Every configuration minus `baseline`, matched on seed, per metric: mean difference with its
    95 % CI, paired t-test p, Wilcoxon p (n ≥ 6), each also Holm–Bonferroni corrected over the
    whole table (all configurations and metrics are one family; `stats.holm`), and seeds won
    (higher value; for forgetting a win is lower)."""
    frames = [paired(df, baseline, m) for m in metrics if m in df.columns]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not out.empty:
        # The table is one family of tests (every configuration × metric): Holm–Bonferroni over
        # all of its p-values, per test, the uncorrected p kept beside the corrected one.
        out["p_ttest_holm"] = holm(out["p_ttest"])
        out["p_wilcoxon_holm"] = holm(out["p_wilcoxon"])
    if numeric or out.empty:
        return out
    rows = []
    for r in out.to_dict("records"):
        head, scale, _ = FORMAT.get(r["metric"], (r["metric"], 1, False))
        lower_better = r["metric"].startswith("forgetting")
        wins = r["n"] - r["wins"] - r["ties"] if lower_better else r["wins"]
        rows.append({"configuration": r["configuration"], "metric": head.replace(" %", "").replace(" pts", ""),
                     f"Δ vs {baseline} (pts)": "—" if r["n"] == 0 else f"{r['diff_mean'] * scale:+.2f}",
                     "95% CI": _ci({"ci_half": r["ci_high"] - r["diff_mean"], "ci_low": r["ci_low"],
                                    "ci_high": r["ci_high"]}, scale, 2),
                     "p (paired t)": _p(r["p_ttest"]), "p Holm (t)": _p(r["p_ttest_holm"]),
                     "p (Wilcoxon)": _p(r["p_wilcoxon"]), "p Holm (W)": _p(r["p_wilcoxon_holm"]),
                     "seeds better": f"{wins}/{r['n']}"})
    return pd.DataFrame(rows)


def _p(p):
    return "—" if not np.isfinite(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")
