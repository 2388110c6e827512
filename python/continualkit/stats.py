"""Statistics over seeds, with the definitions of the Swift side (Sources/ContinualMetrics/
SeedStatistics.swift, what `continual inspect` prints): NaN values skipped; mean; sample standard
deviation (ddof = 1, NaN for n < 2); two-sided 95 % interval mean ± t(0.975, n − 1)·std/√n
(Student's t, NaN for n < 2). Paired comparisons against a baseline configuration match runs on
the seed.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as _st

#: Metrics summarised by default (the same list as `SweepReport.metrics`).
METRICS = ("acc", "bwt", "fwt", "forgetting", "learning_accuracy", "balanced_acc", "macro_f1", "auroc", "auprc")


def t975(df: int) -> float:
    """t(0.975, df), the two-sided 95 % critical value; NaN for df < 1."""
    return float(_st.t.ppf(0.975, df)) if df >= 1 else math.nan


def seed_stats(values) -> dict:
    """{n, mean, std, ci_half, ci_low, ci_high} of `values` (NaN skipped), as SeedStatistics."""
    x = np.asarray(list(values), dtype=float)
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return dict(n=0, mean=math.nan, std=math.nan, ci_half=math.nan, ci_low=math.nan, ci_high=math.nan)
    mean = float(x.mean())
    if n < 2:
        return dict(n=1, mean=mean, std=math.nan, ci_half=math.nan, ci_low=math.nan, ci_high=math.nan)
    std = float(np.sqrt(((x - mean) ** 2).sum() / (n - 1)))
    h = t975(n - 1) * std / math.sqrt(n)
    return dict(n=n, mean=mean, std=std, ci_half=h, ci_low=mean - h, ci_high=mean + h)


def configurations(df: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration in sweep order: configuration name, runs, completed, first
    sweep index, and the grouping values (variant + swept values except the seed)."""
    by = [c for c in df.attrs.get("group_by", ["configuration"]) if c in df.columns]
    rows = []
    for name, g in df.groupby("configuration", sort=False):
        r = {"configuration": name, "runs": len(g),
             "completed": int((g["status"] == "completed").sum()) if "status" in g else len(g),
             "first_sweep_index": int(g["sweep_index"].min()) if "sweep_index" in g else 0}
        for c in by:
            r[c] = g[c].iloc[0]
        rows.append(r)
    out = pd.DataFrame(rows)
    return out.sort_values("first_sweep_index", kind="stable").reset_index(drop=True) if len(out) else out


def aggregate(df: pd.DataFrame, metrics=METRICS, completed_only: bool = True) -> pd.DataFrame:
    """Per configuration (rows, sweep order) and metric: n, mean, std, ci_half, ci_low, ci_high
    (columns a MultiIndex (metric, statistic)); the same numbers `continual inspect` prints.
    Extra columns: `runs`, `completed`, and the swept values of each configuration."""
    metrics = [m for m in metrics if m in df.columns]
    conf = configurations(df)
    data = {}
    for _, c in conf.iterrows():
        g = df[df["configuration"] == c["configuration"]]
        if completed_only and "status" in g:
            g = g[g["status"] == "completed"]
        data[c["configuration"]] = {(m, k): v for m in metrics for k, v in seed_stats(g[m]).items()}
    out = pd.DataFrame.from_dict(data, orient="index")
    if len(out):
        out.columns = pd.MultiIndex.from_tuples(out.columns, names=["metric", "stat"])
    out.index.name = "configuration"
    out.attrs["runs"] = dict(zip(conf["configuration"], conf["runs"])) if len(conf) else {}
    out.attrs["completed"] = dict(zip(conf["configuration"], conf["completed"])) if len(conf) else {}
    return out


def aggregate_long(df: pd.DataFrame, metrics=METRICS) -> pd.DataFrame:
    """`aggregate` as a tidy table: configuration, metric, n, mean, std, ci_half, ci_low, ci_high."""
    agg = aggregate(df, metrics)
    if agg.empty:
        return pd.DataFrame(columns=["configuration", "metric", "n", "mean", "std", "ci_half", "ci_low", "ci_high"])
    return agg.stack(level="metric", future_stack=True).reset_index()[
        ["configuration", "metric", "n", "mean", "std", "ci_half", "ci_low", "ci_high"]]


def holm(pvalues) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (Holm 1979), the step-down correction for a family of m
    tests that controls the family-wise error rate without assuming independence: sort the p
    ascending, p_(i) → min(1, max over k ≤ i of (m − k + 1)·p_(k)). NaN entries are not tests:
    they stay NaN and do not count in m. Rejecting where the adjusted p ≤ α is Holm's procedure at
    level α (the values of statsmodels' `multipletests(p, method="holm")`)."""
    p = np.asarray(list(pvalues), dtype=float)
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = len(idx)
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def paired(df: pd.DataFrame, baseline: str, metric: str = "acc", configuration: str | None = None) -> pd.DataFrame:
    """Each configuration (or only `configuration`) against `baseline`, matched on the seed
    (same seed = same data and initialisation): n pairs, mean difference (method − baseline) with
    its 95 % Student-t interval and std, paired t-test p-value, Wilcoxon signed-rank p-value
    (exact, when n ≥ 6 and not all differences are 0; NaN otherwise — with 5 pairs its smallest
    two-sided p is 0.0625), and wins (seeds where the method is higher) of n."""
    ok = df[df["status"] == "completed"] if "status" in df else df
    if baseline not in set(ok["configuration"]):
        raise KeyError(f"baseline configuration {baseline!r} not in the file; have "
                       + ", ".join(dict.fromkeys(ok["configuration"])))
    base = ok[ok["configuration"] == baseline].groupby("seed")[metric].mean()
    rows = []
    targets = [configuration] if configuration else [c for c in dict.fromkeys(ok["configuration"]) if c != baseline]
    for conf in targets:
        m = ok[ok["configuration"] == conf].groupby("seed")[metric].mean()
        common = sorted(set(m.index) & set(base.index))
        a = np.array([m[s] for s in common], dtype=float)
        b = np.array([base[s] for s in common], dtype=float)
        keep = ~(np.isnan(a) | np.isnan(b))
        a, b = a[keep], b[keep]
        d = a - b
        s = seed_stats(d)
        p_t = p_w = math.nan
        if s["n"] >= 2 and np.any(d != d[0]):
            p_t = float(_st.ttest_rel(a, b).pvalue)
        elif s["n"] >= 2 and d[0] != 0:
            p_t = 0.0
        if s["n"] >= 6 and np.any(d != 0):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p_w = float(_st.wilcoxon(a, b).pvalue)
        rows.append(dict(configuration=conf, baseline=baseline, metric=metric, n=s["n"], diff_mean=s["mean"],
                         diff_std=s["std"], ci_low=s["ci_low"], ci_high=s["ci_high"], p_ttest=p_t,
                         p_wilcoxon=p_w, wins=int((d > 0).sum()), ties=int((d == 0).sum())))
    return pd.DataFrame(rows)
