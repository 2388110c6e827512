"""Tables beside a paper's and at equal compute: Hsu et al. (2018) Table 2 with strict verdicts,
and accuracy at equal steps beside accuracy at equal training FLOPs."""
from __future__ import annotations

import json
import math
from importlib import resources

import h5py
import numpy as np
import pandas as pd

from ..io import load_summary
from ..stats import aggregate, seed_stats
from .grouped import _pm


def paper_table() -> dict:
    """Hsu et al. (2018) Table 2 as shipped with the package (data/hsu2018_table2.json)."""
    return json.loads(resources.files("continualkit").joinpath("data/hsu2018_table2.json").read_text("utf-8"))


def _budgets(df: pd.DataFrame) -> list:
    """The step budgets of a file (rounded mean steps per experience of each run, largest first),
    or [None] when the file does not record steps (files written before issue 24)."""
    if "steps_per_experience" not in df.columns or not df["steps_per_experience"].notna().any():
        return [None]
    return sorted({int(round(v)) for v in df["steps_per_experience"].dropna()}, reverse=True)


def hsu_table(path, df=None, numeric=False, verdicts=False) -> pd.DataFrame:
    """Experiments/hsu_table.json beside the paper: per method and setting (task-, domain-,
    class-incremental) ACC % mean ± std over seeds here and in Hsu et al. (2018) Table 2.
    `verdicts=True` adds, per setting, the strict verdict of continualkit.verdicts (the paper's
    mean inside our 95 % CI, or a Welch test against its mean ± std over 10 runs not rejecting).

    When the file records steps per experience (issue 24), a first column "steps/exp" gives each
    row's budget and a file with several budgets (the sweep over `training.steps_per_experience`)
    gets one block of rows per budget, largest first. Configurations are matched by variant."""
    df = df if df is not None else load_summary(path)
    paper = paper_table()
    rows = []
    for budget in _budgets(df):
        part = df
        if budget is not None:
            part = df[df["steps_per_experience"].round() == budget]
            if "status" in df.columns:   # a run that did not complete has no steps: keep it in its variant's row
                failed = df[(df["status"] != "completed") & df["steps_per_experience"].isna()]
                part = pd.concat([part, failed])
        part = part.copy()
        if "variant" in part.columns:
            part["configuration"] = part["variant"]
        agg = aggregate(part, ("acc",))
        for row in paper["rows"]:
            r = {} if budget is None else {"steps/exp": budget}
            r["method"] = row["method"]
            for setting in paper["settings"]:
                conf = f"{row['variant']}_{setting}"
                head = {"task": "task-IL", "domain": "domain-IL", "class": "class-IL"}[setting]
                if conf in agg.index:
                    st = {s: agg.loc[conf, ("acc", s)] for s in ("n", "mean", "std")}
                else:
                    st = {"n": 0, "mean": math.nan, "std": math.nan}
                p = row.get(setting)
                if numeric:
                    r.update({f"{setting}_mean": st["mean"] * 100, f"{setting}_std": st["std"] * 100, f"{setting}_n": st["n"],
                              f"{setting}_paper_mean": p[0] if p else math.nan, f"{setting}_paper_std": p[1] if p else math.nan})
                else:
                    r[f"{head} (here)"] = _pm(st) if st["n"] else "—"
                    r[f"{head} (Hsu)"] = f"{p[0]:.2f} ± {p[1]:.2f}" if p else "—"
                if verdicts:
                    from ..verdicts import compare, seed_values
                    ok = part[part["variant"] == conf] if "variant" in part.columns else part.iloc[:0]
                    r[f"{setting}_verdict" if numeric else f"{head} verdict"] = \
                        compare(seed_values(ok, conf), p[0], p[1], 10)["verdict"] if p and st["n"] else "—"
            rows.append(r)
    return pd.DataFrame(rows)


def equal_compute_table(steps_path, flops_path, steps_df=None, flops_df=None, numeric=False) -> pd.DataFrame:
    """Accuracy at equal steps beside accuracy at equal training FLOPs (Prabhu et al. 2023,
    "Computationally budgeted continual learning"): per variant present in both files, ACC with
    the step budget of `steps_path` (its largest when it sweeps several), the training GFLOPs per
    experience that cost (mean over experiences and seeds, `training_flops` / T), and ACC and steps
    per experience with the FLOPs budget of `flops_path` (`training.flops_per_experience`), where
    every method gets the same FLOPs. Variants are matched by name."""
    a = steps_df if steps_df is not None else load_summary(steps_path)
    b = flops_df if flops_df is not None else load_summary(flops_path)
    budgets = _budgets(a)
    if budgets[0] is not None:
        a = a[a["steps_per_experience"].round() == budgets[0]]
    rows = []
    for v in dict.fromkeys(b["variant"]):
        ra, rb = a[(a["variant"] == v) & (a["status"] == "completed")], b[(b["variant"] == v) & (b["status"] == "completed")]
        if ra.empty or rb.empty:
            continue
        T = {}
        with h5py.File(steps_path, "r") as f:
            T["a"] = np.mean([f["runs"][rid]["accuracy_matrix"].shape[0] for rid in ra["run_id"]])
        with h5py.File(flops_path, "r") as f:
            T["b"] = np.mean([f["runs"][rid]["accuracy_matrix"].shape[0] for rid in rb["run_id"]])
        sa, sb = seed_stats(ra["acc"].to_numpy(float)), seed_stats(rb["acc"].to_numpy(float))
        ga = float(ra["training_flops"].mean()) / T["a"] / 1e9
        gb = float(rb["training_flops"].mean()) / T["b"] / 1e9
        if numeric:
            rows.append({"variant": v, "steps_per_experience": float(ra["steps_per_experience"].mean()),
                         "acc_equal_steps": sa["mean"], "acc_equal_steps_std": sa["std"], "gflops_per_experience": ga,
                         "equal_compute_steps_per_experience": float(rb["steps_per_experience"].mean()),
                         "acc_equal_compute": sb["mean"], "acc_equal_compute_std": sb["std"],
                         "equal_compute_gflops_per_experience": gb, "n": min(sa["n"], sb["n"])})
        else:
            rows.append({"variant": v, "steps/exp": f"{ra['steps_per_experience'].mean():.0f}",
                         "ACC % (equal steps)": _pm(sa), "GFLOPs/exp": f"{ga:.2f}",
                         "steps/exp (equal FLOPs)": f"{rb['steps_per_experience'].mean():.0f}",
                         "ACC % (equal FLOPs)": _pm(sb), "GFLOPs/exp (equal FLOPs)": f"{gb:.2f}",
                         "n": f"{sa['n']}/{sb['n']}"})
    return pd.DataFrame(rows)
