"""The strict rule for comparing our numbers with a paper's (docs/mnist-tables.md, DESIGN.md
"Comparisons"), implemented once and used by the tables and the reproduction cards:

- **reproduced** when the published mean lies inside our 95 % confidence interval (Student t,
  n − 1 degrees of freedom, from our seeds), or — where the paper gives its std and n — a Welch
  t-test at α = 0.05 does not reject equal means;
- **not reproduced** otherwise, with the gap and our interval;
- **too few seeds** when we have fewer than 2.

An ordering between two methods (a paper says A > B) is checked with the same data: it **holds**
when our means are in the same order and a Welch test of our two samples rejects equality at 0.05,
**holds (not significant)** in the same order without that, **fails (not significant)** in the
other order without significance, and **fails** in the other order with it.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

from .stats import seed_stats

ALPHA = 0.05


def welch_p(mean_a, std_a, n_a, mean_b, std_b, n_b) -> float:
    """Two-sided p-value of Welch's t-test from summary statistics (NaN when undefined)."""
    if n_a < 2 or n_b < 2 or not all(map(math.isfinite, (mean_a, std_a, mean_b, std_b))):
        return math.nan
    if std_a == 0 and std_b == 0:
        return 1.0 if mean_a == mean_b else 0.0
    return float(_st.ttest_ind_from_stats(mean_a, std_a, n_a, mean_b, std_b, n_b, equal_var=False).pvalue)


def verdict(ours, paper_mean, paper_std=None, paper_n=None) -> tuple[str, str]:
    """(verdict, explanation) of our seed values `ours` against a published mean (and std, n)."""
    s = seed_stats(ours)
    if s["n"] < 2:
        return "too few seeds", f"n = {s['n']}"
    inside = s["ci_low"] <= paper_mean <= s["ci_high"]
    p = welch_p(s["mean"], s["std"], s["n"], paper_mean, paper_std, paper_n) if paper_std is not None and paper_n else math.nan
    why = f"ours {s['mean']:.2f} [{s['ci_low']:.2f}, {s['ci_high']:.2f}] (n = {s['n']}), paper {paper_mean:.2f}"
    if math.isfinite(p):
        why += f", Welch p = {p:.3g}"
    if inside or (math.isfinite(p) and p >= ALPHA):
        return "reproduced", why
    return "not reproduced", why + f"; gap {s['mean'] - paper_mean:+.2f}"


def ordering(higher, lower) -> tuple[str, float]:
    """Whether our seed values keep `higher` above `lower` (the paper's order): (verdict, p)."""
    a, b = seed_stats(higher), seed_stats(lower)
    p = welch_p(a["mean"], a["std"], a["n"], b["mean"], b["std"], b["n"])
    same = a["mean"] > b["mean"]
    significant = math.isfinite(p) and p < ALPHA
    if same:
        return ("holds" if significant else "holds (not significant)"), p
    return ("fails" if significant else "fails (not significant)"), p
